"""The blocking client's core: the I/O under every blocking type (rlock.Lock, ReadWriteLock's
sides, Semaphore, CountDownLatch). What is sent and what replies mean is in _base.py; the
waiting flow in _waiting.py; the connections in session.py and subscriber.py."""

from __future__ import annotations

import _signal
import concurrent.futures
import math
import threading
import time
import weakref
from signal import SIGINT, default_int_handler
from threading import get_ident
from typing import Literal

from redis.exceptions import LockError, RedisError, ResponseError

from ._base import TAKEN, HoldBase, acquire_refused, logger, not_a_lock, thread_serial
from ._commands import NO_RETRIES, READ_GRACE_S, to_ms
from ._confirm import Unconfirmed
from ._notify import NotifyUnavailable
from ._steps import drive
from ._waiting import Acquisition, HoldRequest, notifies
from .session import session_for


#: A waiting main thread looks for signals (Ctrl-C) this often: a signal may be taken by another
#: thread (the subscriber's reader), and the main thread runs its handler only when it wakes.
SIGNAL_CHECK_S = 0.1


class BlockingIO:
    """The blocking client's steps of the waiting flow: each runs when the flow yields it."""

    def __init__(self, session):
        self.session = session
        self.abandoned = False
        self.interrupt = None  # a KeyboardInterrupt (say) that came while waiting: raised after leaving

    def _interrupted(self, interrupt: BaseException) -> None:
        self.abandoned, self.interrupt = True, interrupt

    def subscriber(self):
        return self.session.subscriber()

    def send(self, subscriber, request):
        try:
            return self.session.call(request.command, keep=request.keep, notify=subscriber.client_id)
        except (RedisError, Unconfirmed):
            raise
        except BaseException as interrupt:
            self._interrupted(interrupt)
        # Interrupted mid-call: the same call (its ID) tells whether the server carried it out.
        return self.session.call(request.command, keep=request.keep, notify=subscriber.client_id)

    def calls_on(self, subscriber) -> bool:
        return False  # the calls go over rlock's other connections and name the subscriber

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def checkin(self, channel) -> None:
        self.session.checkin(channel)

    def keep_alive(self, channel, binding) -> None:
        self.session.keep_alive(channel, binding)

    def outcome(self, wait, give_up_at: float):
        """The message that ends the wait; None when it is given up (interrupted, or nothing
        by `give_up_at`). Raises the subscriber's ConnectionError if it closed."""
        main = threading.current_thread() is threading.main_thread()
        try:
            while not self.abandoned:
                left = give_up_at - time.monotonic()
                if left <= 0:
                    return None
                timeout = min(left, SIGNAL_CHECK_S) if main else (None if left == math.inf else left)
                try:
                    return wait.future.result(timeout)
                except concurrent.futures.TimeoutError:
                    continue
        except RedisError:
            raise
        except BaseException as interrupt:
            self._interrupted(interrupt)
        return None

    def cancel(self, subscriber, wait, command) -> None:
        removed, _ = self.session.call(command)
        if not removed:  # the entry ended meanwhile: its message is on its way
            try:
                wait.future.result(READ_GRACE_S)
            except Exception:
                pass

    def call(self, subscriber, command):
        return self.session.call(command)[0]


def wait_with_notify(session, request, give_back=None):
    """Runs a waiting call as a NOTIFY queue entry: True/False, or NotifyUnavailable when the
    server cannot tell waiters by message (the caller then waits blocked in WAIT). Interrupted
    (Ctrl-C), it leaves the queue, gives back with `give_back()` what it got meanwhile, and
    raises the interrupt.

    On the main thread with Python's own Ctrl-C handler, a SIGINT gives the wait up (its flow
    leaves the queue at its next step) instead of raising wherever the thread is, which between
    two steps would skip the RLOCK.CANCEL and leave the entry to be granted. The handler is
    swapped with _signal's calls: signal.signal's enum conversions cost an uncontended pair on
    the main thread more than a round trip's parsing (issue 46)."""
    io = BlockingIO(session)
    deferred = get_ident() == _main_ident() and _signal.getsignal(SIGINT) is default_int_handler
    if deferred:
        previous = _signal.signal(SIGINT, lambda signum, frame: io._interrupted(KeyboardInterrupt()))
    try:
        result = drive(Acquisition(io, request).run())
        if io.interrupt is not None and result and give_back is not None:
            give_back()
    finally:
        if deferred:
            _signal.signal(SIGINT, previous)
    if io.interrupt is not None:
        raise io.interrupt
    return result


def _main_ident() -> int:
    return threading.main_thread().ident


