"""What an uncontended acquire+release pair costs, counted exactly (issue 46): commands on the
server, new connections, threads started in this process. A benchmark is noisy; a count is not,
so these fail the moment the uncontended path grows a round trip, a connection or a thread.

Each case warms up first (the first pair opens the connections, the subscriber and the keeper
thread, and reads the keep-alive interval), then counts over PAIRS pairs on a fresh server of
its own (nothing else runs commands on it).
"""

from __future__ import annotations

import threading
import time

import pytest
import redis

import rlock

PAIRS = 100

# Counted apart: ROLE is the replica count read for confirmation "auto", at most once a second
# (rlock._confirm.REPLICAS_TTL_S); PUBSUB NUMSUB is run inside the server by the module (its
# check that a NOTIFY connection is subscribed), no round trip; INFO is this test's own.
NOT_PER_PAIR = {"role", "pubsub|numsub", "info"}


def command_calls(admin) -> dict:
    return {name[len("cmdstat_"):]: stats["calls"] for name, stats in admin.info("commandstats").items()}


class ThreadStarts:
    """Counts every threading.Thread started in this process while it is on."""

    def __init__(self, monkeypatch):
        self.count = 0
        start = threading.Thread.start

        def counted(thread):
            self.count += 1
            start(thread)

        monkeypatch.setattr(threading.Thread, "start", counted)


LOCKS = {
    "watchdog": dict(),
    "lease": dict(timeout=10),
    "no-confirm": dict(confirm=False),
}


@pytest.mark.parametrize("kind", list(LOCKS))
def test_an_uncontended_pair_costs_two_commands_no_connection_no_thread(new_server, monkeypatch, kind):
    server = new_server()
    admin = server.client()
    client = redis.Redis(port=server.port)
    lock = rlock.Lock(client, "k", **LOCKS[kind])
    assert lock.acquire()  # warm-up: connections, subscriber, keeper, keep-alive interval
    lock.release()

    threads = ThreadStarts(monkeypatch)
    connections_before = admin.info("stats")["total_connections_received"]
    calls_before = command_calls(admin)
    started = time.monotonic()
    for _ in range(PAIRS):
        assert lock.acquire()
        lock.release()
    elapsed = time.monotonic() - started
    calls_after = command_calls(admin)
    connections = admin.info("stats")["total_connections_received"] - connections_before
    client.close()

    delta = {name: calls - calls_before.get(name, 0) for name, calls in calls_after.items()}
    delta = {name: calls for name, calls in delta.items() if calls}
    per_pair = {name: calls for name, calls in delta.items() if name not in NOT_PER_PAIR}
    assert per_pair == {"rlock.acquire": PAIRS, "rlock.release": PAIRS}, f"commands in {PAIRS} pairs: {delta}"
    # ROLE once a second at most (the first read may come at the start and one at the end).
    assert delta.get("role", 0) <= elapsed + 2, f"ROLE read {delta.get('role')} times in {elapsed:.1f} s"
    assert connections == 0, f"{PAIRS} pairs opened {connections} connections"
    assert threads.count == 0, f"{PAIRS} pairs started {threads.count} threads"
