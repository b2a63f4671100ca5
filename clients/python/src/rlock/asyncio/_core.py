"""The asyncio client's core: the I/O under every asyncio type, as rlock._core is for the
blocking ones, with the task in the thread's place."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Literal

from redis.exceptions import LockError, RedisError, ResponseError

from .._base import TAKEN, HoldBase, acquire_refused, not_a_lock
from .._base import logger
from .._commands import NO_RETRIES, to_ms
from .._confirm import Unconfirmed
from .._notify import NotifyUnavailable
from .._steps import drive_async
from .._waiting import HoldRequest, notifies
from .session import session_for
from ._loops import LoopLock
from ._tasks import TaskLocal, current_unit, task_serial
from .notified import wait_with_notify

class Asynchronous:
    """The asyncio client's hooks for _base.Options."""

    want_async = True
    _channels_for = staticmethod(session_for)
    _caller_serial = staticmethod(task_serial)
    _new_guard = LoopLock  # kept in a binding, which a later loop may use

    async def _run(self, command, otherwise=None, retries=None):
        try:
            return (await self._session.call(command, retries=retries))[0]
        except ResponseError as error:
            return not_a_lock(error, otherwise)
        except Unconfirmed as unconfirmed:  # carried out on the primary: it stands there
            raise unconfirmed.error(self.name, f"{command.words[0]} stands on the primary, but is") from None

    async def _guarded(self, holding, command):
        """As rlock._core.Blocking._guarded."""
        try:
            return self._guard_reply(await self._run(command, retries=NO_RETRIES))
        except ResponseError as error:
            raise self._guard_refused(holding, error) from error


class Managed:
    """As rlock._core.Managed, with ``async with``."""

    async def __aenter__(self):
        if await self.acquire():
            return self
        raise self._not_acquired()

    async def __aexit__(self, exc_type, exc_value, traceback) -> None:
        try:
            await self.release()
        except LockError as error:
            self._release_failed(error)


class Hold(Managed, Asynchronous, HoldBase):
    """As rlock._core.Hold, for redis.asyncio: ``async with``, and coroutines."""

    #: Per task (the owner), but for the Lock, which keeps redis-py's per-thread state.
    local_class = TaskLocal

    async def _acquire(self, owner: bytes, blocking, blocking_timeout, amount: int = 1) -> bool:
        command = self._acquire_command(owner, blocking, blocking_timeout, amount)
        try:
            if notifies(self._session, command):
                request = HoldRequest(self, owner, command, amount)
                try:
                    return await wait_with_notify(self._session, request, lambda: self._release(amount))
                except NotifyUnavailable:
                    pass  # logged once per client: wait blocked in WAIT, as before NOTIFY
            reply, channel = await self._session.call(command, keep=self.watchdog)
        except ResponseError as error:
            reply, channel = acquire_refused(error, self.name), None
        except Unconfirmed as unconfirmed:
            await self._undo(owner, amount, unconfirmed)
            raise unconfirmed.error(self.name, "acquiring") from None
        await self._session.keep_alive(channel, self._to_bind(self._settle_acquire(owner, reply)))
        return reply is not None

    async def _undo(self, owner: bytes, amount: int, unconfirmed: Unconfirmed) -> None:
        """As rlock._core.Hold._undo."""
        try:
            await self._session.call(self._undo_command(owner, amount))
        except (RedisError, Unconfirmed) as error:
            logger.warning("rlock: giving back the unconfirmed acquisition of %r failed: %r", self.name, error)
        if unconfirmed.channel is not None:
            await unconfirmed.channel.close()

    async def _release(self, amount: int = 1) -> None:
        await drive_async(self._release_steps(amount))

    def extend(self, additional_time: float, replace_ttl: bool = False) -> Awaitable[Literal[True]]:
        """As rlock.Lock.extend; like redis-py, raises LockError before it is awaited."""
        return self._extend(self._renewable("extend"), additional_time, replace_ttl)

    async def _extend(self, holding, additional_time, replace_ttl) -> Literal[True]:
        async with holding.guard:
            ttl_ms = 0 if replace_ttl else self._ttl_ms(holding, await self._run(self._info_command()))
            reply = await self._run(self._renew_command(holding, ttl_ms + to_ms(additional_time)))
            return self._settle_renew(holding, reply, "extend")

    def reacquire(self) -> Awaitable[Literal[True]]:
        """As rlock.Lock.reacquire; like redis-py, raises LockError before it is awaited."""
        return self._reacquire(self._renewable("reacquire"))

    async def _reacquire(self, holding) -> Literal[True]:
        async with holding.guard:
            reply = await self._run(self._renew_command(holding, self.lease_ms))
            return self._settle_renew(holding, reply, "reacquire")

    async def locked(self) -> bool:
        return self._settle_locked(await self._run(self._info_command(), otherwise=TAKEN))

    async def owned(self) -> bool:
        holding = self._live_holding()
        return holding is not None and self._settle_owned(holding, await self._run(self._info_command()))


class OwnedByTask:
    """For an asyncio semaphore: a task that ends holding permits gives them back."""

    def _when_owner_ends(self, holding) -> None:
        task = current_unit()
        if task is not None:
            task.add_done_callback(lambda _: self._session.track(asyncio.ensure_future(self._give_back(holding))))

    async def _give_back(self, holding) -> None:
        if not holding.live:
            return
        async with holding.guard:
            release = self._orphaned(holding, await self._run(self._info_command()))
            if release is not None:
                await self._run(release)
            holding.ended = True
        if holding.subscriber is not None:
            holding.subscriber.forget(holding)
