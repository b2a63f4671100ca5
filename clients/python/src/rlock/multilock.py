"""rlock.MultiLock: several RLOCK locks taken all at once or none (``RLOCK.ACQUIREALL``) and
given back together (``RLOCK.RELEASEALL``).

Each key is an ordinary RLOCK holding once taken, kept by a per-key lock object (a `_Key`,
the plain Lock's core) that shares the MultiLock's owner id: owner ids, fencing tokens, the
watchdog's keepers and re-binding, waiting by ``NOTIFY`` and loss reports are the core's.
What is here: the two commands, the wait for one message per key, and the steps that run the
keys' holdings together.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import Any, Callable, Iterable, Optional

from redis.exceptions import LockError, RedisError, ResponseError

from ._base import LockBase, acquire_refused, logger, not_a_lock
from ._confirm import NotConfirmedError, Unconfirmed
from ._connections import is_cluster
from ._router import slot_of
from ._commands import Command, cancel_command, new_request_id, to_ms
from ._core import Hold, Managed, wait_with_notify
from ._notify import GRANTED, NotifyUnavailable
from ._waiting import HoldRequest, notifies

__all__ = ["MultiLock"]


def acquire_all_command(names, owner: bytes, lease_ms: int, watchdog: bool, max_hold_ms, wait_until) -> Command:
    """``RLOCK.ACQUIREALL numkeys key [key ...] owner PX ms [WATCHDOG] [MAXHOLD ms]`` (WAIT,
    NOTIFY and ID are added as for every acquire): the tokens in the keys' order, or nil."""
    words = ["RLOCK.ACQUIREALL", len(names), *names, owner, "PX", lease_ms]
    if watchdog:
        words.append("WATCHDOG")
    if max_hold_ms is not None:
        words += ["MAXHOLD", max_hold_ms]
    return Command(tuple(words), wait_until, new_request_id())


def release_all_command(names, owner: bytes) -> Command:
    """``RLOCK.RELEASEALL numkeys key [key ...] owner``: per key, the holds left, or nil."""
    return Command(("RLOCK.RELEASEALL", len(names), *names, owner), request_id=new_request_id())


class AllWaits:
    """The waits of a request for several keys, one per key, seen as one: it ends with a
    `granted` message whose value is every key's token (in order) once all came, or with the
    first message that is not a grant (or the subscriber's error). The server sends them all
    in one go, in the keys' order."""

    def __init__(self, subscriber, waits: list):
        self.waits = waits
        self.future = subscriber._new_future()
        self._mutex = threading.Lock()
        for wait in waits:
            wait.future.add_done_callback(self._told)

    def message(self):
        """The message that ended it, None while it goes on (raises the subscriber's error)."""
        tokens = []
        for wait in self.waits:
            message = wait.message()
            if message is None:
                return None
            if message.event != GRANTED:
                return message
            tokens.append(message.value)
        return dataclasses.replace(message, value=tokens)

    def _told(self, _done) -> None:
        with self._mutex:
            if self.future.done():
                return
            try:
                message = self.message()
            except BaseException as error:
                self.future.set_exception(error)
                return
            if message is not None:
                self.future.set_result(message)

    def drop(self) -> None:
        for wait in self.waits:
            wait.drop()


class AllRequest:
    """What a waiting ``RLOCK.ACQUIREALL`` sends and settles (rlock._waiting's flow): a part
    per key, each settled as a single lock's acquire would be."""

    latch = False
    keep = False  # each key's watchdog binding moves to a connection of its own

    def __init__(self, multi: "MultiLockBase", owner: bytes, command: Command):
        self.owner, self.command, self.name = owner, command, multi.names
        self._parts = [HoldRequest(key, owner, command) for key in multi._keys]

    def expect(self, subscriber) -> AllWaits:
        return AllWaits(subscriber, [part.expect(subscriber) for part in self._parts])

    def parts(self, reply) -> list:
        return list(zip(self._parts, reply or ()))

    def settle(self, reply) -> None:
        """Not granted: that says nothing of the keys this owner holds already."""

    def cancel_command(self) -> Command:
        return cancel_command(self._parts[0].name, self.owner)  # takes the request out of every queue

    def release_command(self) -> Command:
        return release_all_command(self.name, self.owner)


