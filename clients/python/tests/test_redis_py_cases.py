"""redis-py's own lock tests (tests/test_lock.py and tests/test_asyncio/test_lock.py of
redis-py 8.1.0), adapted to run against rlock.Lock and rlock.asyncio.Lock. Same names; where a
case looked at redis-py's storage (a string key holding the token) it looks at RLOCK.INFO
instead, and where it used `r.set(name, ...)` to steal the lock, another owner takes it.

Not carried over, each for its reason:
- test_blocking_timeout, test_context_manager_blocking_timeout, test_high_sleep_small_blocking_timeout
  count the calls of redis-py's polling loop through a fake clock. rlock waits in the server and
  has no loop; their real-time counterparts are below (blocking_timeout measured on the clock,
  `sleep` ignored).
- test_lock's `ttl == -1` (redis-py's lock without timeout never expires): rlock's has a lease
  that the server's watchdog renews; test_lock checks the watchdog binding instead.
- TestLockClassSelection tests redis-py's own lock_class argument with a dummy class;
  test_lock_class_argument below passes rlock's classes through it.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from redis.exceptions import LockError, LockNotOwnedError

from support import lock_info


async def steal(variant, admin, name):
    """What `r.set(name, "a")` did to redis-py's lock: someone else holds it now."""
    admin.execute_command("RLOCK.FORCERELEASE", name)
    thief = variant.lock(name, timeout=10)
    assert await thief.acquire(blocking=False)


async def held_then_stolen(variant, admin, **kwargs):
    lock = variant.lock("foo", **kwargs)
    assert await lock.acquire(blocking=False)
    await steal(variant, admin, "foo")
    return lock


async def gives_up_in_time(variant, **kwargs):
    """Real-time form of redis-py's fake-clock cases: acquire() returns False after
    blocking_timeout, whatever `sleep` says (rlock has no polling loop to sleep in)."""
    lock1 = variant.lock("foo")
    assert await lock1.acquire(blocking=False)
    lock2 = variant.lock("foo", **kwargs)
    started = time.monotonic()
    assert not await lock2.acquire()
    waited = time.monotonic() - started
    await lock1.release()
    return waited


async def test_lock(variant, admin):
    lock = variant.lock("foo")
    assert await lock.acquire(blocking=False)
    info = lock_info(admin, "foo")
    assert info["owner"].encode() == await lock.get(lambda lock: lock.local.token)
    assert info["watchdog"] is not None  # redis-py: ttl == -1
    await lock.release()
    assert lock_info(admin, "foo") is None


@pytest.mark.parametrize("thread_local", [True, False])
async def test_lock_token(variant, admin, thread_local):
    lock = variant.lock("foo", thread_local=thread_local)
    assert await lock.acquire(blocking=False, token="test")
    assert lock_info(admin, "foo")["owner"] == "test"
    assert await lock.get(lambda lock: lock.local.token) == b"test"
    await lock.release()
    assert lock_info(admin, "foo") is None
    assert await lock.get(lambda lock: lock.local.token) is None


async def test_locked(variant, admin):
    lock = variant.lock("foo")
    assert await lock.locked() is False
    await lock.acquire(blocking=False)
    assert await lock.locked() is True
    await lock.release()
    assert await lock.locked() is False


@pytest.mark.parametrize("decode_responses", [False, True])
async def test_owned(variant, admin, decode_responses):
    client = variant.client(decode_responses=decode_responses)
    lock = variant.lock("foo", client=client)
    assert await lock.owned() is False
    await lock.acquire(blocking=False)
    assert await lock.owned() is True
    await lock.release()
    assert await lock.owned() is False

    lock2 = variant.lock("foo", client=client)
    assert await lock.owned() is False
    assert await lock2.owned() is False
    await lock2.acquire(blocking=False)
    assert await lock.owned() is False
    assert await lock2.owned() is True
    await lock2.release()
    assert await lock.owned() is False
    assert await lock2.owned() is False


async def test_competing_locks(variant, admin):
    lock1 = variant.lock("foo")
    lock2 = variant.lock("foo")
    assert await lock1.acquire(blocking=False)
    assert not await lock2.acquire(blocking=False)
    await lock1.release()
    assert await lock2.acquire(blocking=False)
    assert not await lock1.acquire(blocking=False)
    await lock2.release()


async def test_timeout(variant, admin):
    lock = variant.lock("foo", timeout=10)
    assert await lock.acquire(blocking=False)
    assert 8 < admin.ttl("foo") <= 10
    await lock.release()


async def test_float_timeout(variant, admin):
    lock = variant.lock("foo", timeout=9.5)
    assert await lock.acquire(blocking=False)
    assert 8 < admin.pttl("foo") <= 9500
    await lock.release()


async def test_blocking(variant, admin):
    assert not variant.lock("foo", blocking=False).lock.blocking
    assert variant.lock("foo").lock.blocking


async def test_blocking_timeout(variant, admin):
    assert 0.35 < await gives_up_in_time(variant, sleep=0.05, blocking_timeout=0.4) < 2.0


async def test_context_manager(variant, admin):
    # blocking_timeout prevents a deadlock if the lock can't be acquired
    async with variant.lock("foo", blocking_timeout=0.2) as lock:
        assert lock_info(admin, "foo")["owner"].encode() == await lock.get(lambda lock: lock.local.token)
    assert lock_info(admin, "foo") is None


async def test_context_manager_raises_when_locked_not_acquired(variant, admin):
    await steal(variant, admin, "foo")
    with pytest.raises(LockError):
        async with variant.lock("foo", blocking_timeout=0.1):
            pass


