"""The dedicated connections rlock.Lock runs its commands on (see _connections.py for why).

A Channel is one connection for one TCP session: when it fails it is closed, never reconnected,
because a reconnected socket is a new client to the server and has lost its watchdog bindings.
A call that fails on one is sent again, with the same request ID, on another.

A watchdog lock's holding keeps the channel that took it for as long as it is held: a Keeper
thread, one per such connection, PINGs it when quiet and, the moment it closes, re-binds the
holding from a new connection (RLOCK.RENEW ... WATCHDOG) or reports the lock lost.
"""

from __future__ import annotations

import itertools
import threading
import time

from redis.exceptions import ConnectionError, RedisError, ResponseError
from redis.retry import Retry

from ._commands import CALL_RETRIES, CONFIG_COMMAND, SOCKET_TIMEOUT, keepalive_interval
from ._connections import MAX_IDLE_CONNECTIONS, PerPool, lock_connection_kwargs


class Channel:
    def __init__(self, connection):
        self.connection = connection

    def execute(self, args, read_timeout=SOCKET_TIMEOUT):
        if not self.connection.is_connected:  # redis-py would quietly connect a new socket
            raise ConnectionError("rlock: this lock connection was closed")
        self.connection.send_command(*args, check_health=False)
        if read_timeout is SOCKET_TIMEOUT:
            return self.connection.read_response()
        return self.connection.read_response(timeout=read_timeout)

    def stays_open(self, seconds: float) -> bool:
        """Watches the idle connection for `seconds`, then PINGs it. False as soon as it closes
        (or sends something nobody asked for, which only a broken connection does)."""
        try:
            if not self.connection.is_connected or self.connection.can_read(timeout=seconds):
                return False
            self.execute(("PING",))
            return True
        except (RedisError, OSError):
            return False

    def close(self) -> None:
        self.connection.disconnect()


class Channels:
    """The dedicated connections of one redis-py connection pool."""

    def __init__(self, pool):
        self._connection_class = pool.connection_class
        self._kwargs = lock_connection_kwargs(pool, Retry)
        self._idle = []
        self._mutex = threading.Lock()
        self._keepalive = None

    def checkout(self) -> Channel:
        with self._mutex:
            if self._idle:
                return self._idle.pop()
        connection = self._connection_class(**self._kwargs)
        connection.connect()
        return Channel(connection)

    def checkin(self, channel: Channel) -> None:
        with self._mutex:
            if len(self._idle) < MAX_IDLE_CONNECTIONS:
                self._idle.append(channel)
                return
        channel.close()

    def close_idle(self) -> None:
        with self._mutex:
            idle, self._idle = self._idle, []
        for channel in idle:
            channel.close()

    def call(self, command, *, keep: bool = False, retries=CALL_RETRIES):
        """Runs `command`; returns (reply, the channel if `keep` else None). After a connection
        error it sends the command again, unchanged but for WAIT's remaining time, on a new
        connection, as `retries` allows."""
        for attempt in itertools.count():
            try:
                return self._attempt(command, keep)
            except retries.errors:
                delay = retries.delay(attempt, time.monotonic())
                if delay is None:
                    raise
            time.sleep(delay)

    def _attempt(self, command, keep: bool):
        channel = self.checkout()
        try:
            now = time.monotonic()
            reply = channel.execute(command.args(now), command.read_timeout(now))
        except ResponseError:  # the server answered: the connection is fine
            self.checkin(channel)
            raise
        except BaseException:  # broken, or interrupted mid-call: its state is unknown
            channel.close()
            raise
        if keep:
            return reply, channel
        self.checkin(channel)
        return reply, None

    def keep_alive(self, channel, holding) -> None:
        """Gives `channel` to `holding` (a new watchdog holding) for as long as it is held, or
        back to the idle list when there is no such holding."""
        if channel is None:
            return
        if holding is None:
            self.checkin(channel)
            return
        Keeper(self, channel, holding).start()

    def keepalive_interval(self) -> float:
        """Read once from the server: a third of rlock.watchdog-idle-ms."""
        if self._keepalive is None:
            try:
                reply, _ = self.call(CONFIG_COMMAND)
            except RedisError:  # CONFIG may be renamed or forbidden: assume the default
                reply = None
            self._keepalive = keepalive_interval(reply)
        return self._keepalive


class Keeper(threading.Thread):
    """Keeps one watchdog connection, and the holding bound to it, alive."""

    def __init__(self, channels: Channels, channel: Channel, holding):
        super().__init__(name=f"rlock-keeper {holding.lock.name!r}", daemon=True)
        self.channels, self.channel, self.holding = channels, channel, holding

    def run(self) -> None:
        interval = self.channels.keepalive_interval()
        while self.holding.live:
            if self.channel.stays_open(interval):
                continue
            self.channel.close()
            if not self._rebind():
                return
        self.channels.checkin(self.channel)

    def _rebind(self) -> bool:
        holding = self.holding
        with holding.guard:
            if not holding.live:  # released meanwhile: nothing to keep
                return False
            try:
                reply, channel = self.channels.call(
                    holding.rebind_command(), keep=True, retries=holding.rebind_retries()
                )
            except RedisError:
                reply, channel = None, None
            if reply == 1:
                self.channel = channel
                return True
            self.channels.keep_alive(channel, None)
            holding.lost = True
        holding.lock._report_lost(holding)
        return False


_per_pool = PerPool(Channels)


def channels_for(pool) -> Channels:
    return _per_pool.get(pool)
