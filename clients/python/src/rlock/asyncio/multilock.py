"""rlock.asyncio.MultiLock: rlock.MultiLock for redis.asyncio."""

from __future__ import annotations

import contextlib
from typing import Optional

from redis.exceptions import RedisError, ResponseError

from .._base import LockBase, logger, not_a_lock
from .._confirm import Unconfirmed
from .._notify import NotifyUnavailable
from .._waiting import notifies
from ..multilock import MultiLockBase
from ._core import Hold, Managed
from .notified import wait_with_notify

__all__ = ["MultiLock"]


class _Key(Hold, LockBase):
    """One key of an asyncio MultiLock (its holding is the task's)."""


class MultiLock(Managed, MultiLockBase):
    """As rlock.MultiLock, with coroutines and ``async with``; the owner is the task."""

    key_class = _Key

    async def acquire(
        self, blocking: Optional[bool] = None, blocking_timeout: Optional[float] = None, token=None
    ) -> bool:
        """As rlock.MultiLock.acquire; a cancelled wait leaves every queue."""
        owner = self._owner(token)
        command = self._acquire_command(owner, blocking, blocking_timeout)
        try:
            if notifies(self._session, command):
                try:
                    return await wait_with_notify(self._session, self._request(owner, command), self.release)
                except NotifyUnavailable:
                    pass
            reply, _ = await self._session.call(command)
        except ResponseError as error:
            reply = self._refused(error)
        except Unconfirmed as unconfirmed:
            try:
                await self._session.call(self._undo_command(owner))
            except RedisError as error:
                logger.warning("rlock: giving back the unconfirmed acquisition of %r failed: %r", self.names, error)
            raise self._unconfirmed(unconfirmed, "acquiring") from None
        for binding in self._settle_acquire(owner, reply):
            await self._session.keep_alive(None, binding)
        return reply is not None

    async def release(self) -> None:
        holdings, error = self._releasable()
        async with contextlib.AsyncExitStack() as guards:
            for _, holding in holdings:
                await guards.enter_async_context(holding.guard)
            try:
                answers = (await self._first._session.call(self._release_command(holdings)))[0]
            except ResponseError as refused:
                answers = not_a_lock(refused)
            except Unconfirmed as unconfirmed:  # released on the primary all the same
                raise self._released_unconfirmed(holdings, unconfirmed) from None
            self._settle_release(holdings, answers, error)

    async def locked(self) -> bool:
        for key in self._keys:
            if await key.locked():
                return True
        return False

    async def owned(self) -> bool:
        for key in self._keys:
            if not await key.owned():
                return False
        return True
