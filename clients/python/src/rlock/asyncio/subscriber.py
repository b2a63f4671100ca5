"""The one connection an asyncio process waits for its locks on (docs/notify.md).

A blocking rlock.asyncio.Lock.acquire() does not block a connection of its own in the server's
queue: it sends ``RLOCK.ACQUIRE ... WAIT ms NOTIFY <client-id>``, which answers at once (the
token, or ``WAITING``), and the grant comes later as a message on the channel of one subscriber
connection, shared by every waiting lock of the same redis.asyncio client and event loop.

- RESP3 (the client's protocol=3, redis-py 8's default): the subscriber connection subscribes
  itself and keeps running commands; the messages come as push frames between the replies. The
  waiting calls (ACQUIRE ... NOTIFY, CANCEL, the confirming RENEW) go over it, so their replies
  and the messages arrive in the server's order.
- RESP2: a subscribed connection runs nothing but (UN)SUBSCRIBE and PING, so the calls go over
  rlock's other connections and name the subscriber's ``CLIENT ID`` after NOTIFY.

The subscriber asks ``RLOCK.CHANNEL`` for its channel (never builds the name: in a cluster it
holds the node's id), PINGs every third of ``rlock.watchdog-idle-ms`` (a watchdog grant told to
it is bound to it), and dispatches each message by (type, key, owner) to the waiting call or to
the holding it is about. When it closes, the server has dropped the queue entries told to it:
their calls are sent again, with their request IDs, through a new subscriber (_waiting.py;
ConnectionError only when that keeps failing), and the watchdog holdings bound to it are
re-bound from a new connection or reported lost, as when a watchdog lock's own connection closes.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import math
import time
from typing import Optional

from redis.exceptions import AskError, ConnectionError, RedisError, ResponseError

from .._commands import READ_GRACE_S
from .._commands import FailoverError, is_failover_reply
from .._confirm import settle_wait
from .._router import Moved
from .._dispatcher import Dispatcher
from .._notify import NotifyUnavailable, check_subscribed, is_message, word

__all__ = ["NotifyUnavailable", "Subscriber"]


class _Push:
    """A RESP3 push frame, told apart from a command's reply."""

    __slots__ = ("frame",)

    def __init__(self, frame):
        self.frame = frame


async def _mark_push(frame):
    return _Push(frame)


def _retrieved(future: asyncio.Future) -> None:
    """A future's exception counts as seen (nobody may be left to await it)."""
    if not future.cancelled():
        future.exception()


