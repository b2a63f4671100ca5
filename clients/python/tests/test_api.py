"""rlock's classes fit where redis-py's go: same signatures, right client checks, extras."""

from __future__ import annotations

import inspect

import pytest
import redis
import redis.asyncio
import redis.asyncio.lock
import redis.lock
import rlock
import rlock.asyncio

from support import lock_info

PAIRS = [(rlock.Lock, redis.lock.Lock), (rlock.asyncio.Lock, redis.asyncio.lock.Lock)]
METHODS = ["__init__", "acquire", "release", "extend", "reacquire", "locked", "owned"]


def parameters(function):
    return [(p.name, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("ours, theirs", PAIRS, ids=["blocking", "asyncio"])
@pytest.mark.parametrize("method", METHODS)
def test_signatures_match_redis_py(ours, theirs, method):
    """Every parameter of redis-py's method, in its place and with its default; rlock adds
    keyword-only options after them."""
    mine = [p for p in parameters(getattr(ours, method)) if p[0] not in ("on_lost", "watchdog_lease", "max_hold", "confirm")]
    assert mine == parameters(getattr(theirs, method))
    assert inspect.iscoroutinefunction(getattr(ours, method)) == inspect.iscoroutinefunction(getattr(theirs, method))


def test_a_client_of_the_wrong_kind_is_refused(redis_server):
    with pytest.raises(TypeError, match="rlock.asyncio.Lock"):
        rlock.Lock(redis.asyncio.Redis(port=redis_server.port), "k")
    with pytest.raises(TypeError, match="rlock.Lock"):
        rlock.asyncio.Lock(redis.Redis(port=redis_server.port), "k")
    with pytest.raises(TypeError, match="connection pool"):
        rlock.Lock(object(), "k")


async def test_max_hold_caps_the_holding(variant, admin):
    lock = variant.lock("k", max_hold=0.2)
    assert await lock.acquire()
    assert lock_info(admin, "k")["ttl"] <= 200  # the watchdog's 30 s lease, clipped to the cap
    await lock.release()


async def test_names_and_tokens_may_be_bytes(variant, admin):
    lock = variant.lock(b"k")
    assert await lock.acquire(token=b"owner-1")
    assert lock_info(admin, "k")["owner"] == "owner-1"
    await lock.release()
