"""rlock.Lock: redis-py's Lock interface on RLOCK, the reentrant, fair, fenced lock."""

from __future__ import annotations

from typing import Optional

from ._base import LockBase
from ._confirm import as_confirm
from ._connections import check_client
from ._core import Hold
from .session import session_for


class Lock(Hold, LockBase):
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
    - Waiting happens in the server's FIFO queue: no polling, so ``sleep`` is accepted and
      ignored. A waiting acquire() does not block a connection: it queues with ``NOTIFY`` and
      sleeps until one subscriber connection per client and process, shared by every waiting
      thread, is told its grant (docs/notify.md); a server that cannot notify (a module
      without ``NOTIFY``, an ACL user without ``&__rlock__:*``) is waited on blocked in
      ``WAIT``, one connection per waiting call.
    - Calls run on rlock's own connections, made from the client pool's settings but kept out
      of the pool (up to 8 idle ones per client, plus one per held watchdog lock), with
      redis-py's retries off and never reconnected in place: after a connection error rlock
      sends the call again, with the same request ID, on a new connection (3 retries; through a
      failover, up to 30 s, for Sentinel and Cluster clients), so a retried acquire or release
      never counts twice. A Sentinel ``master_for()`` client and a RedisCluster work as they
      are (each key on its slot's primary).
    - Each write is confirmed by the replicas connected to the primary (``WAIT``), unless
      ``confirm=False``: an acquisition they did not confirm in time is released and raises
      rlock.NotConfirmedError (``confirm=rlock.Confirm(...)`` for the count, timeout, AOF).
    - ``lock.fence`` is the holding's fencing token.
    - extend() renews the lease to the current TTL plus ``additional_time`` (read just before),
      or to ``additional_time`` with ``replace_ttl=True``; reacquire() renews it to ``timeout``.
      Both need a ``timeout``, as in redis-py.

    Extra keyword arguments: ``on_lost``, ``watchdog_lease`` (seconds), ``max_hold`` (seconds:
    RLOCK's MAXHOLD, a cap on the holding however it is renewed) and ``confirm``. Pass them through
    ``lock_class=functools.partial(rlock.Lock, on_lost=...)`` or by constructing the Lock.
    """

    def acquire(
        self,
        sleep: Optional[float] = None,
        blocking: Optional[bool] = None,
        blocking_timeout: Optional[float] = None,
        token=None,
    ) -> bool:
        """Takes the lock, or re-enters it; True once held, False when not within
        ``blocking_timeout`` (or at once with ``blocking=False``). ``sleep`` is ignored."""
        return self._acquire(self._owner(token), blocking, blocking_timeout)

    def release(self) -> None:
        """Gives up one hold; the last one frees the lock (or hands it to the next waiter)."""
        self._release()

    def guard(self, *command):
        """Runs one write command, ``guard("SET", "k", "v")``, only while this thread holds the
        lock with its current token (``RLOCK.GUARD``), atomically in the server; returns its
        reply. Raises LockNotOwnedError, and runs nothing, when the holding is gone. It runs on
        rlock's connection to the key's primary and is never resent after a dropped connection
        (a write such as INCR must not run twice); with confirmation on, it is confirmed as an
        acquisition is (NotConfirmedError: it ran on the primary)."""
        return self._guarded(*self._guard_args(command))


def configure(redis, *, confirm) -> None:
    """Sets how the writes of rlock objects made from now on for this client are confirmed by
    the replicas (each object's ``confirm=`` overrides it): a rlock.Confirm, ``"auto"`` (the
    default), ``"aof"``, a replica count, or False (no confirmation)."""
    session_for(check_client(redis, want_async=False)).confirm = as_confirm(confirm)


def close_idle_connections(redis) -> None:
    """Closes the idle dedicated connections rlock keeps for this client (those of held
    watchdog locks stay open until the lock is released)."""
    session_for(check_client(redis, want_async=False)).close_idle()
