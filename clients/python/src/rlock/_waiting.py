"""A blocking acquire (or latch wait) that waits as a NOTIFY queue entry (docs/notify.md), for
every type and for the blocking and the asyncio client alike: it asks once, and if it has to
wait, it is told the outcome by a message on its process's subscriber connection.

    <TYPE>.ACQUIRE key owner ... WAIT ms NOTIFY <subscriber's id> [WATCHDOG] ID <request-id>
    RLATCH.AWAIT key WAIT ms NOTIFY <subscriber's id>
      -> token (1 for a latch)   held at once
      -> WAITING                 queued: `granted <token>` (held), `timeout` (False),
                                 `failed <code>` (raised), or the subscriber closes:
                                 the call is sent again, with the same ID, through a new
                                 subscriber (CONTRACT.md C9.2)

When the subscriber closes before the message came, the server has dropped the entry with it
(and a grant made as it closed was either bound to it, and released by its close, or stays
under its lease, unread): the same call, with the same ID, joins the queue again through a new
subscriber, or is answered the token of that grant, as a retried acquire is. It counts once.

A grant with WATCHDOG is confirmed with RENEW ... WATCHDOG (renewals start then; the binding
stays on the subscriber). A grant whose RENEW answers 0 (its lease ended before it was
confirmed: its message was read late, or the primary's clock jumped) is never reported held
(CONTRACT.md C4.2): every key of it is given back, and the call asks again, with a fresh ID,
for what is left of its wait. A wait that is given up (interrupted, or no message by the deadline
plus a grace) leaves the queue with RLOCK.CANCEL; a grant that raced the cancel is released, so
the next waiter gets it.

The flow is written once, as a generator: each I/O step is a call on `io` (a blocking or an
asyncio WaitIO) whose result the `yield` hands back; _steps.py's drive() and drive_async() run
it.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import time

from redis.exceptions import ConnectionError, RedisError, ResponseError, TimeoutError

from ._commands import CALL_RETRIES, Command, cancel_command, failover_retries, new_request_id
from ._confirm import Unconfirmed
from ._notify import FAILED, GRANTED, LATCH_TYPE, TIMEOUT, WAITING, Message
from ._router import Moved

#: What a `failed` message says when the wait's node stopped serving its key (it turned replica
#: in a failover, or the slot moved): the wait joins the queue again where the key is now.
REJOIN_CODES = ("READONLY", "MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN", "UNBLOCKED")

logger = logging.getLogger("rlock")

#: How long past the WAIT deadline the server's `timeout` message may take before the wait is
#: given up here (it comes within milliseconds of the deadline).
TIMEOUT_GRACE_S = 1.0


def notifies(session, command) -> bool:
    """Whether a call waits, and may wait by message."""
    return command.waits(time.monotonic()) and session.notify_unavailable is None


class Request:
    """A waiting call: its `command`, and the `subject` its message names."""

    def expect(self, subscriber):
        """Files the wait for the message that ends it (before the call is sent)."""
        return subscriber.expect(self.subject, self.command.wait_until)


class HoldRequest(Request):
    """What a waiting acquire of a lock, a read or write side or permits sends and settles."""

    latch = False

    def __init__(self, lock, owner: bytes, command: Command, amount: int = 1):
        self.lock, self.owner, self.command, self.amount = lock, owner, command, amount
        self.name = lock.name
        self.subject = (lock.family.message_type, lock._key, owner)
        self.keep = lock.watchdog  # the connection that takes a watchdog holding is its binding

    def settle(self, reply):
        return self.lock._settle_acquire(self.owner, reply)

    def parts(self, reply) -> list:
        """(request, its reply) per key: one here; a request for several keys has one each."""
        return [(self, reply)]

    def cancel_command(self) -> Command:
        return cancel_command(self.name, self.owner)

    def release_command(self) -> Command:
        return self.lock.family.release(self.name, self.owner, self.amount)


class LatchRequest(Request):
    """RLATCH.AWAIT: the latch's waits have no owner and hold nothing. They are not cancelled
    (RLOCK.CANCEL with an empty owner would take every wait of the connection on that latch),
    only forgotten: the server's entry runs out at its deadline, or opens unread."""

    latch = True
    keep = False

    def __init__(self, latch, command: Command):
        self.name, self.command = latch.name, command
        self.subject = (LATCH_TYPE, latch._key, b"")


class _Abandoned(Exception):
    pass


class _GrantGone(Exception):
    """The RENEW confirming a grant told by message answered 0: the grant's lease ended before
    it was confirmed (its message was read late, or the primary's clock jumped)."""


