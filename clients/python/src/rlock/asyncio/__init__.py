"""rlock for redis.asyncio: the names of rlock, with coroutines and ``async with``;
``r.lock(name, lock_class=rlock.asyncio.Lock)``."""

from .._base import DeadlockError
from .election import Election, Leader, NoKeyspaceEvents, Observer
from .latch import CountDownLatch
from .lock import Lock, close_idle_connections
from .multilock import MultiLock
from .rwlock import ReadWriteLock
from .semaphore import Semaphore

__all__ = [
    "CountDownLatch", "DeadlockError", "Election", "Leader", "Lock", "MultiLock", "NoKeyspaceEvents",
    "Observer", "ReadWriteLock", "Semaphore", "close_idle_connections",
]
