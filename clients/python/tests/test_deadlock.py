"""A wait that would close a cycle of owners raises rlock.DeadlockError at once (the server's
-DEADLOCK), in rlock.Lock and rlock.asyncio.Lock, instead of waiting out its timeout. An owner
is one thread of control: locks share one when acquired with the same token."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import redis
import redis.asyncio

import rlock
import rlock.asyncio
from support import waiters


def test_two_threads_nesting_two_locks_in_opposite_orders(new_server):
    redis_server = new_server()  # its own: the subscriber rlock opens here goes with it
    admin = redis_server.client()
    r = redis.Redis(port=redis_server.port)
    assert r.lock("k1", lock_class=rlock.Lock).acquire(token="A")
    assert r.lock("k2", lock_class=rlock.Lock).acquire(token="B")
    outcome = {}

    def a_waits_for_k2():
        outcome["a"] = r.lock("k2", lock_class=rlock.Lock).acquire(token="A", blocking_timeout=5)

    a = threading.Thread(target=a_waits_for_k2)
    a.start()
    deadline = time.monotonic() + 5
    while waiters(admin, "k2") != 1:
        assert time.monotonic() < deadline, "A never queued"
        time.sleep(0.01)
    # Refused with nothing changed, so it can be asked again: each answer at once.
    took = []
    for _ in range(5):
        asked = time.monotonic()
        with pytest.raises(rlock.DeadlockError, match="cycle") as raised:
            r.lock("k1", lock_class=rlock.Lock).acquire(token="B", blocking_timeout=5)
        took.append(time.monotonic() - asked)
        assert isinstance(raised.value, redis.exceptions.LockError)
    print(f"DeadlockError after {[f'{t * 1000:.1f} ms' for t in took]}")
    assert max(took) < 0.5, "at once, not after the timeout"
    assert waiters(admin, "k1") == 0, "nothing queued"
    admin.execute_command("RLOCK.RELEASE", "k2", "B")  # B gives up its lock: A goes on
    a.join(5)
    assert outcome["a"] is True
    r.close()


async def test_two_tasks_nesting_two_locks_in_opposite_orders(new_server):
    redis_server = new_server()  # its own: the subscriber rlock opens here goes with it
    admin = redis_server.client()
    r = redis.asyncio.Redis(port=redis_server.port)
    assert await r.lock("k1", lock_class=rlock.asyncio.Lock).acquire(token="A")
    assert await r.lock("k2", lock_class=rlock.asyncio.Lock).acquire(token="B")
    a = asyncio.create_task(
        r.lock("k2", lock_class=rlock.asyncio.Lock).acquire(token="A", blocking_timeout=5)
    )
    deadline = time.monotonic() + 5
    while waiters(admin, "k2") != 1:
        assert time.monotonic() < deadline, "A never queued"
        await asyncio.sleep(0.01)
    asked = time.monotonic()
    with pytest.raises(rlock.asyncio.DeadlockError, match="cycle"):
        await r.lock("k1", lock_class=rlock.asyncio.Lock).acquire(token="B", blocking_timeout=5)
    assert time.monotonic() - asked < 0.5
    assert waiters(admin, "k1") == 0
    admin.execute_command("RLOCK.RELEASE", "k2", "B")
    assert await asyncio.wait_for(a, 5) is True
    await r.aclose()
