"""What rlock.Lock and rlock.asyncio.Lock share: their arguments, their state, which command
each method sends, and what each reply means. The two classes only add the I/O."""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable, Optional

from redis.exceptions import LockError, LockNotOwnedError, ResponseError

from ._commands import (
    acquire_command,
    info_command,
    parse_info,
    rebind_retries,
    release_command,
    renew_command,
    to_ms,
    wait_until,
)

logger = logging.getLogger("rlock")

_serials = itertools.count(1)


class _ThreadSerial(threading.local):
    """A number per thread that, unlike threading.get_ident(), is never reused in this process:
    a new thread must not inherit a dead thread's owner id (it would re-enter its lock)."""

    def __init__(self):
        self.value = next(_serials)


_thread_serial = _ThreadSerial()


def not_a_lock(error: ResponseError, otherwise: Any = None) -> Any:
    """A WRONGTYPE reply means the name holds something that is not an rlock lock (another
    writer took the name): redis-py's lock reports that as not acquired, or not owned any more,
    so it reads as the reply for "not yours" (None), or as ``otherwise`` where redis-py sees a
    taken name (locked()). Anything else is raised again."""
    if not str(error).startswith("WRONGTYPE"):
        raise error
    return otherwise


def thread_serial() -> int:
    return _thread_serial.value


def next_serial() -> int:
    return next(_serials)


class _PerThread(threading.local):
    token = None
    holding = None


@dataclass(eq=False)
class Holding:
    """One holding of the lock by one owner: from the acquire that created it (its fencing
    token) to its full release. Re-entries share it."""

    lock: "LockBase"
    owner: bytes
    fence: int
    guard: Any  # serialises this holding's calls with its keeper's re-binding
    ended: bool = False  # fully released
    lost: bool = False  # gone without a release of ours: expired, force-released, connection lost
    subscriber: Any = None  # asyncio: the subscriber told of its loss (granted with NOTIFY)

    @property
    def live(self) -> bool:
        return not (self.ended or self.lost)

    def rebind_command(self):
        lock = self.lock
        return renew_command(lock.name, self.owner, lock.lease_ms, watchdog=True)

    def rebind_retries(self):
        return rebind_retries(self.lock.lease_ms, time.monotonic())


