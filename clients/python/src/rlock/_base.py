"""The core every rlock type stands on, blocking and asyncio alike: owner ids, holdings and their
bindings, which command each method sends and what each reply means. The blocking core
(_core.py) and the asyncio one (asyncio/_core.py) add only the I/O; a lock type (Lock, a
ReadWriteLock's sides, Semaphore) adds only its Family and its method names.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from types import SimpleNamespace
from typing import Any, Callable, Optional

from redis.exceptions import LockError, LockNotOwnedError, ResponseError

from ._commands import Command, to_ms, wait_until
from ._family import LOCK, Family
from ._confirm import Unconfirmed, as_confirm
from ._connections import check_client
from ._holding import Binding, Holding
from ._replies import TAKEN, DeadlockError, WrongTypeError, _decoded, acquire_refused, not_a_lock  # noqa: F401 (re-exported)

logger = logging.getLogger("rlock")

_serials = itertools.count(1)


class _ThreadSerial(threading.local):
    """A number per thread that, unlike threading.get_ident(), is never reused in this process:
    a new thread must not inherit a dead thread's owner id (it would re-enter its lock)."""

    def __init__(self):
        self.value = next(_serials)


_thread_serial = _ThreadSerial()


def thread_serial() -> int:
    return _thread_serial.value


def next_serial() -> int:
    return next(_serials)


class PerThread(threading.local):
    token = None
    holding = None


class Options:
    """The arguments every rlock type takes, and the per-thread (per-task) owner ids."""

    #: Lease (seconds) of a holding taken with timeout=None, which the server's watchdog renews
    #: while the holding's connection lives: how long it outlives a holder that went quiet.
    watchdog_lease = 30.0

    def __init__(
        self,
        redis,
        name,
        timeout: Optional[float] = None,
        blocking: bool = True,
        blocking_timeout: Optional[float] = None,
        thread_local: bool = True,
        *,
        on_lost: Optional[Callable[[Any], Any]] = None,
        watchdog_lease: Optional[float] = None,
        max_hold: Optional[float] = None,
        confirm=None,
    ):
        pool = self._check_client(redis)
        self.redis = redis
        self.name = name
        self.timeout = timeout
        self.blocking = blocking
        self.blocking_timeout = blocking_timeout
        self.thread_local = bool(thread_local)
        self.on_lost = on_lost
        if watchdog_lease is not None:
            self.watchdog_lease = watchdog_lease
        self.max_hold = max_hold
        self._id = str(uuid.uuid4())
        self._encoder = pool.get_encoder()
        self._key = self._encoder.encode(name)  # the key as the server names it in messages
        self._session = self._channels_for(pool, name)
        # None: the client's setting (rlock.configure), AUTO unless changed.
        self._confirm = self._session.confirm if confirm is None else as_confirm(confirm)

    # Set by the blocking and the asyncio core.
    want_async: bool  # the redis-py client it takes
    _channels_for: Callable  # pool -> the client's dedicated connections
    _caller_serial: Callable[[], int]  # the thread's (task's) number in owner ids
    _new_guard: Callable  # a mutex for a binding's calls and its re-binding

    def _check_client(self, redis):
        return check_client(redis, want_async=self.want_async)

    def _confirmed(self, command: Command) -> Command:
        """The command, to be confirmed by the replicas as this object's setting says."""
        if self._confirm is None:
            return command
        # Not dataclasses.replace, which costs as much as building the command (issue 46).
        return Command(command.words, command.wait_until, command.request_id, self._confirm)

    @property
    def watchdog(self) -> bool:
        """True without timeout: the server renews the holding while its connection lives."""
        return not self.timeout

    @property
    def lease_ms(self) -> int:
        return to_ms(self.timeout or self.watchdog_lease)

    def _owner(self, token=None) -> bytes:
        """Redisson's owner id shape, <uuid>:<thread>: the uuid is this object's, so a thread
        re-enters its own holding and excludes every other thread and object."""
        if token is None:
            return f"{self._id}:{self._caller_serial()}".encode()
        return self._encoder.encode(token)

    def _wait_until(self, blocking, blocking_timeout) -> Optional[float]:
        if blocking is None:
            blocking = self.blocking
        if blocking_timeout is None:
            blocking_timeout = self.blocking_timeout
        return wait_until(blocking, blocking_timeout, time.monotonic())

    def _on_lost(self, lock, what: str):
        """Calls on_lost(lock); returns what it returned (the asyncio core awaits an awaitable)."""
        logger.warning("rlock: lost %s", what)
        if self.on_lost is None:
            return None
        try:
            return self.on_lost(lock)
        except Exception:
            logger.exception("rlock: on_lost callback failed")
            return None


