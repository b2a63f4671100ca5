"""Django: django-redis's cache whose ``cache.lock(...)`` is rlock's Lock, plus
``cache.alock(...)`` for asyncio code; the one settings line is the cache's BACKEND:

    CACHES = {"default": {
        "BACKEND": "rlock.contrib.django.RedisCache",      # was django_redis.cache.RedisCache
        "LOCATION": "redis://127.0.0.1:6379/0",
    }}

    with cache.lock("report:42", timeout=None) as lock:   # watchdog: ends if this process dies
        build(fence=lock.fence)
    async with cache.alock("report:42") as lock:           # rlock.asyncio.Lock
        await build_async(fence=lock.fence)

Everything else is django-redis's (clients, serializers, OPTIONS). Why a backend of ours rather
than an option of django-redis: django-redis (7.0) has no ``lock_class`` option (its client's
``lock()`` always makes redis-py's Lock), and no asyncio client at all; a backend is the one
place where both ``lock()`` and an ``alock()`` can be added with one settings line.

``alock()`` talks to the cache's first (write) LOCATION through redis.asyncio, with the
``PASSWORD`` of OPTIONS if given; one client per cache object, used from any event loop (rlock's
connections are per loop).
"""

from __future__ import annotations

import threading
from typing import Optional

import redis.asyncio
from django_redis.cache import RedisCache as DjangoRedisCache

from .. import Lock
from ..asyncio import Lock as AsyncLock


class RedisCache(DjangoRedisCache):
    """django_redis.cache.RedisCache with rlock's ``lock()`` and an asyncio ``alock()``."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._async_redis: Optional[redis.asyncio.Redis] = None
        self._async_guard = threading.Lock()

    def lock(self, key, version=None, timeout=None, sleep=0.1, blocking=True, blocking_timeout=None,
             client=None, thread_local=True) -> Lock:
        """django-redis's lock() arguments; an rlock.Lock (timeout=None: the server's watchdog)."""
        if client is None:
            client = self.client.get_client(write=True)
        return Lock(client, self.client.make_key(key, version=version), timeout=timeout, sleep=sleep,
                    blocking=blocking, blocking_timeout=blocking_timeout, thread_local=thread_local)

    def alock(self, key, version=None, timeout=None, sleep=0.1, blocking=True, blocking_timeout=None,
              thread_local=True) -> AsyncLock:
        """lock()'s arguments; an rlock.asyncio.Lock on the same key (``async with``)."""
        return AsyncLock(self._async_client(), self.client.make_key(key, version=version), timeout=timeout,
                         sleep=sleep, blocking=blocking, blocking_timeout=blocking_timeout,
                         thread_local=thread_local)

    def _async_client(self) -> redis.asyncio.Redis:
        with self._async_guard:
            if self._async_redis is None:
                servers = self._server.split(",") if isinstance(self._server, str) else list(self._server)
                password = self._params.get("OPTIONS", {}).get("PASSWORD")
                extra = {} if password is None else {"password": password}
                self._async_redis = redis.asyncio.Redis.from_url(servers[0].strip(), **extra)
            return self._async_redis