class Subscriber(Dispatcher):
    def __init__(self, session, connection):
        super().__init__()
        self.session = session
        self.connection = connection
        self.resp3 = int(getattr(connection, "protocol", 2) or 2) == 3
        self.channel: Optional[bytes] = None
        self._replies = collections.deque()  # futures of the calls sent, in order
        self._send_mutex = asyncio.Lock()
        self._tasks = set()
        self._last_sent = time.monotonic()
        self._reader = None
        self._pinger = None

    # -- opening and closing --------------------------------------------------------------------

    @classmethod
    async def open(cls, session, connection) -> "Subscriber":
        subscriber = cls(session, connection)
        try:
            await subscriber._start()
        except BaseException as error:
            await subscriber._close(ConnectionError(f"rlock: opening the subscriber failed: {error!r}"))
            if isinstance(error, ResponseError):
                raise NotifyUnavailable(str(error)) from error
            raise
        return subscriber

    async def _start(self) -> None:
        if self.resp3:
            parser = getattr(self.connection, "_parser", None)
            if parser is None or not hasattr(parser, "set_pubsub_push_handler"):
                raise ConnectionError("rlock: this connection's parser takes no push handler")
            parser.set_pubsub_push_handler(_mark_push)
        self._reader = self._spawn(self._read())
        self.client_id = int(await self.call(("CLIENT", "ID")))
        self.channel = word(await self.call(("RLOCK.CHANNEL",)))
        confirmation = await self.call(("SUBSCRIBE", self.channel))
        check_subscribed(confirmation)
        self._pinger = self._spawn(self._keep_alive(await self.session.keepalive_interval()))

    @property
    def idle(self) -> bool:
        """Nothing waits on it, no call is under way and no live holding is bound to it."""
        return super().idle and not self._replies

    async def close(self) -> None:
        await self._close(ConnectionError("rlock: the subscriber connection was closed"))

    async def _close(self, error: ConnectionError, rebind: bool = False) -> None:
        self.end(error, rebind)
        current = asyncio.current_task()
        for task in (self._reader, self._pinger):
            if task is not None and task is not current:
                task.cancel()
        await self.connection.disconnect(nowait=True)

    def _ended(self) -> None:
        self.session.subscriber_closed(self)
        replies, self._replies = self._replies, collections.deque()
        for future in replies:
            if not future.done():
                future.set_exception(self.error)

    def adopt(self, holding, subject: tuple, binding=None) -> None:
        if binding is not None:  # kept by this loop's subscriber: lost with the loop
            binding.loop = asyncio.get_running_loop()
        super().adopt(holding, subject, binding)

    def _spawn(self, coroutine) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- commands -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.error is not None:
            raise self.error
        if not self.connection.is_connected:  # redis-py would quietly connect a new socket
            self.end(ConnectionError("rlock: the subscriber connection closed"), rebind=True)
            raise self.error

    async def call(self, args):
        """Sends a command on the subscriber connection and returns its reply. Once sent, the
        command is not taken back by cancelling the caller."""
        sending = asyncio.ensure_future(self._send(args))
        sending.add_done_callback(_retrieved)
        future = await asyncio.shield(sending)
        return await future

    async def _send(self, args) -> asyncio.Future:
        async with self._send_mutex:
            self._check_open()
            future = asyncio.get_running_loop().create_future()
            future.add_done_callback(_retrieved)
            self._replies.append(future)
            self._last_sent = time.monotonic()
            try:
                await self.connection.send_command(*args, check_health=False)
            except asyncio.CancelledError:  # the loop is closing
                await self._close(ConnectionError("rlock: the subscriber connection was closed"))
                raise
            except BaseException as error:  # redis-py closed the connection: nothing can follow
                await self._close(error, rebind=True)
                raise self.error from error
            return future

    async def call_command(self, command):
        """A Command on the subscriber, pipelined with WAIT when it is to be confirmed
        (rlock._confirm.Unconfirmed when too few replicas acknowledged it)."""
        args = command.args(time.monotonic(), notify=self.client_id)
        then = await self.session.wait_words(command, run=lambda probe: self.call(probe.words))
        if then is None:
            return await self.call(args)
        first, second = asyncio.ensure_future(self.call(args)), asyncio.ensure_future(self.call(then))
        try:
            reply = await first
        except ResponseError:
            await asyncio.gather(second, return_exceptions=True)
            raise
        return settle_wait(command, then, reply, await second, None)

    async def call_routed(self, command, route):
        """call_command for a call that names this subscriber: a failover reply or a
        redirection (the key is served elsewhere now: `route` reads the slot map again) is
        raised as a connection error, so that the wait asks again, anew."""
        try:
            return await self.call_command(command)
        except AskError as error:
            refresh = getattr(route, "refresh", None)
            if refresh is not None:
                await refresh()
            raise Moved(str(error)) from error
        except ResponseError as error:
            if is_failover_reply(error):
                raise FailoverError(str(error)) from error
            raise

    async def sync(self) -> None:
        """Returns once every message the server sent before now has been dispatched: a PING's
        reply comes after them on the connection."""
        await self.call(("PING",))

    # -- reading --------------------------------------------------------------------------------

    async def _read(self) -> None:
        try:
            while True:
                try:
                    frame = await self.connection.read_response(timeout=math.inf, push_request=True)
                except ResponseError as error:  # a command's error reply: the connection is fine
                    self._reply(error, failed=True)
                    continue
                self._frame(frame)
        except asyncio.CancelledError:
            self.end(ConnectionError("rlock: the subscriber connection was closed"), rebind=False)
            await self.connection.disconnect(nowait=True)
            raise
        except BaseException as error:
            if self._reader.get_loop().is_closed():  # collected pending with its closed loop
                raise
            await self._close(error, rebind=True)

    def _frame(self, frame) -> None:
        if isinstance(frame, _Push):
            frame = frame.frame
            if is_message(frame):
                self._message(frame)
            else:  # subscribe, unsubscribe: the reply of SUBSCRIBE
                self._reply(list(frame))
        elif not self.resp3 and is_message(frame):
            self._message(frame)
        else:
            self._reply(frame)

    def _reply(self, reply, failed: bool = False) -> None:
        if not self._replies:
            raise ConnectionError(f"rlock: the subscriber connection sent what nobody asked for: {reply!r}")
        future = self._replies.popleft()
        if future.done():  # its caller gave up
            return
        if failed:
            future.set_exception(reply)
        else:
            future.set_result(reply)

    def _message(self, frame) -> None:
        if word(frame[1]) == self.channel:
            self.deliver(frame[2])

    # -- Dispatcher's hooks -----------------------------------------------------------------------

    def _new_future(self):
        future = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieved)
        return future

    def _report(self, holding) -> None:
        self._spawn(_report_lost(holding))

    def _rebind(self, binding) -> None:
        self._spawn(binding.lock._session.rebind_elsewhere(binding))

    # -- keep-alive -----------------------------------------------------------------------------

    async def _keep_alive(self, interval: float) -> None:
        """PINGs when nothing was sent for `interval` (a third of rlock.watchdog-idle-ms): the
        server renews a watchdog holding only for a connection that speaks. A PING left
        unanswered for three intervals means a connection gone without a word (no FIN), whose
        waits would never be told anything."""
        patience = max(3 * interval, READ_GRACE_S)
        while self.error is None:
            await asyncio.sleep(max(0.0, self._last_sent + interval - time.monotonic()))
            if time.monotonic() - self._last_sent < interval:
                continue
            try:
                await asyncio.wait_for(self.sync(), patience)
            except asyncio.TimeoutError:
                await self._close(ConnectionError(f"rlock: the subscriber did not answer PING within {patience} s"), rebind=True)
                return
            except RedisError:
                return  # closed: the reader has told everyone


async def _report_lost(holding) -> None:
    reported = holding.lock._report_lost(holding)
    if inspect.isawaitable(reported):
        await reported
