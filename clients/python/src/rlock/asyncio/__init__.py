"""rlock for redis.asyncio: the names of rlock, with coroutines and ``async with``;
``r.lock(name, lock_class=rlock.asyncio.Lock)``."""

from .._base import DeadlockError, WrongTypeError
from .._confirm import Confirm, NotConfirmedError
from .._connections import CrossSlotError
from .election import Election, Leader, NoKeyspaceEvents, Observer
from .latch import CountDownLatch
from .lock import Lock, close_idle_connections, configure
from .multilock import MultiLock
from .rwlock import ReadWriteLock
from .semaphore import Semaphore

__all__ = [
    "Confirm", "CountDownLatch", "CrossSlotError", "DeadlockError", "Election", "Leader", "Lock", "MultiLock", "NoKeyspaceEvents",
    "NotConfirmedError", "Observer", "ReadWriteLock", "Semaphore", "WrongTypeError", "close_idle_connections",
    "configure",
]