class LockBase:
    """Arguments and behaviour as redis-py's Lock; see rlock.Lock for what differs."""

    #: Lease (seconds) of a lock taken with timeout=None, which the server's watchdog renews
    #: while the lock's connection lives: how long the lock outlives a holder that went quiet.
    watchdog_lease = 30.0

    def __init__(
        self,
        redis,
        name,
        timeout: Optional[float] = None,
        sleep: float = 0.1,
        blocking: bool = True,
        blocking_timeout: Optional[float] = None,
        thread_local: bool = True,
        raise_on_release_error: bool = True,
        *,
        on_lost: Optional[Callable[["LockBase"], Any]] = None,
        watchdog_lease: Optional[float] = None,
        max_hold: Optional[float] = None,
    ):
        pool = self._check_client(redis)
        self.redis = redis
        self.name = name
        self.timeout = timeout
        self.sleep = sleep  # accepted for redis-py's signature: waiting happens in the server
        self.blocking = blocking
        self.blocking_timeout = blocking_timeout
        self.thread_local = bool(thread_local)
        self.raise_on_release_error = raise_on_release_error
        self.on_lost = on_lost
        if watchdog_lease is not None:
            self.watchdog_lease = watchdog_lease
        self.max_hold = max_hold
        self.local = _PerThread() if self.thread_local else SimpleNamespace(token=None, holding=None)
        self._id = str(uuid.uuid4())
        self._encoder = pool.get_encoder()
        self._key = self._encoder.encode(name)  # the key as the server names it in messages
        self._channels = self._channels_for(pool)

    # Overridden by the blocking and the asyncio class.
    def _check_client(self, redis):
        raise NotImplementedError

    def _channels_for(self, pool):
        raise NotImplementedError

    def _caller_serial(self) -> int:
        raise NotImplementedError

    def _new_guard(self):
        raise NotImplementedError

    @property
    def watchdog(self) -> bool:
        """True for a lock without timeout: the server renews it while its connection lives."""
        return not self.timeout

    @property
    def lease_ms(self) -> int:
        return to_ms(self.timeout or self.watchdog_lease)

    @property
    def fence(self) -> Optional[int]:
        """The fencing token of this thread's holding (None when it holds none).

        Every new holding of a lock gets a larger token than all before it, and re-entries keep
        it. Hand it to the resource you protect, and have the resource refuse a token lower than
        the highest it has seen: a holder that paused past its lease then writes nothing::

            with r.lock("order:42", lock_class=rlock.Lock) as lock:
                db.execute(
                    "UPDATE orders SET status = 'shipped', fence = %s"
                    " WHERE id = 42 AND fence < %s",
                    (lock.fence, lock.fence),
                )
        """
        holding = self.local.holding
        return None if holding is None else holding.fence

    # -- acquire ---------------------------------------------------------------------------

    def _owner(self, token) -> bytes:
        """Redisson's owner id shape, <uuid>:<thread>: the uuid is this Lock object's, so a
        thread re-enters its own holding and excludes every other thread and Lock object."""
        if token is None:
            return f"{self._id}:{self._caller_serial()}".encode()
        return self._encoder.encode(token)

    def _acquire_command(self, owner: bytes, blocking, blocking_timeout):
        if blocking is None:
            blocking = self.blocking
        if blocking_timeout is None:
            blocking_timeout = self.blocking_timeout
        max_hold_ms = None if self.max_hold is None else to_ms(self.max_hold)
        deadline = wait_until(blocking, blocking_timeout, time.monotonic())
        return acquire_command(self.name, owner, self.lease_ms, self.watchdog, max_hold_ms, deadline)

    def _settle_acquire(self, owner: bytes, reply) -> Optional[Holding]:
        """Records RLOCK.ACQUIRE's reply; returns the holding it created, if it created one."""
        known = self.local.holding
        mine = known is not None and known.owner == owner
        if reply is None:
            if mine:  # this owner should have re-entered: its holding is gone
                known.lost = True
            return None
        fence = int(reply)
        if mine and known.live and known.fence == fence:
            return None  # a re-entry
        if mine:  # a new token: the holding we knew of ended without us
            known.lost = True
        holding = Holding(self, owner, fence, self._new_guard())
        self.local.holding, self.local.token = holding, owner
        return holding

    # -- release, extend, reacquire ---------------------------------------------------------

    def _held(self, verb: str, not_held: str) -> Holding:
        holding = self.local.holding
        if holding is None:
            raise LockError(not_held, lock_name=self.name)
        if holding.lost:
            raise self._not_owned(verb)
        return holding

    def _not_owned(self, verb: str) -> LockNotOwnedError:
        return LockNotOwnedError(f"Cannot {verb} a lock that's no longer owned", lock_name=self.name)

    def _lose(self, holding: Holding, verb: str) -> LockNotOwnedError:
        """The server says the holding is not ours any more."""
        holding.lost = True
        return self._not_owned(verb)

    def _releasable(self) -> Holding:
        try:
            return self._held("release", "Cannot release a lock that's not owned or is already unlocked.")
        except LockNotOwnedError:  # as in redis-py, a release that fails still forgets the lock
            self._forget(self.local.holding)
            raise

    def _release_command(self, holding: Holding):
        return release_command(self.name, holding.owner)

    def _settle_release(self, holding: Holding, reply) -> None:
        if reply is None:
            self._forget(holding)
            raise self._lose(holding, "release")
        if int(reply) == 0:
            holding.ended = True
            self._forget(holding)

    def _forget(self, holding: Holding) -> None:
        if self.local.holding is holding:
            self.local.holding = self.local.token = None

    def _renewable(self, verb: str) -> Holding:
        """The holding extend() or reacquire() works on, with redis-py's errors."""
        holding = self._held(verb, f"Cannot {verb} an unlocked lock")
        if self.watchdog:
            raise LockError(f"Cannot {verb} a lock with no timeout", lock_name=self.name)
        return holding

    def _info_command(self):
        return info_command(self.name)

    def _renew_command(self, holding: Holding, lease_ms: int):
        return renew_command(self.name, holding.owner, lease_ms)

    def _ttl_ms(self, holding: Holding, info_reply) -> int:
        """The lease left, for extend(replace_ttl=False), which adds to it."""
        info = parse_info(info_reply)
        if not self._is_holding(info, holding) or info["ttl"] < 0:
            raise self._lose(holding, "extend")
        return info["ttl"]

    def _settle_renew(self, holding: Holding, reply, verb: str) -> bool:
        if reply != 1:
            raise self._lose(holding, verb)
        return True

    # -- locked, owned -----------------------------------------------------------------------

    def _live_holding(self) -> Optional[Holding]:
        holding = self.local.holding
        return holding if holding is not None and holding.live else None

    def _settle_owned(self, holding: Holding, info_reply) -> bool:
        return self._is_holding(parse_info(info_reply), holding)

    @staticmethod
    def _is_holding(info: Optional[dict], holding: Holding) -> bool:
        return info is not None and info["owner"] == holding.owner and info["token"] == holding.fence

    # -- context manager and losses ------------------------------------------------------------

    def _not_acquired(self) -> LockError:
        return LockError("Unable to acquire lock within the time specified", lock_name=self.name)

    def _release_failed(self, error: LockError) -> None:
        if self.raise_on_release_error:
            raise error
        logger.warning("Lock was unlocked or no longer owned when exiting context manager.")

    def _report_lost(self, holding: Holding):
        """Called by a keeper: the holding's watchdog connection closed and re-binding it
        failed. Returns what on_lost returned (the asyncio keeper awaits an awaitable)."""
        holding.lost = True
        logger.warning("rlock: lost lock %r (owner %r)", self.name, holding.owner)
        if self.on_lost is None:
            return None
        try:
            return self.on_lost(self)
        except Exception:
            logger.exception("rlock: on_lost callback failed")
            return None
