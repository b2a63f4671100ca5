"""Re-entry and exclusion (threads or tasks, Lock objects, processes), and waiting in the
server's queue."""

from __future__ import annotations

import time

import pytest
from redis.exceptions import LockError, ResponseError

from support import eventually, holding_process, lock_info, side, waiters

async def test_a_thread_reenters_and_counts_its_holds(variant, admin):
    lock = variant.lock("k")
    assert await lock.acquire()
    fence = await lock.get(lambda lock: lock.fence)
    bound = lock_info(admin, "k")["watchdog"]
    assert await lock.acquire(blocking=False)
    assert await lock.get(lambda lock: lock.fence) == fence  # a re-entry keeps the token
    assert lock_info(admin, "k")["holds"] == 2
    assert lock_info(admin, "k")["watchdog"] == bound  # and the lock's own connection
    await lock.release()
    assert lock_info(admin, "k")["holds"] == 1
    assert await lock.owned()
    await lock.release()
    assert lock_info(admin, "k") is None
    assert await lock.get(lambda lock: lock.fence) is None  # no holding: no fence
    with pytest.raises(LockError):
        await lock.release()


async def test_other_threads_of_one_lock_object_are_excluded(variant, admin):
    lock = variant.lock("k")
    same_lock_elsewhere = variant.worker(lock.lock)  # another thread (task) using that object
    assert await lock.acquire()
    assert not await same_lock_elsewhere.acquire(blocking=False)
    assert lock_info(admin, "k")["holds"] == 1
    await lock.release()
    assert await same_lock_elsewhere.acquire(blocking=False)
    await same_lock_elsewhere.release()


async def test_who_may_release(variant, admin):
    """rlock.Lock keeps a thread's holding to that thread (thread_local=True). rlock.asyncio.Lock
    keeps it per thread too, so any task of the loop may release it, as with redis-py's."""
    lock = variant.lock("k")
    same_lock_elsewhere = variant.worker(lock.lock)
    assert await lock.acquire()
    if variant.name == "blocking":
        assert not await same_lock_elsewhere.owned()
        with pytest.raises(LockError):
            await same_lock_elsewhere.release()
        await lock.release()
    else:
        assert await same_lock_elsewhere.owned()
        await same_lock_elsewhere.release()
    assert lock_info(admin, "k") is None


async def test_thread_local_false_shares_the_holding_like_redis_py(variant, admin):
    lock = variant.lock("k", thread_local=False)
    other = variant.worker(lock.lock)
    assert await lock.acquire()
    assert not await other.acquire(blocking=False)  # acquiring still excludes other threads
    assert await other.owned()  # but the holding is the object's: any thread may release it
    await other.release()
    assert lock_info(admin, "k") is None


async def test_blocking_timeout_gives_up_in_time(variant, admin):
    holder, waiter = variant.lock("k"), variant.lock("k")
    assert await holder.acquire()
    started = time.monotonic()
    assert not await waiter.acquire(blocking_timeout=0.3)
    assert 0.28 < time.monotonic() - started < 1.5
    started = time.monotonic()
    assert not await waiter.acquire(blocking_timeout=0)  # 0: one attempt, no waiting
    assert not await waiter.acquire(blocking=False)
    assert time.monotonic() - started < 0.5
    await holder.release()


async def test_processes_exclude_each_other(variant, admin, redis_server):
    with holding_process(redis_server.port, "k") as holder:
        lock = variant.lock("k")
        assert not await lock.acquire(blocking=False)
        waiting = lock.start("acquire", blocking_timeout=10)
        await eventually(lambda: waiters(admin, "k") == 1, what="the waiter to queue")
        holder.stdin.write("release\n")
        holder.stdin.flush()
        assert await waiting
        assert holder.stdout.readline().strip() == "released"
        await lock.release()


@pytest.mark.parametrize("kind", ["lock", "read", "write", "permits", "multilock"])
async def test_a_key_of_another_type_raises_wrong_type(variant, admin, kind):
    """A name that holds a string is not this type: acquire() raises rlock.WrongTypeError (a
    LockError, as redis-py's lock raises for a name it cannot take, and the server's WRONGTYPE),
    at once and when it would wait, rather than reading as held by someone else
    (lock.acquire_on_another_type_is_wrong_type). locked() and owned() read the name as
    redis-py's do (taken, not ours), and the value stays. (A semaphore's name holds a list: RSEM
    reads a string as its count of permits, and says so when it is not a number.)"""
    if kind == "permits":
        admin.rpush("k", "not a lock")
    else:
        admin.set("k", "not a lock")
    if kind == "multilock":
        mine = variant.worker(variant.module.MultiLock(variant.client(), ["j", "k"]))
    else:
        mine = side(variant, kind, "k")
    for kwargs in ({"blocking": False}, {"blocking_timeout": 0.1}):
        with pytest.raises(variant.module.WrongTypeError) as raised:
            await mine.acquire(**kwargs)
        assert isinstance(raised.value, LockError) and isinstance(raised.value, ResponseError)
        assert str(raised.value).startswith("WRONGTYPE"), raised.value
    if kind != "multilock":
        assert raised.value.lock_name == "k"
        assert await mine.locked()
    assert not await mine.owned()
    if kind == "permits":
        assert admin.lrange("k", 0, -1) == ["not a lock"]
    else:
        assert admin.get("k") == "not a lock"
    assert admin.exists("j") == 0


@pytest.mark.parametrize("protocol", [2, 3])
async def test_both_protocols(variant, admin, protocol):
    lock = variant.lock("k", client=variant.client(protocol=protocol), timeout=5)
    assert await lock.acquire()
    assert await lock.owned()
    assert await lock.extend(1)
    await lock.release()
    assert not await lock.locked()
