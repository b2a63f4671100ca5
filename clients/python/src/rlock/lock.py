"""rlock.Lock: redis-py's Lock interface on RLOCK, the reentrant, fair, fenced lock."""

from __future__ import annotations

import threading
from typing import Literal, Optional

from redis.exceptions import LockError, ResponseError

from ._base import LockBase, not_a_lock, thread_serial
from ._commands import to_ms
from ._connections import check_client
from .channels import channels_for


class Lock(LockBase):
    """A drop-in for redis.lock.Lock: ``r.lock(name, ..., lock_class=rlock.Lock)``.

    Same arguments, methods and exceptions (LockError, LockNotOwnedError) as redis-py's, with
    RLOCK's semantics:

    - Two Lock objects for one name exclude each other, and so do two threads using one Lock
      object; a thread that holds the lock re-enters it (acquire() again: the hold count goes
      up, and as many release() calls free it). The owner id is ``<uuid>:<n>``: a uuid per Lock
      object, n a number per thread that this process never reuses. ``token=...`` names the
      owner id yourself. With ``thread_local=False`` the holding is stored in the object rather
      than per thread (as redis-py stores its token), so any thread may release or extend it,
      as in redis-py; acquire() still excludes other threads.
    - ``timeout`` (seconds) given: a plain lease of that length. ``timeout=None``: the server's
      watchdog renews a ``watchdog_lease`` (30 s) lease for as long as the connection that took
      the lock lives. That connection is rlock's own, kept out of redis-py's pool while the
      lock is held; rlock PINGs it when quiet, and if it drops it re-binds the lock from a new
      one or, failing that, reports the lock lost (owned() turns False, release() raises
      LockNotOwnedError, ``on_lost(lock)`` is called from a background thread).
    - Waiting happens in the server's FIFO queue (``RLOCK.ACQUIRE ... WAIT``): no polling, so
      ``sleep`` is accepted and ignored.
    - Calls run on rlock's own connections, made from the client pool's settings but kept out
      of the pool (up to 8 idle ones per client, plus one per held watchdog lock), with
      redis-py's retries off and never reconnected in place: after a connection error rlock
      sends the call again, with the same request ID, on a new connection (3 retries), so a
      retried acquire or release never counts twice. RedisCluster clients are not supported.
    - ``lock.fence`` is the holding's fencing token.
    - extend() renews the lease to the current TTL plus ``additional_time`` (read just before),
      or to ``additional_time`` with ``replace_ttl=True``; reacquire() renews it to ``timeout``.
      Both need a ``timeout``, as in redis-py.

    Extra keyword arguments: ``on_lost``, ``watchdog_lease`` (seconds) and ``max_hold`` (seconds:
    RLOCK's MAXHOLD, a cap on the holding however it is renewed). Pass them through
    ``lock_class=functools.partial(rlock.Lock, on_lost=...)`` or by constructing the Lock.
    """

    def _check_client(self, redis):
        return check_client(redis, want_async=False)

    def _channels_for(self, pool):
        return channels_for(pool)

    def _caller_serial(self) -> int:
        return thread_serial()

    def _new_guard(self):
        return threading.Lock()

    def _run(self, command, otherwise=None):
        try:
            return self._channels.call(command)[0]
        except ResponseError as error:
            return not_a_lock(error, otherwise)

    def __enter__(self) -> "Lock":
        if self.acquire():
            return self
        raise self._not_acquired()

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        try:
            self.release()
        except LockError as error:
            self._release_failed(error)

    def acquire(
        self,
        sleep: Optional[float] = None,
        blocking: Optional[bool] = None,
        blocking_timeout: Optional[float] = None,
        token=None,
    ) -> bool:
        """Takes the lock, or re-enters it; True once held, False when not within
        ``blocking_timeout`` (or at once with ``blocking=False``). ``sleep`` is ignored."""
        owner = self._owner(token)
        command = self._acquire_command(owner, blocking, blocking_timeout)
        try:
            reply, channel = self._channels.call(command, keep=self.watchdog)
        except ResponseError as error:
            reply, channel = not_a_lock(error), None
        self._channels.keep_alive(channel, self._settle_acquire(owner, reply))
        return reply is not None

    def release(self) -> None:
        """Gives up one hold; the last one frees the lock (or hands it to the next waiter)."""
        holding = self._releasable()
        with holding.guard:
            self._settle_release(holding, self._run(self._release_command(holding)))

    def extend(self, additional_time: float, replace_ttl: bool = False) -> Literal[True]:
        """Adds ``additional_time`` seconds to the lease left, or sets the lease to it."""
        holding = self._renewable("extend")
        with holding.guard:
            ttl_ms = 0 if replace_ttl else self._ttl_ms(holding, self._run(self._info_command()))
            reply = self._run(self._renew_command(holding, ttl_ms + to_ms(additional_time)))
            return self._settle_renew(holding, reply, "extend")

    def reacquire(self) -> Literal[True]:
        """Sets the lease back to ``timeout``."""
        holding = self._renewable("reacquire")
        with holding.guard:
            reply = self._run(self._renew_command(holding, self.lease_ms))
            return self._settle_renew(holding, reply, "reacquire")

    def locked(self) -> bool:
        """True when anyone holds the lock."""
        return self._run(self._info_command(), otherwise=True) is not None

    def owned(self) -> bool:
        """True when this thread's holding is the lock's current one."""
        holding = self._live_holding()
        return holding is not None and self._settle_owned(holding, self._run(self._info_command()))


def close_idle_connections(redis) -> None:
    """Closes the idle dedicated connections rlock keeps for this client (those of held
    watchdog locks stay open until the lock is released)."""
    channels_for(check_client(redis, want_async=False)).close_idle()
