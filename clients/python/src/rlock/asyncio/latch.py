"""rlock.asyncio.CountDownLatch: rlock.CountDownLatch for redis.asyncio."""

from __future__ import annotations

from typing import Optional

from .._notify import NotifyUnavailable
from .._types import LatchBase
from .._waiting import LatchRequest, notifies
from ._core import Asynchronous
from .notified import wait_with_notify


class CountDownLatch(Asynchronous, LatchBase):
    """As rlock.CountDownLatch, with coroutines::

        latch = rlock.asyncio.CountDownLatch(r, "batch:7")
        await latch.try_set_count(3)
        await latch.wait(timeout=60)

    A cancelled wait() is forgotten at once; its server entry runs out by itself.
    """

    async def try_set_count(self, count: int) -> bool:
        return await self._run(self._set_count_command(count)) == 1

    async def count_down(self) -> int:
        return int(await self._run(self._count_down_command()))

    async def get_count(self) -> int:
        return int(await self._run(self._count_command()))

    async def wait(self, timeout: Optional[float] = None) -> bool:
        command = self._await_command(timeout)
        if notifies(self._session, command):
            try:
                return await wait_with_notify(self._session, LatchRequest(self, command))
            except NotifyUnavailable:
                pass
        return await self._run(command) == 1
