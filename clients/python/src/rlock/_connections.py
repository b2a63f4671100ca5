"""How rlock's dedicated connections are made, for the blocking and the asyncio client alike.

A lock never runs its commands on a connection of redis-py's pool: a watchdog lock lives as
long as the connection that took it, and the pool may hand that connection to someone else
(keeping the lock alive for them), reconnect it on checkout, or close it (dropping the lock).
rlock makes its own connections from the pool's settings instead, and keeps them out of it.
"""

from __future__ import annotations

import os
import threading
import weakref

from redis.backoff import NoBackoff

try:  # redis-py 8: maintenance notifications can relax timeouts and move connections
    from redis.maint_notifications import MaintNotificationsConfig
except ImportError:  # pragma: no cover - older redis-py has no such feature
    MaintNotificationsConfig = None

#: Idle dedicated connections kept per client for reuse; more are closed.
MAX_IDLE_CONNECTIONS = 8


def lock_connection_kwargs(pool, retry_class) -> dict:
    """The pool's connection settings, minus all that would retry, reconnect or re-route a
    connection on its own: a lock's connection fails loudly, and rlock retries the call itself
    with the same request ID on a new connection. Replies stay bytes whatever the client decodes.
    """
    kwargs = dict(pool.connection_kwargs)
    kwargs.update(
        retry=retry_class(NoBackoff(), 0),
        retry_on_error=[],
        retry_on_timeout=False,
        health_check_interval=0,
        decode_responses=False,
    )
    kwargs.pop("maint_notifications_pool_handler", None)
    if MaintNotificationsConfig is not None and "maint_notifications_config" in kwargs:
        kwargs["maint_notifications_config"] = MaintNotificationsConfig(enabled=False)
    return kwargs


def check_client(redis, want_async: bool):
    """The client's connection pool, once it is sure the client suits this Lock class."""
    pool = getattr(redis, "connection_pool", None)
    if pool is None:
        raise TypeError(
            "rlock needs a redis.Redis or redis.asyncio.Redis client "
            f"(one with a connection pool), not {type(redis).__name__}"
        )
    is_async = type(pool).__module__.startswith("redis.asyncio")
    if is_async != want_async:
        wanted = "rlock.asyncio.Lock" if is_async else "rlock.Lock"
        raise TypeError(f"this client is {'' if is_async else 'not '}asyncio: use {wanted}")
    return pool


class PerPool:
    """One value per redis-py connection pool, made on first use, and anew after a fork (the
    child must not share the parent's sockets)."""

    def __init__(self, make):
        self._make = make
        self._values = weakref.WeakKeyDictionary()
        self._mutex = threading.Lock()

    def get(self, pool):
        with self._mutex:
            entry = self._values.get(pool)
            if entry is None or entry[0] != os.getpid():
                entry = self._values[pool] = (os.getpid(), self._make(pool))
            return entry[1]
