"""Re-entry and exclusion (threads or tasks, Lock objects, processes), and waiting in the
server's queue."""

from __future__ import annotations

import time

import pytest
from redis.exceptions import LockError

from support import eventually, holding_process, lock_info, waiters

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


async def test_a_new_holding_gets_a_larger_fence(variant, admin):
    lock = variant.lock("k")
    assert await lock.acquire()
    first = await lock.get(lambda lock: lock.fence)
    assert lock_info(admin, "k")["token"] == first
    await lock.release()
    assert await lock.get(lambda lock: lock.fence) is None
    assert await lock.acquire()
    assert await lock.get(lambda lock: lock.fence) > first
    await lock.release()


async def test_a_waiter_is_granted_as_the_holder_releases(variant, admin):
    holder, waiter = variant.lock("k"), variant.lock("k")
    assert await holder.acquire()
    waiting = waiter.start("acquire")  # blocking, no timeout: WAIT 0
    await eventually(lambda: waiters(admin, "k") == 1, what="the waiter to queue")
    await holder.release()
    assert await waiting
    assert await waiter.owned()
    await waiter.release()


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


async def test_a_key_of_another_type_reads_as_taken_by_someone_else(variant, admin):
    """As with redis-py's lock when another writer took the name: not acquired (at once, also
    when waiting), locked, not owned; nothing raises ResponseError and the value stays."""
    admin.set("k", "not a lock")
    lock = variant.lock("k")
    assert not await lock.acquire(blocking=False)
    assert not await lock.acquire(blocking_timeout=0.1)
    assert await lock.locked()
    assert not await lock.owned()
    assert admin.get("k") == "not a lock"


@pytest.mark.parametrize("protocol", [2, 3])
async def test_both_protocols(variant, admin, protocol):
    lock = variant.lock("k", client=variant.client(protocol=protocol), timeout=5)
    assert await lock.acquire()
    assert await lock.owned()
    assert await lock.extend(1)
    await lock.release()
    assert not await lock.locked()
