"""rlock.channels for redis.asyncio: the same dedicated connections, with one keeper task per
watchdog connection instead of a thread."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import math
import time

from redis.asyncio.retry import Retry
from redis.exceptions import ConnectionError, RedisError, ResponseError, TimeoutError

from .._commands import CALL_RETRIES, CONFIG_COMMAND, SOCKET_TIMEOUT, keepalive_interval
from .._connections import MAX_IDLE_CONNECTIONS, PerPool, lock_connection_kwargs


class Channel:
    def __init__(self, connection):
        self.connection = connection

    async def execute(self, args, read_timeout=SOCKET_TIMEOUT):
        if not self.connection.is_connected:  # redis-py would quietly connect a new socket
            raise ConnectionError("rlock: this lock connection was closed")
        await self.connection.send_command(*args, check_health=False)
        if read_timeout is SOCKET_TIMEOUT:
            return await self.connection.read_response()
        # redis-py's own timeout= returns None on expiry and leaves the reply to come in the
        # connection; bounding the read here instead makes redis-py close the connection.
        read = self.connection.read_response(timeout=math.inf)
        if read_timeout is None:
            return await read
        try:
            return await asyncio.wait_for(read, read_timeout)
        except asyncio.TimeoutError:
            raise TimeoutError("rlock: no reply within the WAIT time") from None

    async def stays_open(self, seconds: float) -> bool:
        """Watches the idle connection for `seconds`, then PINGs it. False as soon as it closes
        (or sends something nobody asked for, which only a broken connection does)."""
        try:
            if not self.connection.is_connected:
                return False
            # With a timeout, redis-py returns None when nothing came, and keeps the connection.
            if await self.connection.read_response(timeout=seconds) is not None:
                return False
            await self.execute(("PING",))
            return True
        except (RedisError, OSError):
            return False

    async def close(self) -> None:
        await self.connection.disconnect(nowait=True)


class Channels:
    """The dedicated connections of one redis.asyncio connection pool."""

    def __init__(self, pool):
        self._connection_class = pool.connection_class
        self._kwargs = lock_connection_kwargs(pool, Retry)
        self._idle = []
        self._keepers = set()  # the event loop keeps only weak references to tasks
        self._keepalive = None

    async def checkout(self) -> Channel:
        if self._idle:
            return self._idle.pop()
        connection = self._connection_class(**self._kwargs)
        await connection.connect()
        return Channel(connection)

    async def checkin(self, channel: Channel) -> None:
        if len(self._idle) < MAX_IDLE_CONNECTIONS:
            self._idle.append(channel)
        else:
            await channel.close()

    async def close_idle(self) -> None:
        idle, self._idle = self._idle, []
        for channel in idle:
            await channel.close()

    async def call(self, command, *, keep: bool = False, retries=CALL_RETRIES):
        """As rlock.channels.Channels.call."""
        for attempt in itertools.count():
            try:
                return await self._attempt(command, keep)
            except retries.errors:
                delay = retries.delay(attempt, time.monotonic())
                if delay is None:
                    raise
            await asyncio.sleep(delay)

    async def _attempt(self, command, keep: bool):
        channel = await self.checkout()
        try:
            now = time.monotonic()
            reply = await channel.execute(command.args(now), command.read_timeout(now))
        except ResponseError:  # the server answered: the connection is fine
            await self.checkin(channel)
            raise
        except BaseException:  # broken, or cancelled mid-call: its state is unknown
            await channel.close()
            raise
        if keep:
            return reply, channel
        await self.checkin(channel)
        return reply, None

    async def keep_alive(self, channel, holding) -> None:
        """As rlock.channels.Channels.keep_alive, with a keeper task."""
        if channel is None:
            return
        if holding is None:
            await self.checkin(channel)
            return
        task = asyncio.get_running_loop().create_task(Keeper(self, channel, holding).run())
        self._keepers.add(task)
        task.add_done_callback(self._keepers.discard)

    async def keepalive_interval(self) -> float:
        if self._keepalive is None:
            try:
                reply, _ = await self.call(CONFIG_COMMAND)
            except RedisError:  # CONFIG may be renamed or forbidden: assume the default
                reply = None
            self._keepalive = keepalive_interval(reply)
        return self._keepalive


class Keeper:
    """Keeps one watchdog connection, and the holding bound to it, alive."""

    def __init__(self, channels: Channels, channel: Channel, holding):
        self.channels, self.channel, self.holding = channels, channel, holding

    async def run(self) -> None:
        try:
            interval = await self.channels.keepalive_interval()
            while self.holding.live:
                if await self.channel.stays_open(interval):
                    continue
                await self.channel.close()
                if not await self._rebind():
                    return
            await self.channels.checkin(self.channel)
        except asyncio.CancelledError:  # the loop is closing: so does the lock's connection
            await self.channel.close()
            raise

    async def _rebind(self) -> bool:
        holding = self.holding
        async with holding.guard:
            if not holding.live:  # released meanwhile: nothing to keep
                return False
            try:
                reply, channel = await self.channels.call(
                    holding.rebind_command(), keep=True, retries=holding.rebind_retries()
                )
            except RedisError:
                reply, channel = None, None
            if reply == 1:
                self.channel = channel
                return True
            await self.channels.keep_alive(channel, None)
            holding.lost = True
        reported = holding.lock._report_lost(holding)
        if inspect.isawaitable(reported):
            await reported
        return False


_per_pool = PerPool(Channels)


def channels_for(pool) -> Channels:
    return _per_pool.get(pool)