class MultiLockBase:
    """What the blocking and the asyncio MultiLock share: the keys, the commands, and what the
    replies mean."""

    key_class: type  # the per-key lock object: the plain Lock's core

    def __init__(
        self,
        redis,
        names: Iterable,
        timeout: Optional[float] = None,
        blocking: bool = True,
        blocking_timeout: Optional[float] = None,
        thread_local: bool = True,
        raise_on_release_error: bool = True,
        *,
        on_lost: Optional[Callable[[Any], Any]] = None,
        watchdog_lease: Optional[float] = None,
        max_hold: Optional[float] = None,
        confirm=None,
    ):
        self.names = list(names)
        if not self.names:
            raise ValueError("a MultiLock needs at least one name")
        if is_cluster(redis):
            slot_of(redis, self.names)  # CrossSlotError, naming hash tags, before anything is sent
        self.redis = redis
        report = None if on_lost is None else (lambda _key: on_lost(self))
        self._keys = [
            self.key_class(
                redis, name, timeout, blocking=blocking, blocking_timeout=blocking_timeout,
                thread_local=thread_local, raise_on_release_error=raise_on_release_error,
                on_lost=report, watchdog_lease=watchdog_lease, max_hold=max_hold, confirm=confirm,
            )
            for name in self.names
        ]
        first = self._first = self._keys[0]
        for key in self._keys[1:]:
            key._id = first._id  # one owner id for every key: the server sees one owner
        self._session = first._session

    @property
    def tokens(self) -> list:
        """The fencing token of each key this thread (task) holds, in the names' order (None
        for a key it does not hold)."""
        return [key.fence for key in self._keys]

    def _owner(self, token=None) -> bytes:
        return self._first._owner(token)

    def _acquire_command(self, owner: bytes, blocking, blocking_timeout) -> Command:
        first = self._first
        max_hold_ms = None if first.max_hold is None else to_ms(first.max_hold)
        deadline = first._wait_until(blocking, blocking_timeout)
        return first._confirmed(acquire_all_command(self.names, owner, first.lease_ms, first.watchdog, max_hold_ms, deadline))

    def _undo_command(self, owner: bytes) -> Command:
        return release_all_command(self.names, owner)

    def _unconfirmed(self, unconfirmed: Unconfirmed, what: str):
        return unconfirmed.error(self.names, what)

    def _request(self, owner: bytes, command: Command) -> AllRequest:
        return AllRequest(self, owner, command)

    def _refused(self, error: ResponseError):
        """DEADLOCK raises DeadlockError; WRONGTYPE (a key of another type) WrongTypeError, as
        for the single lock."""
        return acquire_refused(error, self.names)

    def _settle_acquire(self, owner: bytes, reply) -> list:
        """Records the keys' holdings; returns the watchdog bindings to keep alive."""
        if reply is None:
            return []
        bindings = [key._to_bind(key._settle_acquire(owner, token)) for key, token in zip(self._keys, reply)]
        return [binding for binding in bindings if binding is not None]

    def _releasable(self) -> tuple:
        """The (key, holding) pairs to give back, and the error to raise once they are (a key
        whose holding is gone). Raises it at once when no key is held."""
        holdings, error = [], None
        for key in self._keys:
            try:
                holdings.append((key, key._releasable()))
            except LockError as failed:
                error = error or failed
        if not holdings:
            raise error
        return holdings, error

    def _release_command(self, holdings) -> Command:
        return self._first._confirmed(release_all_command([key.name for key, _ in holdings], holdings[0][1].owner))

    @staticmethod
    def _settle_release(holdings, answers, error) -> None:
        answers = answers if answers is not None else [None] * len(holdings)
        for (key, holding), answer in zip(holdings, answers):
            try:
                key._settle_release(holding, answer)
            except LockError as failed:
                error = error or failed
            finally:
                if holding.subscriber is not None and not holding.live:
                    holding.subscriber.forget(holding)
        if error is not None:
            raise error

    def _released_unconfirmed(self, holdings, unconfirmed: Unconfirmed) -> NotConfirmedError:
        """A release that stands on the primary though the replicas did not confirm it: each
        name is settled by the server's reply (a re-entered name keeps the holds it has left),
        and the error to raise is returned."""
        try:
            self._settle_release(holdings, unconfirmed.reply, None)
        except LockError:  # a name already lost: said after the confirmation, which matters more
            pass
        return self._unconfirmed(unconfirmed, "released on the primary, but the release is")

    def _not_acquired(self) -> LockError:
        return LockError(f"Unable to acquire all of {self.names!r} within the time specified")

    def _release_failed(self, error: LockError) -> None:
        self._first._release_failed(error)


