"""rlock.asyncio.Lock: redis.asyncio.lock.Lock's interface on RLOCK."""

from __future__ import annotations

from typing import Optional

from .._base import LockBase, PerThread
from .._confirm import as_confirm
from .._connections import check_client
from ._core import Hold, task_serial
from .session import session_for

__all__ = ["Lock", "close_idle_connections", "configure", "task_serial"]


class Lock(Hold, LockBase):
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
    ``rlock.watchdog-idle-ms``; if the subscriber closes, pending acquires are sent again (same
    request id) through a new one, and its locks are re-bound from a new connection or
    reported lost. A ``lost`` message reports a lock taken that way lost (``owned()`` False,
    ``on_lost``). A cancelled acquire
    leaves the queue (``RLOCK.CANCEL``) and gives back a grant that came meanwhile. A server
    that cannot notify (a module without ``NOTIFY``, or an ACL user without ``&__rlock__:*``)
    is waited on as before, blocked in ``WAIT``.

    Note: on Python 3.10 and 3.11, ``asyncio.wait_for(lock.acquire(), t)`` runs acquire() in a
    task of its own, which then is the owner: use ``lock.acquire(blocking_timeout=t)``.
    """

    local_class = PerThread

    async def acquire(
        self,
        blocking: Optional[bool] = None,
        blocking_timeout: Optional[float] = None,
        token=None,
        *,
        sleep: Optional[float] = None,
    ) -> bool:
        """As rlock.Lock.acquire; waiting, it is told its grant by message instead of blocking a
        connection. ``sleep`` (keyword-only, as in redis-py 8.2's asyncio acquire) is ignored:
        nothing polls."""
        return await self._acquire(self._owner(token), blocking, blocking_timeout)

    async def release(self) -> None:
        await self._release()

    async def guard(self, *command):
        """As rlock.Lock.guard: one write command, run only while this task holds the lock."""
        return await self._guarded(*self._guard_args(command))


def configure(redis, *, confirm) -> None:
    """As rlock.configure, for a redis.asyncio client (or RedisCluster)."""
    session_for(check_client(redis, want_async=True)).confirm = as_confirm(confirm)


async def close_idle_connections(redis) -> None:
    """As rlock.close_idle_connections, for a redis.asyncio client; the subscriber connection
    of the running event loop too, when nothing waits on it and no held lock is bound to it."""
    await session_for(check_client(redis, want_async=True)).close_idle()
