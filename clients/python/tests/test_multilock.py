"""rlock.MultiLock and rlock.asyncio.MultiLock (RLOCK.ACQUIREALL / RLOCK.RELEASEALL): every
name or none, waiting by message, one release for all, and deadlocks refused at once. On a
server of their own: their subscriber connections stay with it."""

from __future__ import annotations

import time

import pytest
from redis.exceptions import LockError, LockNotOwnedError

import rlock
from support import AsyncioVariant, BlockingVariant, eventually, lock_info, rlock_stat, waiters


@pytest.fixture
def server(new_server):
    return new_server()


@pytest.fixture(params=[BlockingVariant, AsyncioVariant], ids=lambda variant: variant.name)
def variant(request, server):
    return request.param(server.port)


@pytest.fixture
def admin(server):
    client = server.client()
    yield client
    client.close()


def multi(variant, names, client=None, **kwargs):
    """A MultiLock on a worker of its own (a thread, or a task)."""
    return variant.worker(variant.module.MultiLock(client or variant.client(), names, **kwargs))


def owner_of(admin, name):
    info = lock_info(admin, name)
    return None if info is None else info["owner"]


async def test_takes_every_name_and_gives_them_all_back(variant, admin):
    both = multi(variant, ["a", "b"])
    assert await both.acquire(blocking=False) is True
    tokens = await both.get(lambda lock: lock.tokens)
    assert tokens == [lock_info(admin, "a")["token"], lock_info(admin, "b")["token"]]
    assert owner_of(admin, "a") == owner_of(admin, "b") is not None
    assert lock_info(admin, "a")["watchdog"] is not None, "watchdog without a timeout"
    assert await both.owned() and await both.locked()
    await both.release()
    assert lock_info(admin, "a") is None and lock_info(admin, "b") is None
    assert await both.get(lambda lock: lock.tokens) == [None, None]
    with pytest.raises(LockError):
        await both.release()

    async with both:  # the context manager
        assert owner_of(admin, "a") is not None
    assert lock_info(admin, "a") is None


async def test_one_name_held_elsewhere_takes_nothing(variant, admin):
    """A wait for every name that runs out takes nothing and leaves every queue (one attempt
    without waiting: multilock.every_key_or_none)."""
    holder = variant.lock("b")
    assert await holder.acquire()
    both = multi(variant, ["a", "b"], timeout=10)
    started = time.monotonic()
    assert await both.acquire(blocking_timeout=0.2) is False
    assert time.monotonic() - started >= 0.19
    assert lock_info(admin, "a") is None, "nothing held after the timeout"
    assert waiters(admin, "b") == 0
    assert not await both.owned()
    await holder.release()


async def test_a_wait_by_message_is_granted_every_name_when_the_holder_lets_go(variant, admin):
    holder = variant.lock("b")
    assert await holder.acquire()
    both = multi(variant, ["a", "b"])
    waiting = both.start("acquire", blocking_timeout=5)
    await eventually(lambda: waiters(admin, "b") == 1, what="the request queued")
    assert rlock_stat(admin, "notified_waiters") == 1, "it waits by NOTIFY"
    assert lock_info(admin, "a") is None, "nothing taken while it waits"

    await holder.release()
    assert await waiting is True
    tokens = await both.get(lambda lock: lock.tokens)
    assert tokens == [lock_info(admin, "a")["token"], lock_info(admin, "b")["token"]]
    assert owner_of(admin, "a") == owner_of(admin, "b")
    assert lock_info(admin, "b")["watchdog"] is not None
    await both.release()
    assert lock_info(admin, "a") is None and lock_info(admin, "b") is None


async def test_a_name_the_owner_holds_is_re_entered(variant, admin):
    single = variant.lock("a")
    assert await single.acquire(token="T")
    both = single.on(variant.module.MultiLock(variant.client(), ["a", "b"]))
    assert await both.acquire(token="T", blocking_timeout=5)
    assert lock_info(admin, "a")["holds"] == 2
    await both.release()
    assert lock_info(admin, "a")["holds"] == 1 and lock_info(admin, "b") is None
    await single.release()


async def test_a_release_after_a_loss_raises_lock_not_owned(variant, admin):
    both = multi(variant, ["a", "b"], timeout=10)
    assert await both.acquire()
    admin.execute_command("RLOCK.FORCERELEASE", "b")
    with pytest.raises(LockNotOwnedError):
        await both.release()
    assert lock_info(admin, "a") is None, "the others are released all the same"


async def test_nesting_against_a_multi_lock_raises_deadlock_at_once(variant, admin):
    """T1 holds a and waits for [b, c]; T2 holds b and asks for a."""
    one, two = variant.lock("a"), variant.lock("b")
    assert await one.acquire(token="T1")
    assert await two.acquire(token="T2")
    one_bc = one.on(variant.module.MultiLock(variant.client(), ["b", "c"]))
    waiting = one_bc.start("acquire", blocking_timeout=5, token="T1")
    await eventually(lambda: waiters(admin, "b") == 1, what="T1 queued")

    two_a = two.on(variant.client().lock("a", lock_class=variant.lock_class))
    started = time.monotonic()
    with pytest.raises(rlock.DeadlockError, match="cycle"):
        await two_a.acquire(token="T2", blocking_timeout=5)
    took = time.monotonic() - started
    assert took < 1.0, f"refused after {took:.3f} s, not at once (the wait is 5 s)"
    assert waiters(admin, "a") == 0

    await two.release()
    assert await waiting is True
    await one_bc.release()
    await one.release()
