"""rlock.asyncio.ReadWriteLock: rlock.ReadWriteLock for redis.asyncio."""

from __future__ import annotations

from typing import Optional

from .._types import ReadWriteLockBase, SideBase
from ._core import Hold


class Side(Hold, SideBase):
    """As rlock.rwlock.Side, with coroutines and ``async with``; the task is the owner."""

    async def acquire(self, blocking: Optional[bool] = None, blocking_timeout: Optional[float] = None) -> bool:
        owner = self._owner()
        self._refuse_upgrade(owner)
        return await self._acquire(owner, blocking, blocking_timeout)

    async def release(self) -> None:
        await self._release()


class ReadWriteLock(ReadWriteLockBase):
    """As rlock.ReadWriteLock, for redis.asyncio::

        rw = rlock.asyncio.ReadWriteLock(r, "catalog")
        async with rw.read_lock():
            ...
    """

    side_class = Side