class HoldBase(Options):
    """A type whose holdings have owners, leases and fencing tokens: the plain lock, a side of
    a read-write lock, a semaphore's permits. `family` says which commands it sends."""

    family: Family = LOCK
    local_class = PerThread  # where a thread's (task's) holding is kept
    raise_on_release_error = True
    #: Whether an owner asking again while it holds is answered at once (a re-entry), so that
    #: nil then means its holding is gone. A semaphore's owner may wait for more permits.
    reenters_at_once = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.local = self.local_class() if self.thread_local else SimpleNamespace(token=None, holding=None)
        self._siblings = (self,)  # the objects whose holdings share this one's owner and key

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

    def _acquire_command(self, owner: bytes, blocking, blocking_timeout, amount: int = 1):
        max_hold_ms = None if self.max_hold is None else to_ms(self.max_hold)
        deadline = self._wait_until(blocking, blocking_timeout)
        return self.family.acquire(self.name, owner, self.lease_ms, self.watchdog, max_hold_ms, deadline, amount, self._confirm)

    def _settle_acquire(self, owner: bytes, reply) -> Optional[Holding]:
        """Records ACQUIRE's reply; returns the holding it created or added to (a semaphore's
        later grant), None for a re-entry or no grant."""
        known = self.local.holding
        mine = known is not None and known.owner == owner
        if reply is None:
            if mine and self.reenters_at_once:  # this owner should have re-entered: its holding is gone
                known.lost = True
            return None
        fence = int(reply)
        if mine and known.live and known.fence == fence:
            return None  # a re-entry
        if mine and known.live and not self.reenters_at_once:
            known.fence = fence  # more permits: each grant has a token of its own
            return known
        if mine:  # a new token: the holding we knew of ended without us
            known.lost = True
        binding = self._binding_of(owner) or Binding(self, owner, self._new_guard())
        holding = Holding(self, owner, fence, binding)
        binding.holdings.append(holding)
        self.local.holding, self.local.token = holding, owner
        return holding

    def _binding_of(self, owner: bytes) -> Optional[Binding]:
        """The live binding this owner has on the key already (a writer taking the read side):
        the server keeps the new holding on that binding's connection."""
        for lock in self._siblings:
            holding = lock.local.holding
            if holding is not None and holding.owner == owner and holding.binding.live:
                return holding.binding
        return None

    def _to_bind(self, holding: Optional[Holding]) -> Optional[Binding]:
        """The binding whose watchdog connection the caller must now keep: a new holding's, when
        nothing keeps its binding yet."""
        if holding is None or not self.watchdog or holding.binding.bound:
            return None
        return holding.binding

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

    def _guard_args(self, command) -> tuple[Holding, Command]:
        """The holding a guarded write runs under, and its RLOCK.GUARD call (confirmed, never
        resent: a write such as INCR must not run twice)."""
        holding = self._held("guard", "Cannot guard a write with a lock that's not owned.")
        if not command:
            raise ValueError("guard() needs a command, e.g. guard('SET', 'key', 'value')")
        return holding, self._confirmed(Command(("RLOCK.GUARD", self.name, holding.owner, holding.fence, *command)))

    def _guard_reply(self, reply):
        """The inner command's reply, decoded as the client decodes its own."""
        return _decoded(self._encoder, reply)

    def _guard_refused(self, holding: Holding, error: ResponseError) -> Exception:
        """NOTOWNER: the holding is not this thread's any more, and nothing ran."""
        if str(error).startswith("NOTOWNER"):
            return self._lose(holding, "guard")
        return error

    def _releasable(self) -> Holding:
        try:
            return self._held("release", "Cannot release a lock that's not owned or is already unlocked.")
        except LockNotOwnedError:  # as in redis-py, a release that fails still forgets the lock
            self._forget(self.local.holding)
            raise

    def _release_command(self, holding: Holding, amount: int = 1):
        return self.family.release(self.name, holding.owner, amount, self._confirm)

    def _undo_command(self, owner: bytes, amount: int = 1) -> Command:
        """Gives back an acquisition the replicas did not confirm (not itself confirmed)."""
        return self.family.release(self.name, owner, amount)

    def _grant_confirm_command(self, holding: Holding) -> Command:
        """For a grant told by message: RENEW, always, pipelined with WAIT when confirmation is
        on (the grant was written by another connection, which our WAIT does not cover); with
        WATCHDOG it also starts the server's renewals. Sent for a lease holding too, with or
        without replicas: a message read after the grant's lease ended (a paused process, a
        late subscriber) must be found gone (RENEW answers 0), never reported held beside the
        next holder (CONTRACT.md C4.2; issue 47's finding 10)."""
        return self.family.renew(self.name, holding.owner, self.lease_ms, self.watchdog, self._confirm)

    def _settle_release(self, holding: Holding, reply) -> None:
        if reply is None:
            self._forget(holding)
            raise self._lose(holding, "release")
        if int(reply) == 0:
            holding.ended = True
            self._forget(holding)

    def _release_steps(self, amount: int):
        """release()'s flow (_steps.py): under the holding's guard, the release, settled; a
        holding told by message and now ended leaves its subscriber."""
        holding = self._releasable()
        try:
            yield holding.guard.acquire()
            try:
                try:
                    reply = (yield self._session.call(self._release_command(holding, amount)))[0]
                except ResponseError as error:
                    reply = not_a_lock(error)
                except Unconfirmed as unconfirmed:  # released on the primary all the same
                    self._settle_release(holding, unconfirmed.reply)
                    raise unconfirmed.error(self.name, "released on the primary, but the release is") from None
                self._settle_release(holding, reply)
            finally:
                holding.guard.release()
        finally:
            if holding.subscriber is not None and not holding.live:
                holding.subscriber.forget(holding)

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
        return self.family.info(self.name)

    def _renew_command(self, holding: Holding, lease_ms: int):
        return self.family.renew(self.name, holding.owner, lease_ms, confirm=self._confirm)

    def _ttl_ms(self, holding: Holding, info_reply) -> int:
        """The lease left, for extend(replace_ttl=False), which adds to it."""
        entry = self._entry(holding, info_reply)
        if entry is None or entry["ttl"] < 0:
            raise self._lose(holding, "extend")
        return entry["ttl"]

    def _settle_renew(self, holding: Holding, reply, verb: str) -> bool:
        if reply != 1:
            raise self._lose(holding, verb)
        return True

    # -- locked, owned -----------------------------------------------------------------------

    def _live_holding(self) -> Optional[Holding]:
        holding = self.local.holding
        return holding if holding is not None and holding.live else None

    def _settle_owned(self, holding: Holding, info_reply) -> bool:
        return self._entry(holding, info_reply) is not None

    def _settle_locked(self, info_reply) -> bool:
        return info_reply is TAKEN or bool(self.family.holders(info_reply))

    def _entry(self, holding: Holding, info_reply) -> Optional[dict]:
        """INFO's entry for this holding, None when the server knows it no more."""
        entry = self.family.holder(info_reply, holding.owner)
        return entry if entry is not None and entry["token"] == holding.fence else None

    # -- context manager and losses ------------------------------------------------------------

    def _not_acquired(self) -> LockError:
        return LockError("Unable to acquire lock within the time specified", lock_name=self.name)

    def _release_failed(self, error: LockError) -> None:
        if self.raise_on_release_error:
            raise error
        logger.warning("Lock was unlocked or no longer owned when exiting context manager.")

    def _report_lost(self, holding: Holding):
        """Called by a keeper or a subscriber: the holding ended without a release of ours.
        Returns what on_lost returned (the asyncio core awaits an awaitable)."""
        holding.lost = True
        return self._on_lost(self, f"{self.family.message_type} {self.name!r} (owner {holding.owner!r})")


class LockBase(HoldBase):
    """RLOCK's lock with redis-py's Lock arguments; see rlock.Lock for what differs."""

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
        confirm=None,
    ):
        super().__init__(
            redis, name, timeout, blocking, blocking_timeout, thread_local,
            on_lost=on_lost, watchdog_lease=watchdog_lease, max_hold=max_hold, confirm=confirm,
        )
        self.sleep = sleep  # accepted for redis-py's signature: waiting happens in the server
        # the held state is per thread, as redis-py keeps it (asyncio's Lock too)
        self.raise_on_release_error = raise_on_release_error