class _SubscriberClosed(Exception):
    """The subscriber closed while the call was queued: its message will not come."""

    def __init__(self, error: ConnectionError):
        super().__init__(error)
        self.error = error


class Acquisition:
    def __init__(self, io, request):
        self.io, self.request = io, request

    def _retries(self):
        """How long asking goes on through failures: through a failover (until the wait's
        deadline) on a client that follows the primary (Sentinel, Cluster)."""
        if getattr(self.io.session, "follows_failover", False):
            return failover_retries(time.monotonic(), self.request.command.wait_until)
        return CALL_RETRIES

    def run(self):
        """The flow (a generator): True when held (or the latch open), False when not. A wait
        whose subscriber closed is sent again, with the same ID, through a new one (C9.2), as
        often as any call is retried; on a client that follows the primary, for as long as a
        failover may take, and a wait told `failed READONLY` joins the queue again on the new
        primary too. Its place in line is lost. A grant that ended before it was confirmed
        asks again, a new call (fresh ID), at the back of the queue."""
        retries = self._retries()
        resending = False
        for attempt in itertools.count():
            try:
                return (yield from self._wait_once(resending))
            except _GrantGone:
                # Given back already; the same ID would be answered the ended grant's token.
                command = self.request.command
                self.request.command = dataclasses.replace(command, request_id=new_request_id())
                resending = False
                continue
            except _SubscriberClosed as closed:
                resending = True
                # C9.2: its entry went with the subscriber; the same call (same ID) goes again.
                cause = closed.error
                delay = retries.delay(attempt, time.monotonic())
                if delay is None:
                    raise cause from None
            except (ConnectionError, ResponseError) as error:
                cause = error  # `error` is unbound when the except block ends
                rejoin = retries is not CALL_RETRIES and (
                    isinstance(error, ConnectionError) or str(error).startswith(REJOIN_CODES)
                )
                delay = retries.delay(attempt, time.monotonic()) if rejoin else None
                if delay is None:
                    raise
            logger.info("rlock: the wait for %r joins the queue again: %r", self.request.name, cause)
            yield self.io.sleep(delay)

    def _wait_once(self, resending: bool = False):
        request = self.request
        try:
            subscriber, wait, reply, channel = yield from self._ask(resending)
        except _Abandoned:
            return False
        if wait is None:
            return (yield from self._held_at_once(subscriber, reply, channel))
        try:
            message = yield self.io.outcome(wait, self._give_up_at())
        except ConnectionError as error:  # only the subscriber's: it closed
            wait.drop()
            raise _SubscriberClosed(error) from error
        except BaseException:
            wait.drop()
            raise
        if message is not None:
            wait.drop()
        if message is None:  # given up: interrupted, or no word by the deadline
            yield from self._leave(subscriber, wait)
            if not self.io.abandoned and not request.latch:
                request.settle(None)
            return False
        if message.event == GRANTED:
            return (yield from self._granted(subscriber, message))
        if message.event == FAILED:
            raise message.error(request.name)
        assert message.event == TIMEOUT, message
        if not request.latch:
            request.settle(None)
        return False

    def _give_up_at(self) -> float:
        wait_until = self.request.command.wait_until
        return math.inf if wait_until == math.inf else wait_until + TIMEOUT_GRACE_S

    # -- asking ---------------------------------------------------------------------------------

    def _ask(self, resending: bool = False):
        """Sends the call: (subscriber, its Wait or None when not queued, reply, the channel
        kept for a watchdog holding taken at once). When the subscriber cannot be opened, or
        closes before the call was queued, the call is sent again (with the same ID, so the
        server answers a retry of what it carried out as it did the first time) through a new
        one, as often as rlock retries any call. A resend after the subscriber closed goes
        out even for a wait given up meanwhile: a grant lost with the subscriber is learned,
        and given back by the caller, instead of held by nobody until its lease ends."""
        io, request = self.io, self.request
        retries = self._retries()
        for attempt in itertools.count():
            subscriber = wait = None
            try:
                subscriber = yield io.subscriber()
                if io.abandoned and not resending:  # given up before anything was sent
                    raise _Abandoned
                wait = request.expect(subscriber)
                reply, channel = yield io.send(subscriber, request)
            except (ConnectionError, TimeoutError, ResponseError) as error:
                if wait is not None:
                    wait.drop()
                if subscriber is None:  # opening it failed
                    if not isinstance(error, (ConnectionError, TimeoutError)):
                        raise
                elif not (isinstance(error, Moved) or self._subscriber_failed(subscriber, error)):
                    raise
                delay = retries.delay(attempt, time.monotonic())
                if delay is None:
                    if subscriber is None:
                        raise
                    raise subscriber.error from error
                yield io.sleep(delay)
                continue
            except BaseException:
                if wait is not None:
                    wait.drop()
                raise
            if reply == WAITING:
                if channel is not None:
                    yield io.checkin(channel)
                return subscriber, wait, reply, None
            wait.drop()
            return subscriber, None, reply, channel

    @staticmethod
    def _subscriber_failed(subscriber, error: Exception) -> bool:
        if subscriber.error is None and isinstance(error, ResponseError) and "NOTIFY: connection" in str(error):
            # The server no longer sees it subscribed: it is as good as closed.
            subscriber.end(ConnectionError(f"rlock: the subscriber connection is gone ({error})"), rebind=True)
        return subscriber.error is not None

    # -- held at once -----------------------------------------------------------------------------

    def _held_at_once(self, subscriber, reply, channel):
        request = self.request
        if request.latch:
            return reply == 1
        for part, value in request.parts(reply):
            holding = part.settle(value)
            binding = part.lock._to_bind(holding)
            if self.io.calls_on(subscriber):  # a watchdog holding is bound to the calling connection
                if holding is not None:
                    subscriber.adopt(holding, part.subject, binding)
            else:  # bound to the connection that made the call: it gets a keeper, as without NOTIFY
                yield self.io.keep_alive(channel, binding)
                if holding is not None:
                    subscriber.adopt(holding, part.subject)
        return reply is not None

    # -- leaving --------------------------------------------------------------------------------

    def _leave(self, subscriber, wait):
        """RLOCK.CANCEL; when it found nothing to remove, the entry ended meanwhile and its
        message is on its way: once it has been read, a grant is released. (A latch's wait is
        only forgotten.)"""
        request = self.request
        if request.latch:
            wait.drop()
            return
        try:
            yield self.io.cancel(subscriber, wait, request.cancel_command())
        except RedisError as error:  # the subscriber closed: the server dropped the entry with it
            logger.debug("rlock: cancelling the wait for %r: %r", request.name, error)
        wait.drop()
        try:
            message = wait.message()
        except RedisError:
            return
        if message is not None and message.event == GRANTED:
            try:
                yield self.io.call(subscriber, request.release_command())
            except RedisError as error:
                logger.warning("rlock: releasing %r, granted as its wait was given up, failed: %r", request.name, error)

    # -- granted --------------------------------------------------------------------------------

    def _granted(self, subscriber, message: Message):
        request = self.request
        if request.latch:
            return True
        granted = []
        for part, value in request.parts(message.value):
            holding = part.settle(value)
            if holding is None:  # the token of a holding this owner has: a re-entry
                continue
            subscriber.adopt(holding, part.subject, part.lock._to_bind(holding))
            granted.append((part, holding))
        for part, holding in granted:
            try:
                yield from self._confirm(subscriber, part, holding)
            except Unconfirmed as unconfirmed:
                yield from self._undo(subscriber, granted)
                raise unconfirmed.error(request.name, "acquiring") from None
            except _GrantGone:
                # C4.2: not held. Someone else may hold it already; reporting it held made two
                # holders. Every key of the grant is given back, none is told lost; run() asks again.
                logger.warning("rlock: the grant of %r ended before it was confirmed: asking again", request.name)
                yield from self._undo(subscriber, granted)
                raise
        return True

    def _undo(self, subscriber, granted):
        """Gives back a grant the replicas did not confirm, or whose RENEW found it gone (every
        key of it), and forgets it."""
        try:
            yield self.io.call(subscriber, self.request.release_command())
        except RedisError as error:
            logger.warning("rlock: giving back the unconfirmed grant of %r failed: %r", self.request.name, error)
        for part, holding in granted:
            holding.ended = True
            part.lock._forget(holding)
            subscriber.forget(holding)

    def _confirm(self, subscriber, part, holding):
        """RENEW, for every grant told by message (with WATCHDOG: the server renews such a grant
        only from now on, so a message dropped by a client ends at the lease; the binding stays
        on the subscriber), pipelined with WAIT when confirmation is on: the grant was written
        by another connection, which our WAIT would not cover. RENEW answering 0: the grant is
        gone (its lease ended before its message was read) and is not held."""
        try:
            reply = yield self.io.call(subscriber, part.lock._grant_confirm_command(holding))
        except RedisError as error:
            # A closed subscriber re-binds the holding or reports it lost; otherwise the
            # unconfirmed lease ends and the `lost` notice reports it.
            logger.warning("rlock: confirming the grant of %r failed: %r", self.request.name, error)
            return
        if reply != 1:
            raise _GrantGone
