"""Locks without timeout: the server's watchdog, rlock's keep-alive, and what happens when the
lock's connection goes."""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import threading
import time

import pytest
from redis.exceptions import LockNotOwnedError

from servers import free_port
from support import client_ids, eventually, excluded_by, holding_process, lock_info, queued, side

# Generous: the claim is "far below the lease", not a speed (the bench measures handoffs);
# the machine running the tests may be loaded.
KILL_HANDOFF_BOUND_S = 0.5
KILL_ROUNDS = 3
PAIRS = 50
# A release may run on a second connection while the keeper gives back the first.
PAIRS_CONNECTIONS_BOUND = 2


async def test_the_watchdog_keeps_a_lock_past_its_lease(variant, admin):
    lock = variant.lock("k", watchdog_lease=0.3)
    assert await lock.acquire()
    await asyncio.sleep(1.5)  # five leases: the holding under test
    info = lock_info(admin, "k")
    assert info["owner"].encode() == await lock.get(lambda lock: lock.local.token)
    assert 0 < info["ttl"] <= 300
    assert await lock.owned()
    await lock.release()


async def test_closing_the_pool_does_not_drop_a_watchdog_lock(variant, admin):
    """The lock's connection is rlock's own, not one redis-py's pool may close or lend."""
    client = variant.client()
    lock = variant.lock("k", client=client)
    assert await lock.acquire()
    bound = lock_info(admin, "k")["watchdog"]
    await variant.disconnect_pool(client)
    assert lock_info(admin, "k")["watchdog"] == bound
    assert await lock.owned()
    await lock.release()
    assert lock_info(admin, "k") is None


async def test_pings_keep_a_quiet_lock_connection_alive(variant, new_server):
    """With rlock.watchdog-idle-ms 1000 the server stops renewing a watchdog lock whose
    connection sent nothing for 1 s (at most 2 s: whole seconds); rlock PINGs every third of
    that. A connection that does not PING, taken after ours, loses its lock meanwhile; ours,
    without PINGs, would have ended no later than one lease after it. The 1.5 s lease (renewed
    every 0.5 s) leaves a loaded server a second to renew it in."""
    lease = 1.5
    server = new_server("watchdog-idle-ms", 1000)
    admin = server.client()
    lock = variant.lock("k", client=variant.client(port=server.port), watchdog_lease=lease)
    assert await lock.acquire()
    silent = server.client()
    assert silent.execute_command("RLOCK.ACQUIRE", "silent", "me", "PX", int(lease * 1000), "WATCHDOG")
    await eventually(lambda: lock_info(admin, "silent") is None, timeout=10, what="the silent lock to end")
    await asyncio.sleep(lease)
    assert lock_info(admin, "k")["watchdog"] is not None
    assert await lock.owned()
    await lock.release()


@pytest.mark.parametrize("protocol", [2, 3])
async def test_acquire_release_pairs_reuse_the_lock_connections(variant, admin, protocol):
    """A watchdog holding's keeper gives its connection back the moment the holding is released,
    so the next acquire finds it idle: 50 pairs open no new connection (a keeper that noticed
    the release only at its next keep-alive PING, seconds later, cost one per pair). RESP2 and
    RESP3: over RESP3 the asyncio client takes an uncontended lock on its subscriber."""
    lock = variant.lock("k", client=variant.client(protocol=protocol))
    assert await lock.acquire()  # the first pair opens what the lock needs
    await lock.release()
    before = admin.info("stats")["total_connections_received"]
    for _ in range(PAIRS):
        assert await lock.acquire()
        await lock.release()
    opened = admin.info("stats")["total_connections_received"] - before
    assert opened <= PAIRS_CONNECTIONS_BOUND, f"{PAIRS} acquire+release pairs opened {opened} connections"


@pytest.mark.parametrize("kind", ["lock", "read", "write", "permits"])
async def test_killing_the_holder_process_lets_the_waiter_in_at_once(variant, admin, redis_server, capsys, kind):
    """A watchdog holding (a lock, a read or write side, a permit) ends when its holder's
    connection closes: kill -9 the holding process and the waiter is granted within
    milliseconds, not after the 30 s lease. Three rounds; the median must be under 0.5 s (one
    round may meet a busy scheduler on a shared machine)."""
    if kind == "permits":
        admin.execute_command("RSEM.SETPERMITS", "k", 1)
    handoffs = []
    for _ in range(KILL_ROUNDS):
        with holding_process(redis_server.port, "k", kind) as holder:
            waiter = side(variant, excluded_by(kind), "k")
            waiting = waiter.start("acquire", blocking_timeout=10)
            await eventually(lambda: queued(admin, kind, "k") == 1, what="the waiter to queue")
            killed_at = time.monotonic()
            os.kill(holder.pid, signal.SIGKILL)
            assert await waiting
            handoffs.append(waiter.worker.finished_at - killed_at)
        await waiter.release()
    figures = ", ".join(f"{handoff * 1000:.1f}" for handoff in handoffs)
    with capsys.disabled():
        print(f"\n  kill -9 handoff ({variant.name}, {kind}): {figures} ms", end="")
    assert statistics.median(handoffs) < KILL_HANDOFF_BOUND_S
    assert max(handoffs) < 1.0  # far below the 30 s lease: the close ended the holding


async def test_a_lock_whose_connection_dies_is_lost(variant, admin):
    lost = threading.Event()
    lock = variant.lock("k", on_lost=lambda lock: lost.set())
    assert await lock.acquire()
    bound = lock_info(admin, "k")["watchdog"]
    admin.execute_command("RLOCK.FORCERELEASE", "k")  # so the re-bind finds nothing to keep
    admin.client_kill_filter(_id=bound)
    await eventually(lost.is_set, what="on_lost")
    assert not await lock.owned()
    with pytest.raises(LockNotOwnedError):
        await lock.extend(1)
    with pytest.raises(LockNotOwnedError):
        await lock.release()


async def test_a_lock_rebinds_after_its_server_turned_replica_and_back(variant, new_server):
    """The server closes the connections of watchdog locks when it turns replica (as in a
    failover) but keeps the locks, with their leases. rlock re-binds from a new connection as
    soon as the server takes writes again."""
    server = new_server()
    admin = server.client()
    lost = threading.Event()
    lock = variant.lock(
        "k", client=variant.client(port=server.port), watchdog_lease=10, on_lost=lambda lock: lost.set()
    )
    assert await lock.acquire()
    bound = lock_info(admin, "k")["watchdog"]
    admin.replicaof("127.0.0.1", free_port())  # a master that is not there
    await eventually(lambda: bound not in client_ids(admin), what="the server to close the lock's connection")
    admin.replicaof("no", "one")
    await eventually(lambda: lock_info(admin, "k")["watchdog"] is not None, what="the re-bind")
    assert lock_info(admin, "k")["watchdog"] != bound
    assert await lock.owned()
    assert not lost.is_set()
    await lock.release()
    assert lock_info(admin, "k") is None
