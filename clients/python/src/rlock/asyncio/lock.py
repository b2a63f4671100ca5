"""rlock.asyncio.Lock: redis.asyncio.lock.Lock's interface on RLOCK."""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from typing import Awaitable, Literal, Optional

from redis.exceptions import LockError, ResponseError

from .._base import LockBase, next_serial, not_a_lock, thread_serial
from .._commands import to_ms
from .._connections import check_client
from . import notified
from .channels import channels_for
from .subscriber import NotifyUnavailable

_task_serials = weakref.WeakKeyDictionary()
_task_serials_mutex = threading.Lock()  # one dictionary for the event loops of all threads


def task_serial() -> int:
    """What a thread is to rlock.Lock, a task is here: the unit that re-enters its holding."""
    task = asyncio.current_task()
    if task is None:
        return thread_serial()
    with _task_serials_mutex:
        serial = _task_serials.get(task)
        if serial is None:
            serial = _task_serials[task] = next_serial()
        return serial


class Lock(LockBase):
    """A drop-in for redis.asyncio.lock.Lock: ``r.lock(name, ..., lock_class=rlock.asyncio.Lock)``.

    Semantics as rlock.Lock, with the task in the thread's place: the owner id is
    ``<uuid>:<n>`` with n a number per asyncio task, so a task re-enters its holding and other
    tasks are excluded, even through the same Lock object. As in redis-py's asyncio Lock, the
    held state is per thread, not per task (``thread_local``), so any task of the event loop's
    thread may release what another acquired. The watchdog connection's keep-alive is one
    asyncio task per connection; ``on_lost`` may be a plain function or a coroutine function.

    Waiting does not block a connection (docs/notify.md): a blocking acquire() queues with
    ``NOTIFY`` and is told its grant by a message on one subscriber connection per client and
    event loop, shared by every waiting lock (RESP3: the waiting calls run on that connection
    too; RESP2: they name its client id). A watchdog lock granted that way, or taken at once
    over RESP3, is bound to the subscriber, which PINGs every third of
    ``rlock.watchdog-idle-ms``; if the subscriber closes, pending acquires raise ConnectionError
    and its locks are re-bound from a new connection or reported lost. A ``lost`` message
    reports a lock taken that way lost (``owned()`` False, ``on_lost``). A cancelled acquire
    leaves the queue (``RLOCK.CANCEL``) and gives back a grant that came meanwhile. A server
    that cannot notify (a module without ``NOTIFY``, or an ACL user without ``&__rlock__:*``)
    is waited on as before, blocked in ``WAIT``.

    Note: on Python 3.10 and 3.11, ``asyncio.wait_for(lock.acquire(), t)`` runs acquire() in a
    task of its own, which then is the owner: use ``lock.acquire(blocking_timeout=t)``.
    """

    def _check_client(self, redis):
        return check_client(redis, want_async=True)

    def _channels_for(self, pool):
        return channels_for(pool)

    def _caller_serial(self) -> int:
        return task_serial()

    def _new_guard(self):
        return asyncio.Lock()

    async def _run(self, command, otherwise=None):
        try:
            return (await self._channels.call(command))[0]
        except ResponseError as error:
            return not_a_lock(error, otherwise)

    async def __aenter__(self) -> "Lock":
        if await self.acquire():
            return self
        raise self._not_acquired()

    async def __aexit__(self, exc_type, exc_value, traceback) -> None:
        try:
            await self.release()
        except LockError as error:
            self._release_failed(error)

    async def acquire(
        self,
        blocking: Optional[bool] = None,
        blocking_timeout: Optional[float] = None,
        token=None,
    ) -> bool:
        """As rlock.Lock.acquire (redis-py's asyncio acquire has no ``sleep``); waiting, it is
        told its grant by message instead of blocking a connection."""
        owner = self._owner(token)
        command = self._acquire_command(owner, blocking, blocking_timeout)
        try:
            if command.waits(time.monotonic()) and self._channels.notify_unavailable is None:
                try:
                    return await notified.acquire(self, owner, command)
                except NotifyUnavailable:
                    pass  # logged once per client: wait blocked in WAIT, as before NOTIFY
            reply, channel = await self._channels.call(command, keep=self.watchdog)
        except ResponseError as error:
            reply, channel = not_a_lock(error), None
        await self._channels.keep_alive(channel, self._settle_acquire(owner, reply))
        return reply is not None

    async def release(self) -> None:
        holding = self._releasable()
        try:
            async with holding.guard:
                self._settle_release(holding, await self._run(self._release_command(holding)))
        finally:
            if holding.subscriber is not None and not holding.live:
                holding.subscriber.forget(holding)

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
        return await self._run(self._info_command(), otherwise=True) is not None

    async def owned(self) -> bool:
        holding = self._live_holding()
        return holding is not None and self._settle_owned(holding, await self._run(self._info_command()))


async def close_idle_connections(redis) -> None:
    """As rlock.close_idle_connections, for a redis.asyncio client; the subscriber connection
    of the running event loop too, when nothing waits on it and no held lock is bound to it."""
    await channels_for(check_client(redis, want_async=True)).close_idle()
