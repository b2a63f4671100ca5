"""rlock.asyncio.Semaphore: rlock.Semaphore for redis.asyncio."""

from __future__ import annotations

from typing import Optional

from .._types import SemaphoreBase
from ._core import Hold, OwnedByTask


class Semaphore(OwnedByTask, Hold, SemaphoreBase):
    """As rlock.Semaphore, with coroutines and ``async with``; the permits are the task's::

        sem = rlock.asyncio.Semaphore(r, "gpus")
        await sem.try_set_permits(4)
        async with sem:
            await train()

    Note: the permits are the task's, and a task that ends holding some gives them back. On
    Python 3.10 and 3.11, ``asyncio.wait_for(sem.acquire(), t)`` runs acquire() in a task of
    its own, which then owns the permits and ends at once: use ``sem.acquire(blocking_timeout=t)``.
    """

    async def try_set_permits(self, permits: int) -> bool:
        return await self._run(self._set_permits_command(permits)) == 1

    async def add_permits(self, permits: int) -> int:
        return int(await self._run(self._add_permits_command(permits)))

    async def available_permits(self) -> int:
        return self._available(await self._run(self._info_command()))

    async def acquire(self, permits: int = 1, blocking: Optional[bool] = None, blocking_timeout: Optional[float] = None) -> bool:
        return await self._acquire(self._owner(), blocking, blocking_timeout, permits)

    async def release(self, permits: int = 1) -> None:
        await self._release(permits)
