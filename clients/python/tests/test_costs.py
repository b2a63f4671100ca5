"""What an uncontended acquire+release pair costs, counted exactly (issue 46): commands on the
server, new connections, threads started in this process, objects left in reference cycles. A benchmark is noisy; a count is not,
so these fail the moment the uncontended path grows a round trip, a connection or a thread.

Each case warms up first (the first pair opens the connections, the subscriber and the keeper
thread, and reads the keep-alive interval), then counts over PAIRS pairs on a fresh server of
its own (nothing else runs commands on it).
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time

import pytest
import redis
import redis.asyncio

import rlock
from rlock._dispatcher import Dispatcher
from rlock._holding import Binding, Holding
from rlock._notify import GRANTED, parse_message
from support import waiters, wait_until

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
            self.names.append(thread.name)
            start(thread)

        self.names = []

        monkeypatch.setattr(threading.Thread, "start", counted)


class CycleGarbage:
    """The holdings and bindings that what runs inside leaves in reference cycles, for the
    cyclic collector (`found`): reference counting should free all a pair made, since the
    collector's runs stop every thread of the process (a full one took 12 ms in a hot lock's)."""

    def __enter__(self):
        gc.collect()
        gc.disable()
        return self

    def __exit__(self, *exc_info):
        try:
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            # Only what a pair makes: a test before this one may drop a client of its own now.
            self.found = [found for found in gc.garbage if isinstance(found, (Holding, Binding))]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()


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
    with CycleGarbage() as garbage:
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
    assert threads.count == 0, f"{PAIRS} pairs started {threads.count} threads: {threads.names}"
    assert not garbage.found, f"{PAIRS} pairs left {len(garbage.found)} holdings and bindings in reference cycles"


class TaskStarts:
    """Counts the tasks created in the running loop while it is on (its task factory), by the
    name of their coroutine: rlock's own (`ours`), and redis-py's apart."""

    def __init__(self):
        self.ours: dict = {}
        self.theirs: dict = {}

    def __enter__(self):
        loop = asyncio.get_running_loop()
        self._loop, self._factory = loop, loop.get_task_factory()

        def counted(loop, coroutine, **kwargs):
            code = getattr(coroutine, "cr_code", None)
            counts = self.ours if code is not None and "/rlock/" in code.co_filename else self.theirs
            name = getattr(coroutine, "__qualname__", type(coroutine).__name__)
            counts[name] = counts.get(name, 0) + 1
            if self._factory is not None:
                return self._factory(loop, coroutine, **kwargs)
            return asyncio.Task(coroutine, loop=loop, **kwargs)

        loop.set_task_factory(counted)
        return self

    def __exit__(self, *exc_info):
        self._loop.set_task_factory(self._factory)


#: rlock's tasks per asyncio pair: the waiting acquire runs in a task of its own, so that a
#: cancelled caller never interrupts a call on the wire (rlock/asyncio/notified.py); over RESP3
#: its calls go on the subscriber, each sent from a task (rlock/asyncio/subscriber.py). No
#: keeper task: one per event loop keeps the watchdog connections (rlock/asyncio/keeper.py; it
#: was a task per watchdog acquire, "Keeper.run").
ASYNCIO_TASKS_PER_PAIR = {2: {"drive_async": 1}, 3: {"drive_async": 1, "Subscriber._send": 1}}


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("kind", list(LOCKS))
def test_an_uncontended_asyncio_pair_costs_two_commands_no_connection_no_keeper_task(new_server, kind, protocol):
    server = new_server()
    admin = server.client()

    async def run():
        client = redis.asyncio.Redis(port=server.port, protocol=protocol)
        lock = rlock.asyncio.Lock(client, "k", **LOCKS[kind])
        assert await lock.acquire()  # warm-up: connections, subscriber, keeper, keep-alive interval
        await lock.release()
        connections_before = admin.info("stats")["total_connections_received"]
        calls_before = command_calls(admin)
        started = time.monotonic()
        with TaskStarts() as tasks, CycleGarbage() as garbage:
            for _ in range(PAIRS):
                assert await lock.acquire()
                await lock.release()
        elapsed = time.monotonic() - started
        calls_after = command_calls(admin)
        connections = admin.info("stats")["total_connections_received"] - connections_before
        await client.aclose()
        return tasks.ours, elapsed, calls_before, calls_after, connections, garbage.found

    tasks, elapsed, calls_before, calls_after, connections, garbage = asyncio.run(run())
    assert not garbage, f"{PAIRS} pairs left {len(garbage)} holdings and bindings in reference cycles"
    delta = {name: calls - calls_before.get(name, 0) for name, calls in calls_after.items()}
    delta = {name: calls for name, calls in delta.items() if calls}
    # PING: a kept connection's keep-alive, with time (a third of watchdog-idle-ms).
    per_pair = {name: calls for name, calls in delta.items() if name not in NOT_PER_PAIR | {"ping"}}
    assert per_pair == {"rlock.acquire": PAIRS, "rlock.release": PAIRS}, f"commands in {PAIRS} pairs: {delta}"
    assert delta.get("role", 0) <= elapsed + 2, f"ROLE read {delta.get('role')} times in {elapsed:.1f} s"
    assert connections == 0, f"{PAIRS} pairs opened {connections} connections"
    # A timed call (ROLE, PING) over RESP3 is sent from a task of its own too.
    timed = delta.get("role", 0) + delta.get("ping", 0)
    expected = {name: per * PAIRS for name, per in ASYNCIO_TASKS_PER_PAIR[protocol].items()}
    assert set(tasks) == set(expected), f"{PAIRS} pairs started these tasks of rlock's: {tasks}"
    for name, count in expected.items():
        assert count <= tasks[name] <= count + timed, f"{PAIRS} pairs started these tasks of rlock's: {tasks}"


HANDOFFS = 60


@pytest.mark.parametrize("clients", ["one client", "a client a thread"])
def test_a_hot_lock_grant_is_read_by_the_thread_it_wakes_not_handed_over(new_server, monkeypatch, clients):
    """Issue 46: a handoff of a hot lock was five wake-ups in a row under one GIL, one of them
    the subscriber's reader thread waking the waiting thread whose grant it read. The waiting
    threads now take turns reading the subscriber, the one asleep longest (next in line) in
    its turn: it reads its own grant. Three threads pass one lock round; each holds it until
    the other two are queued on the server (RLOCK.INFO), so every grant is told by message.
    Counted: the grants delivered on a thread other than the one that waited for them. Before,
    every one (the reader thread read them all); now at most a fifth (the turn goes to the
    reader thread when no waiter is asleep, and one asleep late may be passed over). With one
    client the three threads share its subscriber; with a client each (as `make bench`'s hot
    lock), each has its own, which nobody reads between its thread's waits."""
    server = new_server()
    shared = redis.Redis(port=server.port) if clients == "one client" else None
    made = [shared or redis.Redis(port=server.port) for _ in range(3)]
    admins = [server.client() for _ in range(3)]
    owners = {}  # owner id -> the thread that waits as that owner
    read_by = []  # (the thread that delivered it, the message's owner) per grant
    deliver = Dispatcher.deliver

    def spied(dispatcher, data):
        message = parse_message(data)
        if message.event == GRANTED:
            read_by.append((threading.get_ident(), message.owner))
        deliver(dispatcher, data)

    monkeypatch.setattr(Dispatcher, "deliver", spied)
    held = [0, 0, 0]
    errors = []

    def contend(i):
        lock = rlock.Lock(made[i], "hot", blocking_timeout=30)
        owners[lock._owner()] = threading.get_ident()
        try:
            while sum(held) < HANDOFFS:
                assert lock.acquire()
                held[i] += 1
                if sum(held) < HANDOFFS:
                    wait_until(lambda: waiters(admins[i], "hot") == 2, "the other two to queue", timeout=30)
                lock.release()
        except BaseException as error:
            errors.append(error)
            raise

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for client in made + admins:
        client.close()
    assert not errors, errors
    granted = len(read_by)
    handed = sum(1 for reader, owner in read_by if owners[owner] != reader)
    assert granted >= HANDOFFS - 3, f"{granted} grants by message in {sum(held)} acquisitions"
    assert handed <= granted // 5, f"{handed} of {granted} grants were read by another thread than their waiter's"