async def test_context_manager_not_raise_on_release_lock_not_owned_error(variant, admin):
    try:
        async with variant.lock("foo", timeout=0.1, raise_on_release_error=False):
            await asyncio.sleep(0.15)  # outlive the lease: that is the case under test
    except LockNotOwnedError:
        pytest.fail("LockNotOwnedError should not have been raised")

    with pytest.raises(LockNotOwnedError):
        async with variant.lock("foo", timeout=0.1, raise_on_release_error=True):
            await asyncio.sleep(0.15)


async def test_context_manager_not_raise_on_release_lock_error(variant, admin):
    try:
        async with variant.lock("foo", timeout=0.1, raise_on_release_error=False) as lock:
            await lock.release()
    except LockError:
        pytest.fail("LockError should not have been raised")

    with pytest.raises(LockError):
        async with variant.lock("foo", timeout=0.1, raise_on_release_error=True) as lock:
            await lock.release()


async def test_high_sleep_small_blocking_timeout(variant, admin):
    assert await gives_up_in_time(variant, sleep=60, blocking_timeout=0.2) < 2.0


async def test_releasing_unlocked_lock_raises_error(variant, admin):
    lock = variant.lock("foo")
    with pytest.raises(LockError):
        await lock.release()


async def test_releasing_lock_no_longer_owned_raises_error(variant, admin):
    lock = await held_then_stolen(variant, admin)
    with pytest.raises(LockNotOwnedError):
        await lock.release()
    # even though we errored, the token is still cleared
    assert await lock.get(lambda lock: lock.local.token) is None


async def test_extend_lock(variant, admin):
    lock = variant.lock("foo", timeout=10)
    assert await lock.acquire(blocking=False)
    assert 8000 < admin.pttl("foo") <= 10000
    assert await lock.extend(10)
    assert 16000 < admin.pttl("foo") <= 20000
    await lock.release()


async def test_extend_lock_replace_ttl(variant, admin):
    lock = variant.lock("foo", timeout=10)
    assert await lock.acquire(blocking=False)
    assert 8000 < admin.pttl("foo") <= 10000
    assert await lock.extend(10, replace_ttl=True)
    assert 8000 < admin.pttl("foo") <= 10000
    await lock.release()


async def test_extend_lock_float(variant, admin):
    lock = variant.lock("foo", timeout=10.5)
    assert await lock.acquire(blocking=False)
    assert 10000 < admin.pttl("foo") <= 10500
    old_ttl = admin.pttl("foo")
    assert await lock.extend(10.5)
    assert old_ttl + 10000 < admin.pttl("foo") <= old_ttl + 10500
    await lock.release()


async def test_extending_unlocked_lock_raises_error(variant, admin):
    lock = variant.lock("foo", timeout=10)
    with pytest.raises(LockError):
        await lock.extend(10)


async def test_extending_lock_with_no_timeout_raises_error(variant, admin):
    lock = variant.lock("foo")
    assert await lock.acquire(blocking=False)
    with pytest.raises(LockError):
        await lock.extend(10)
    await lock.release()


async def test_extending_lock_no_longer_owned_raises_error(variant, admin):
    lock = await held_then_stolen(variant, admin, timeout=10)
    with pytest.raises(LockNotOwnedError):
        await lock.extend(10)


async def test_reacquire_lock(variant, admin):
    lock = variant.lock("foo", timeout=10)
    assert await lock.acquire(blocking=False)
    assert admin.pexpire("foo", 5000)
    assert admin.pttl("foo") <= 5000
    assert await lock.reacquire()
    assert 8000 < admin.pttl("foo") <= 10000
    await lock.release()


async def test_reacquiring_unlocked_lock_raises_error(variant, admin):
    lock = variant.lock("foo", timeout=10)
    with pytest.raises(LockError):
        await lock.reacquire()


async def test_reacquiring_lock_with_no_timeout_raises_error(variant, admin):
    lock = variant.lock("foo")
    assert await lock.acquire(blocking=False)
    with pytest.raises(LockError):
        await lock.reacquire()
    await lock.release()


async def test_reacquiring_lock_no_longer_owned_raises_error(variant, admin):
    lock = await held_then_stolen(variant, admin, timeout=10)
    with pytest.raises(LockNotOwnedError):
        await lock.reacquire()


async def test_context_manager_reacquiring_lock_with_no_timeout_raises_error(variant, admin):
    async with variant.lock("foo", timeout=None, blocking=False) as lock:
        with pytest.raises(LockError):
            await lock.reacquire()


async def test_context_manager_reacquiring_lock_no_longer_owned_raises_error(variant, admin):
    with pytest.raises(LockNotOwnedError):
        async with variant.lock("foo", timeout=10, blocking=False):
            admin.execute_command("RLOCK.FORCERELEASE", "foo")


async def test_lock_error_gives_correct_lock_name(variant, admin):
    await steal(variant, admin, "foo")
    with pytest.raises(LockError) as excinfo:
        async with variant.lock("foo", blocking_timeout=0.1):
            pass
    assert excinfo.value.lock_name == "foo"


async def test_release_cancellation_preserves_lock_state(variant, admin):
    """redis-py asyncio's regression test for issue #3847: a release() that is cancelled
    leaves either the lock held and releasable, or released; never half of each."""
    if variant.name != "asyncio":
        pytest.skip("cancelling a call is an asyncio matter")
    lock = variant.lock("foo").lock
    await lock.acquire(blocking=False)
    original_token = lock.local.token
    assert await lock.owned()
    release_task = asyncio.create_task(lock.release())
    release_task.cancel()
    try:
        await release_task
    except asyncio.CancelledError:
        pass
    if lock.local.token is not None:
        assert lock.local.token == original_token
        await lock.release()
    assert await lock.locked() is False


async def test_lock_class_argument(variant, admin):
    client = variant.client()
    assert isinstance(client.lock("foo", lock_class=variant.lock_class), variant.lock_class)