class Blocking:
    """The blocking client's hooks for _base.Options."""

    want_async = False
    _channels_for = staticmethod(session_for)
    _caller_serial = staticmethod(thread_serial)
    _new_guard = staticmethod(threading.Lock)

    def _run(self, command, otherwise=None, retries=None):
        try:
            return self._session.call(command, retries=retries)[0]
        except ResponseError as error:
            return not_a_lock(error, otherwise)
        except Unconfirmed as unconfirmed:  # carried out on the primary: it stands there
            raise unconfirmed.error(self.name, f"{command.words[0]} stands on the primary, but is") from None

    def _guarded(self, holding, command):
        """RLOCK.GUARD on rlock's connection to the key's primary, never resent."""
        try:
            return self._guard_reply(self._run(command, retries=NO_RETRIES))
        except ResponseError as error:
            raise self._guard_refused(holding, error) from error


class Managed:
    """The context manager of a blocking type: acquire() on entry (LockError when not
    acquired), release() on exit."""

    def __enter__(self):
        if self.acquire():
            return self
        raise self._not_acquired()

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        try:
            self.release()
        except LockError as error:
            self._release_failed(error)


class Hold(Managed, Blocking, HoldBase):
    """The methods of every blocking type whose holdings have owners: acquire, release, extend,
    reacquire, locked, owned, and the context manager."""

    def _acquire(self, owner: bytes, blocking, blocking_timeout, amount: int = 1) -> bool:
        """Takes (or re-enters, or adds to) this owner's holding; True once held. Waiting, it is
        told its grant by message; without NOTIFY it waits blocked in WAIT."""
        command = self._acquire_command(owner, blocking, blocking_timeout, amount)
        try:
            if notifies(self._session, command):
                try:
                    request = HoldRequest(self, owner, command, amount)
                    return wait_with_notify(self._session, request, lambda: self._release(amount))
                except NotifyUnavailable:
                    pass  # logged once per client: wait blocked in WAIT, as before NOTIFY
            reply, channel = self._session.call(command, keep=self.watchdog)
        except ResponseError as error:
            reply, channel = acquire_refused(error, self.name), None
        except Unconfirmed as unconfirmed:
            self._undo(owner, amount, unconfirmed)
            raise unconfirmed.error(self.name, "acquiring") from None
        self._session.keep_alive(channel, self._to_bind(self._settle_acquire(owner, reply)))
        return reply is not None

    def _undo(self, owner: bytes, amount: int, unconfirmed: Unconfirmed) -> None:
        """Gives back an acquisition the replicas did not confirm: RELEASE (with an ID), and the
        connection it was bound to closed (which alone would release a new watchdog holding)."""
        try:
            self._session.call(self._undo_command(owner, amount))
        except (RedisError, Unconfirmed) as error:
            logger.warning("rlock: giving back the unconfirmed acquisition of %r failed: %r", self.name, error)
        if unconfirmed.channel is not None:
            unconfirmed.channel.close()

    def _release(self, amount: int = 1) -> None:
        drive(self._release_steps(amount))

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
        """True when anyone holds it (for a read-write lock's side: holds that side)."""
        return self._settle_locked(self._run(self._info_command(), otherwise=TAKEN))

    def owned(self) -> bool:
        """True when this thread's holding is the current one."""
        holding = self._live_holding()
        return holding is not None and self._settle_owned(holding, self._run(self._info_command()))


class _Life:
    """Kept in a thread's local state: collected when the thread ends."""


class _Orphans:
    """Gives back what ended threads held (their semaphores' permits), each in a short thread of
    its own, so a finalizer run by a dying thread only hands over the holding, and one give-back
    that waits (its binding being re-bound for up to a lease, its server gone) holds up no
    other."""

    @staticmethod
    def put(holding) -> None:
        threading.Thread(target=_Orphans._give_back, args=(holding,), name="rlock-orphan", daemon=True).start()

    @staticmethod
    def _give_back(holding) -> None:
        try:
            holding.lock._give_back(holding)
        except Exception:
            logger.exception("rlock: giving back what an ended thread held failed")


_orphans = _Orphans()


class OwnedByThread:
    """For a blocking semaphore: a thread that ends holding permits gives them back."""

    def _when_owner_ends(self, holding) -> None:
        life = self.local.life = _Life()  # replaces an older one, whose holding has ended
        weakref.finalize(life, _orphans.put, holding).atexit = False

    def _give_back(self, holding) -> None:
        if not holding.live:
            return
        with holding.guard:
            release = self._orphaned(holding, self._run(self._info_command()))
            if release is not None:
                self._run(release)
            holding.ended = True
        if holding.subscriber is not None:
            holding.subscriber.forget(holding)
