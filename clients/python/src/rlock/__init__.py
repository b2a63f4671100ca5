"""rlock: redis-py's Lock interface on RLOCK, the Redis module's reentrant, fair, fenced lock.

    import redis, rlock
    r = redis.Redis()
    with r.lock("order:42", lock_class=rlock.Lock) as lock:
        ...  # lock.fence is this holding's fencing token

rlock.asyncio.Lock does the same for redis.asyncio.
"""

from .lock import Lock, close_idle_connections

__all__ = ["Lock", "close_idle_connections"]
__version__ = "0.1.0"
