"""lock.guard(...): one write command run only while this thread (task) holds the lock with its
current token (RLOCK.GUARD); after the lock is lost, LockNotOwnedError and nothing runs."""

from __future__ import annotations

import pytest
import redis
import redis.asyncio
from redis.exceptions import LockError, LockNotOwnedError, ResponseError

import rlock
import rlock.asyncio


def test_a_guarded_write_runs_only_while_held(new_server):
    redis_server = new_server()  # its own: the subscriber rlock opens here goes with it
    admin = redis_server.client()
    r = redis.Redis(port=redis_server.port, decode_responses=True)
    lock = r.lock("l", lock_class=rlock.Lock, timeout=30)
    with pytest.raises(LockError):
        lock.guard("SET", "k", "v")  # holds nothing: nothing is sent
    assert lock.acquire()
    assert lock.guard("SET", "k", "v1") == "OK"
    assert lock.guard("INCR", "n") == 1
    with pytest.raises(ResponseError):
        lock.guard("GET", "k")  # not a write: the server refuses it
    admin.execute_command("RLOCK.FORCERELEASE", "l")
    thief = r.lock("l", lock_class=rlock.Lock, timeout=30)
    assert thief.acquire()
    with pytest.raises(LockNotOwnedError):
        lock.guard("SET", "k", "stale")
    assert admin.get("k") == "v1", "the stale holder wrote nothing"
    assert not lock.owned()
    assert thief.guard("SET", "k", "v2") == "OK"
    assert admin.get("k") == "v2"
    thief.release()
    r.close()


async def test_a_guarded_write_runs_only_while_held_asyncio(new_server):
    redis_server = new_server()  # its own: the subscriber rlock opens here goes with it
    admin = redis_server.client()
    r = redis.asyncio.Redis(port=redis_server.port, decode_responses=True)
    lock = r.lock("l", lock_class=rlock.asyncio.Lock, timeout=30)
    assert await lock.acquire()
    assert await lock.guard("SET", "k", "v1") == "OK"
    admin.execute_command("RLOCK.FORCERELEASE", "l")
    thief = r.lock("l", lock_class=rlock.asyncio.Lock, timeout=30)
    assert await thief.acquire()
    with pytest.raises(LockNotOwnedError):
        await lock.guard("SET", "k", "stale")
    assert admin.get("k") == "v1"
    assert await thief.guard("SET", "k", "v2") == "OK"
    await thief.release()
    await r.aclose()