class _Key(Hold, LockBase):
    """One key of a blocking MultiLock."""


class MultiLock(Managed, MultiLockBase):
    """Several RLOCK locks taken all at once or none: ``rlock.MultiLock(r, ["a", "b"])``.

    acquire() takes every name or none (``RLOCK.ACQUIREALL``); waiting, the request holds one
    place in every name's queue and is let in when all can be granted in one step (a
    single-key waiter behind it waits too, even while its key is free). Each name is then an
    ordinary RLOCK holding with its own fencing token (``tokens``, in the names' order), and
    release() gives them all back (``RLOCK.RELEASEALL``). Arguments, owner ids (``token=``),
    the watchdog (``timeout=None``: each name's binding gets its own connection and keeper),
    waiting by ``NOTIFY``, ``on_lost`` (called with the MultiLock), re-entry and the errors
    are rlock.Lock's; a wait that would close a cycle of owners raises DeadlockError at once.
    In Redis Cluster all names must share a hash slot (``{tag}``).
    """

    key_class = _Key

    def acquire(self, blocking: Optional[bool] = None, blocking_timeout: Optional[float] = None, token=None) -> bool:
        """Takes every name (re-entering those this thread holds); True once held, False when
        not within ``blocking_timeout`` (at once with ``blocking=False``): then none is taken."""
        owner = self._owner(token)
        command = self._acquire_command(owner, blocking, blocking_timeout)
        try:
            if notifies(self._session, command):
                try:
                    return wait_with_notify(self._session, self._request(owner, command), self.release)
                except NotifyUnavailable:
                    pass  # wait blocked in WAIT, as rlock.Lock does
            reply, _ = self._session.call(command)
        except ResponseError as error:
            reply = self._refused(error)
        except Unconfirmed as unconfirmed:
            try:
                self._session.call(self._undo_command(owner))
            except RedisError as error:
                logger.warning("rlock: giving back the unconfirmed acquisition of %r failed: %r", self.names, error)
            raise self._unconfirmed(unconfirmed, "acquiring") from None
        for binding in self._settle_acquire(owner, reply):
            self._session.keep_alive(None, binding)
        return reply is not None

    def release(self) -> None:
        """Gives up one hold of every name; LockNotOwnedError (after the others are released)
        when one was no longer this thread's."""
        holdings, error = self._releasable()
        with contextlib.ExitStack() as guards:
            for _, holding in holdings:
                guards.enter_context(holding.guard)
            try:
                answers = self._first._session.call(self._release_command(holdings))[0]
            except ResponseError as refused:
                answers = not_a_lock(refused)
            except Unconfirmed as unconfirmed:  # released on the primary all the same
                raise self._released_unconfirmed(holdings, unconfirmed) from None
            self._settle_release(holdings, answers, error)

    def locked(self) -> bool:
        """True when anyone holds any of the names."""
        return any(key.locked() for key in self._keys)

    def owned(self) -> bool:
        """True when this thread holds every name."""
        return all(key.owned() for key in self._keys)
