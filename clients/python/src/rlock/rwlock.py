"""rlock.ReadWriteLock: RWLOCK's read-write lock for redis-py."""

from __future__ import annotations

from typing import Optional

from ._core import Hold
from ._types import ReadWriteLockBase, SideBase


class Side(Hold, SideBase):
    """A side of a ReadWriteLock, with rlock.Lock's methods: acquire(), release(), extend(),
    reacquire(), owned(), locked() (anyone holds this side), ``fence``, and ``with``."""

    def acquire(self, blocking: Optional[bool] = None, blocking_timeout: Optional[float] = None) -> bool:
        """Takes this side, or re-enters it; True once held, False when not within
        ``blocking_timeout`` (or at once with ``blocking=False``). A thread that holds the
        read side asking for the write side gets LockError at once."""
        owner = self._owner()
        self._refuse_upgrade(owner)
        return self._acquire(owner, blocking, blocking_timeout)

    def release(self) -> None:
        """Gives up one hold of this side; the last one ends its holding."""
        self._release()


class ReadWriteLock(ReadWriteLockBase):
    """Many readers or one writer on RWLOCK (Redisson's RReadWriteLock)::

        rw = rlock.ReadWriteLock(r, "catalog")
        with rw.read_lock():
            ...                      # many threads and processes read together
        with rw.write_lock() as lock:
            publish(fence=lock.fence)  # one writes, alone

    Waiting is FIFO: a reader that comes while a writer waits queues behind it, so readers do
    not starve writers. Each side re-enters per thread; a thread holding the write side may
    take the read side (downgrade); a reader asking for the write side gets LockError.
    ``timeout`` None: the server's watchdog keeps the holdings while rlock's connection lives
    (as rlock.Lock); ``on_lost(side)`` is called when one ends without a release.
    """

    side_class = Side
