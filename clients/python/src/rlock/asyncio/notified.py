"""A blocking acquire of rlock.asyncio.Lock that waits as a NOTIFY queue entry (docs/notify.md):
it asks once, and if the lock is taken it waits for the message on the process's subscriber.

    RLOCK.ACQUIRE key owner PX ms WAIT ms NOTIFY <subscriber's id> [WATCHDOG] ID <request-id>
      -> token            held at once
      -> WAITING          queued: `granted <token>` (held), `timeout` (False), `failed <code>`
                          (raised), or the subscriber closes (ConnectionError)

A grant with WATCHDOG is confirmed with RENEW ... WATCHDOG (renewals start then; the binding
stays on the subscriber). A wait that is given up (the task cancelled, or no message by the
deadline plus a grace) leaves the queue with RLOCK.CANCEL; a grant that raced the cancel is
released, so the next waiter gets the lock.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import time
from typing import Optional

from redis.exceptions import ConnectionError, RedisError, ResponseError, TimeoutError

from .._commands import CALL_RETRIES, cancel_command, release_command
from .._notify import FAILED, GRANTED, LOCK_TYPE, TIMEOUT, WAITING, Message
from .subscriber import Subscriber, Wait

logger = logging.getLogger("rlock")

#: How long past the WAIT deadline the server's `timeout` message may take before the wait is
#: given up here (it comes within milliseconds of the deadline).
TIMEOUT_GRACE_S = 1.0


async def acquire(lock, owner: bytes, command) -> bool:
    """Runs the acquire in a task of its own, so that cancelling the caller interrupts the wait
    but never a call on the wire. A cancelled caller waits until the wait is given up (its queue
    entry gone, a lock taken meanwhile released) before CancelledError goes on."""
    loop = asyncio.get_running_loop()
    attempt = Acquisition(lock, owner, command)
    task = loop.create_task(attempt.run())
    lock._channels.track(task)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        attempt.abandon()
        giving_up = loop.create_task(_give_up(lock, task))
        lock._channels.track(giving_up)
        await asyncio.shield(giving_up)  # cancelled again: it goes on in the background
        raise


async def _give_up(lock, task: asyncio.Task) -> None:
    """Waits for an abandoned acquire to end, and gives back the hold it took after all."""
    try:
        acquired = await task
    except Exception:
        return
    if not acquired:
        return
    try:
        await lock.release()
    except RedisError as error:
        logger.warning("rlock: releasing %r after a cancelled acquire failed: %r", lock.name, error)


class _Abandoned(Exception):
    pass


class Acquisition:
    def __init__(self, lock, owner: bytes, command):
        self.lock, self.owner, self.command = lock, owner, command
        self.channels = lock._channels
        self.subject = (LOCK_TYPE, lock._key, owner)
        self._abandoned = asyncio.get_running_loop().create_future()

    def abandon(self) -> None:
        if not self._abandoned.done():
            self._abandoned.set_result(None)

    async def run(self) -> bool:
        try:
            subscriber, wait, reply, channel = await self._ask()
        except _Abandoned:
            return False
        if wait is None:
            return await self._held_at_once(subscriber, reply, channel)
        message = await self._outcome(wait)
        if message is None:  # given up: cancelled, or no word by the deadline
            await self._leave(subscriber, wait)
            if not self._abandoned.done():
                self.lock._settle_acquire(self.owner, None)
            return False
        if message.event == GRANTED:
            return await self._granted(subscriber, message)
        if message.event == FAILED:
            raise message.error(self.lock.name)
        assert message.event == TIMEOUT, message
        self.lock._settle_acquire(self.owner, None)
        return False

    # -- asking ---------------------------------------------------------------------------------

    async def _ask(self):
        """Sends the acquire: (subscriber, its Wait or None when not queued, reply, the channel
        kept for a watchdog lock taken at once over RESP2). When the subscriber cannot be opened,
        or closes before the call was queued, the call is sent again (with the same ID, so the
        server answers a retry of what it carried out as it did the first time) through a new
        one, as often as rlock retries any call."""
        for attempt in itertools.count():
            subscriber = wait = None
            try:
                subscriber = await self.channels.subscriber()
                if self._abandoned.done():  # cancelled before anything was sent
                    raise _Abandoned
                wait = subscriber.expect(self.subject)
                reply, channel = await self._send(subscriber)
            except (ConnectionError, TimeoutError, ResponseError) as error:
                if wait is not None:
                    wait.drop()
                if subscriber is None:  # opening it failed
                    if not isinstance(error, (ConnectionError, TimeoutError)):
                        raise
                elif not self._subscriber_failed(subscriber, error):
                    raise
                delay = CALL_RETRIES.delay(attempt, time.monotonic())
                if delay is None:
                    if subscriber is None:
                        raise
                    raise subscriber.error from error
                await asyncio.sleep(delay)
                continue
            except BaseException:
                if wait is not None:
                    wait.drop()
                raise
            if reply == WAITING:
                if channel is not None:
                    await self.channels.checkin(channel)
                return subscriber, wait, reply, None
            wait.drop()
            return subscriber, None, reply, channel

    async def _send(self, subscriber: Subscriber):
        if subscriber.resp3:  # on the subscriber itself: the reply comes before any message
            args = self.command.args(time.monotonic(), notify=subscriber.client_id)
            return await subscriber.call(args), None
        return await self.channels.call(self.command, keep=self.lock.watchdog, notify=subscriber.client_id)

    @staticmethod
    def _subscriber_failed(subscriber: Subscriber, error: Exception) -> bool:
        if subscriber.error is None and isinstance(error, ResponseError) and "NOTIFY: connection" in str(error):
            # The server no longer sees it subscribed: it is as good as closed.
            subscriber._end(ConnectionError(f"rlock: the subscriber connection is gone ({error})"), rebind=True)
        return subscriber.error is not None

    # -- held at once -----------------------------------------------------------------------------

    async def _held_at_once(self, subscriber: Subscriber, reply, channel) -> bool:
        holding = self.lock._settle_acquire(self.owner, reply)
        if subscriber.resp3:  # a watchdog holding is bound to the calling connection: the subscriber
            if holding is not None:
                subscriber.adopt(holding, self.subject, bound=self.lock.watchdog)
        else:  # bound to the connection that made the call: it gets a keeper, as without NOTIFY
            await self.channels.keep_alive(channel, holding)
            if holding is not None:
                subscriber.adopt(holding, self.subject, bound=False)
        return reply is not None

    # -- waiting --------------------------------------------------------------------------------

    async def _outcome(self, wait: Wait) -> Optional[Message]:
        """The message that ends the wait, or None when it is given up first. Raises the
        subscriber's ConnectionError if it closed (the server dropped the entry)."""
        timeout = None
        if self.command.wait_until != math.inf:
            timeout = max(0.0, self.command.wait_until + TIMEOUT_GRACE_S - time.monotonic())
        await asyncio.wait((wait.future, self._abandoned), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        message = wait.message()
        if message is not None:
            wait.drop()
        return message

    async def _leave(self, subscriber: Subscriber, wait: Wait) -> None:
        """RLOCK.CANCEL; when it found nothing to remove, the entry ended meanwhile and its
        message is on its way: once it has been read, a grant is released."""
        name = self.lock.name
        try:
            if subscriber.resp3:  # the reply comes after every message sent before it
                await subscriber.call(cancel_command(name, self.owner).args(time.monotonic()))
            else:
                removed, _ = await self.channels.call(cancel_command(name, self.owner))
                if not removed:
                    await subscriber.sync()
        except RedisError as error:  # the subscriber closed: the server dropped the entry with it
            logger.debug("rlock: cancelling the wait for %r: %r", name, error)
        finally:
            wait.drop()
        try:
            message = wait.message()
        except RedisError:
            return
        if message is not None and message.event == GRANTED:
            try:
                await self.channels.call(release_command(name, self.owner))
            except RedisError as error:
                logger.warning("rlock: releasing %r, granted as its wait was given up, failed: %r", name, error)

    # -- granted --------------------------------------------------------------------------------

    async def _granted(self, subscriber: Subscriber, message: Message) -> bool:
        holding = self.lock._settle_acquire(self.owner, message.value)
        if holding is None:  # the token of a holding this owner has: a re-entry
            return True
        subscriber.adopt(holding, self.subject, bound=self.lock.watchdog)
        if self.lock.watchdog:
            await self._confirm(subscriber, holding)
        return True

    async def _confirm(self, subscriber: Subscriber, holding) -> None:
        """RENEW ... WATCHDOG: the server renews a grant told by message only from now on (a
        message dropped by a client ends at the lease). The binding stays on the subscriber."""
        command = holding.rebind_command()
        try:
            if subscriber.resp3:
                reply = await subscriber.call(command.args(time.monotonic()))
            else:
                reply, _ = await self.channels.call(command)
        except RedisError as error:
            # A closed subscriber re-binds the holding or reports it lost; otherwise the
            # unconfirmed lease ends and the `lost` notice reports it.
            logger.warning("rlock: confirming the grant of %r failed: %r", self.lock.name, error)
            return
        if reply != 1:
            subscriber.lose(holding)
