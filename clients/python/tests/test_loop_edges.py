"""The edges of one redis.asyncio client used in several event loops (test_event_loops.py has
the main road): the asyncio primitives rlock keeps inside its objects (a binding's guard, an
Election's campaign mutex) must work in every loop that uses the object, and a loop closed
while it still held a watchdog lock (keeper or subscriber) must leave the holding where a
process that exits holding it leaves it: freed by the server as its connection closes, never
reported held afterwards, and nothing of the closed loop kept or waited on by a later loop.

These tests run their loops themselves (they are not `async def`): the loops are the subject."""

from __future__ import annotations

import asyncio
import gc
import sys
import time
import weakref

import pytest
import redis.asyncio
import rlock.asyncio
from redis.exceptions import LockNotOwnedError

from support import client_ids, lock_info
from test_event_loops import QUIET_S, WATCHDOG_IDLE_MS, run_loop


@pytest.fixture
def server(new_server):
    return new_server("watchdog-idle-ms", WATCHDOG_IDLE_MS)


def test_an_election_campaigns_with_contention_in_successive_loops(server):
    """Two campaigns of one Election object at once: the second waits on the object's
    campaign mutex, which must then work in the next loop too."""
    client = redis.asyncio.Redis(port=server.port)
    election = rlock.asyncio.Election(client, "leader", "candidate-1")

    async def contended_campaigns():
        terms = await asyncio.gather(election.campaign(timeout=10), election.campaign(timeout=10))
        assert terms[0] is not None and terms[0] == terms[1]
        await election.resign()
        return terms[0]

    first, second = run_loop(contended_campaigns()), run_loop(contended_campaigns())
    assert second > first


def test_a_lease_holding_is_extended_with_contention_in_successive_loops(server):
    """A lease holding outlives its loop (its lease is on the server, no connection keeps it):
    the next loop extends it, two tasks at once, so the holding's guard is contended in both."""
    client = redis.asyncio.Redis(port=server.port)
    lock = rlock.asyncio.Lock(client, "leased", timeout=30)

    async def contended_extends():
        await asyncio.gather(lock.extend(5), lock.extend(5))

    assert run_loop(lock.acquire())
    run_loop(contended_extends())
    run_loop(contended_extends())
    run_loop(lock.release())
    assert lock_info(server.client(), "leased") is None


def holding_left_in_a_closed_loop(lock) -> weakref.ref:
    """Acquires in a loop of its own, closed without cancelling its tasks (loop.close(), not
    asyncio.run): the keeper or subscriber of the holding never gets to end. Returns a weak
    reference to that loop."""
    loop = asyncio.new_event_loop()
    # Its tasks, destroyed pending (or with an exception never retrieved, depending on when the
    # server closed their connections), complain through the loop's exception handler; the
    # default one logs with the exception's traceback, and pytest's log capture keeps that
    # record, and through its frames the loop, until the test ends: a keeper by chance, not
    # rlock's. Their complaints go nowhere instead.
    loop.set_exception_handler(lambda loop, context: None)
    try:
        assert loop.run_until_complete(asyncio.wait_for(lock.acquire(), 60))
    finally:
        loop.close()
    return weakref.ref(loop)


def collected(ref: weakref.ref, rounds: int = 10) -> bool:
    """Whether what `ref` names is gone once the garbage is collected: as many rounds as
    finalizers keep freeing more (a coroutine closed by one round may free others in the next).
    redis-py's coroutines of a closed loop complain when collected ("no running event loop");
    pytest's unraisable hook would keep their tracebacks, and through them the loop: they are
    dropped."""
    hook, sys.unraisablehook = sys.unraisablehook, lambda unraisable: None
    try:
        for _ in range(rounds):
            if ref() is None:
                return True
            gc.collect()
    finally:
        sys.unraisablehook = hook
    return ref() is None


def holders_of(ref: weakref.ref) -> list[str]:
    """What still refers to the object `ref` names, by type: for a failure's message."""
    target = ref()
    return [f"{type(r).__module__}.{type(r).__qualname__}" for r in gc.get_referrers(target)] if target else []


@pytest.mark.parametrize("protocol", [2, 3], ids=["keeper-resp2", "subscriber-resp3"])
def test_a_watchdog_holding_of_a_closed_loop_is_gone_for_the_next_loop(server, protocol, monkeypatch):
    """resp2: the holding is kept by a keeper task; resp3: by the loop's subscriber. Either way,
    once the loop is closed the holding is not reported held, its release says it is not owned,
    another lock takes the key at once (no wait for a lease), the later loop keeps that holding
    with a keeper of its own, and nothing keeps the closed loop alive."""
    # The closed loop's coroutines complain when collected ("no running event loop"), and the
    # collector may run at any allocation of the test, not only in collected(): pytest's
    # unraisable hook would keep their tracebacks, and through them the loop (it failed so in
    # 2 of 2 whole-suite runs, never alone). Their complaints go nowhere for the whole test.
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: None)
    admin = server.client()
    client = redis.asyncio.Redis(port=server.port, protocol=protocol)
    lock = rlock.asyncio.Lock(client, "left", watchdog_lease=60)
    closed_loop = holding_left_in_a_closed_loop(lock)
    held_by = lock_info(admin, "left")["watchdog"]
    assert held_by is not None

    async def next_loop():
        assert not await lock.owned()
        with pytest.raises(LockNotOwnedError):
            await lock.release()
        other = rlock.asyncio.Lock(client, "left", watchdog_lease=60)
        started = time.monotonic()
        assert await other.acquire(blocking_timeout=30)
        waited = time.monotonic() - started
        assert waited < 10, f"the closed loop's holding was freed only after {waited:.1f} s"
        await asyncio.sleep(QUIET_S)  # longer than the server waits for a silent connection
        info = lock_info(admin, "left")
        assert info is not None and info["watchdog"] not in (None, held_by), "no keeper in the later loop"
        assert await other.owned()
        await other.release()
        await rlock.asyncio.close_idle_connections(client)

    run_loop(next_loop())
    assert held_by not in client_ids(admin), "the closed loop's connection is still open"
    assert collected(closed_loop), f"something keeps the closed loop alive: {holders_of(closed_loop)}"


def test_an_election_won_in_a_closed_loop_campaigns_again_in_the_next(server):
    """An Election's lock has one owner in every loop (its candidate id): the holding of the
    closed loop must not pass for the new one's, and the new one must be kept by its loop."""
    admin = server.client()
    client = redis.asyncio.Redis(port=server.port)
    election = rlock.asyncio.Election(client, "chair", "candidate-1")
    loop = asyncio.new_event_loop()
    try:
        first = loop.run_until_complete(asyncio.wait_for(election.campaign(timeout=10), 60))
    finally:
        loop.close()
    held_by = lock_info(admin, "chair")["watchdog"]

    async def next_loop():
        assert election.term is None, "the closed loop's term passes for a live one"
        second = await election.campaign(timeout=10)
        assert second is not None and second > first
        await asyncio.sleep(QUIET_S)
        info = lock_info(admin, "chair")
        assert info is not None and info["watchdog"] not in (None, held_by), "no keeper in the later loop"
        assert election.term == second
        await election.resign()
        await rlock.asyncio.close_idle_connections(client)

    run_loop(next_loop())
