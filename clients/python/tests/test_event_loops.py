"""One redis.asyncio client used by rlock.asyncio in more than one event loop: two successive
`asyncio.run` calls (pytest-asyncio's loop per test with a module-level client), and two threads
each running a loop of its own at the same time. The connections rlock keeps (idle ones, the
subscriber, a keeper's) belong to the loop that made them: another loop must get its own, and a
closed loop's are dropped, never handed out again ("Event loop is closed", "attached to a
different loop", or a keeper that never runs).

These tests run their loops themselves (they are not `async def`): the loops are the subject."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time

import pytest
import redis.asyncio
import rlock.asyncio

from support import client_ids, lock_info, waiters

# The server stops renewing a watchdog holding whose connection sent nothing for this long
# (whole seconds: at most 2 s): only a keeper (or the subscriber) that PINGs keeps it.
WATCHDOG_IDLE_MS = 1000
QUIET_S = 2.5
ROUND_DEADLINE_S = 60  # generous: one round takes about QUIET_S on an idle machine
LOOPS = 2


async def wait_until(predicate, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.002)


async def one_round(client, admin, prefix: str, between=None) -> set:
    """What a loop does with the shared client: acquire+release, a watchdog holding kept past
    the server's idle time, and a wait told by message. Returns the client ids of the
    connections rlock used for it (the watchdog holding's and the waiter's)."""
    used = set()
    lock = rlock.asyncio.Lock(client, f"{prefix}:held")
    assert await lock.acquire()
    await lock.release()
    if between is not None:  # the other thread's loop has its idle connections by now
        await asyncio.get_running_loop().run_in_executor(None, between)

    assert await lock.acquire()
    used.add(lock_info(admin, f"{prefix}:held")["watchdog"])
    await asyncio.sleep(QUIET_S)  # longer than the server waits for a silent connection
    info = lock_info(admin, f"{prefix}:held")
    assert info is not None and info["watchdog"] is not None, "the keeper did not keep the holding"
    assert await lock.owned()
    await lock.release()

    holder = rlock.asyncio.Lock(client, f"{prefix}:waited")
    waiter = rlock.asyncio.Lock(client, f"{prefix}:waited")
    assert await holder.acquire()
    waiting = asyncio.ensure_future(waiter.acquire(blocking_timeout=20))
    await wait_until(lambda: waiters(admin, f"{prefix}:waited") == 1, "the waiter to queue")
    await holder.release()
    assert await waiting
    used.add(lock_info(admin, f"{prefix}:waited")["watchdog"])
    await waiter.release()
    return used


def run_loop(coroutine):
    """asyncio.run with a deadline, so that a hang fails the test instead of stalling it."""
    return asyncio.run(asyncio.wait_for(coroutine, ROUND_DEADLINE_S))


@pytest.fixture
def server(new_server):
    return new_server("watchdog-idle-ms", WATCHDOG_IDLE_MS)


@pytest.fixture
def errors_logged(caplog):
    """What asyncio (tasks whose exception nobody retrieved, callbacks that raised) and rlock
    (failed re-binds, lost holdings) logged as warnings or worse."""
    caplog.set_level(logging.WARNING, logger="asyncio")
    caplog.set_level(logging.WARNING, logger="rlock")
    return lambda: [record.getMessage() for record in caplog.records if record.name in ("asyncio", "rlock")]


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_one_client_in_successive_event_loops(server, errors_logged, protocol):
    """Nothing is closed between the loops: the second one must not be handed the first one's
    connections, and once the first loop is closed its connections are dropped (Python closes
    their sockets when it collects them), not kept for ever."""
    admin = server.client()
    client = redis.asyncio.Redis(port=server.port, protocol=protocol)
    used = [run_loop(one_round(client, admin, f"loop{n}")) for n in range(LOOPS)]
    assert errors_logged() == []
    assert used[0].isdisjoint(used[1]), f"the second loop used the first loop's connections {used}"
    gc.collect()
    deadline = time.monotonic() + 10
    while not used[0].isdisjoint(client_ids(admin)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert used[0].isdisjoint(client_ids(admin)), "the closed loop's connections were kept open"
    run_loop(rlock.asyncio.close_idle_connections(client))


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_one_client_in_two_threads_each_running_an_event_loop(server, errors_logged, protocol):
    """Both loops run at once; each thread's first acquire+release leaves idle connections
    before the other's second acquire (a barrier), so a shared idle list would hand one loop's
    connection to the other."""
    admin = server.client()
    client = redis.asyncio.Redis(port=server.port, protocol=protocol)
    barrier = threading.Barrier(LOOPS, timeout=ROUND_DEADLINE_S)
    outcomes = [None] * LOOPS

    def thread(n):
        async def body():
            try:
                return await one_round(client, admin, f"thread{n}", between=barrier.wait)
            finally:
                await rlock.asyncio.close_idle_connections(client)

        try:
            outcomes[n] = run_loop(body())
        except BaseException as error:  # reported by the test, in the test's thread
            outcomes[n] = error
            barrier.abort()

    threads = [threading.Thread(target=thread, args=(n,)) for n in range(LOOPS)]
    for started in threads:
        started.start()
    for started in threads:
        started.join()
    failed = [outcome for outcome in outcomes if not isinstance(outcome, set)]
    assert failed == [], f"a thread's loop failed: {failed!r}"
    assert outcomes[0].isdisjoint(outcomes[1]), f"the two loops shared connections {outcomes}"
    assert errors_logged() == []
