"""rlock for redis.asyncio: ``r.lock(name, lock_class=rlock.asyncio.Lock)``."""

from .lock import Lock, close_idle_connections

__all__ = ["Lock", "close_idle_connections"]
