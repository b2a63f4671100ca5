"""What the blocking and the asyncio Session share, as flows (_steps.py) over their I/O: a
call's retries, one attempt on a channel (pipelined with WAIT to confirm it), the replica count
read before, the keep-alive interval, and the re-binding of a watchdog binding. session.py and
asyncio/session.py drive these flows and keep what is theirs: connecting, reading, the idle
channels, the subscriber, the keepers."""

from __future__ import annotations

import inspect
import itertools
import logging
import time
from typing import Optional

from redis.exceptions import ConnectionError, RedisError, ResponseError

from ._commands import (
    CALL_RETRIES, CONFIG_COMMAND, READ_GRACE_S, SOCKET_TIMEOUT, FailoverError, failover_retries,
    is_failover_reply, keepalive_interval,
)
from ._confirm import AUTO, ReplicaCount, settle_wait, wait_words
from ._connections import lock_connection_kwargs


logger = logging.getLogger("rlock")


def execute_steps(channel, args, read_timeout, then, asking):
    """Channel.execute's flow: the reply to `args`; with `then` (a WAIT), both are sent in one
    go and the reply is (the command's, WAIT's). With `asking`, ASKING goes first (a cluster's
    ASK)."""
    if not channel.connection.is_connected:  # redis-py would quietly connect a new socket
        raise ConnectionError("rlock: this lock connection was closed")
    if not asking and then is None:
        yield channel.send_command(args)
        return (yield channel.read(read_timeout))
    yield channel.send_commands([("ASKING",)] * asking + [args] + ([then] if then is not None else []))
    if asking:
        yield channel.read(SOCKET_TIMEOUT)
    if then is None:
        return (yield channel.read(read_timeout))
    then_timeout = then[-1] / 1000 + READ_GRACE_S
    try:
        reply = yield channel.read(read_timeout)
    except ResponseError as error:
        try:  # WAIT's reply, so that the connection stays in step (a replica refuses WAIT)
            yield channel.read(then_timeout)
        except ResponseError:
            pass
        raise error
    return reply, (yield channel.read(then_timeout))


class BinderBase:
    """Re-binding watchdog bindings, over `self._call_steps` (a node's Session, or a cluster
    key's route, which follows the key to whichever node owns it)."""

    def _rebind_steps(self, binding):
        """A watchdog binding whose connection closed: binds it from a new connection
        (RENEW ... WATCHDOG, retried while its lease may run), which it returns; else its
        holdings are lost (reported) or were released meanwhile, and it returns None."""
        yield binding.guard.acquire()
        try:
            if not binding.live:  # released meanwhile: nothing to keep
                return None
            try:
                reply, channel = yield from self._call_steps(
                    binding.rebind_command(), keep=True, retries=binding.rebind_retries()
                )
            except RedisError as error:
                logger.warning("rlock: re-binding %r failed: %r", binding.lock.name, error)
                reply, channel = None, None
            if reply == 1:
                return channel
            if channel is not None:
                yield channel.home.checkin(channel)
            lost = binding.live_holdings()
            for holding in lost:
                holding.lost = True
        finally:
            binding.guard.release()
        for holding in lost:
            reported = holding.lock._report_lost(holding)
            if inspect.isawaitable(reported):  # an asyncio on_lost coroutine function
                yield reported
        return None


class SessionBase:
    """A Session's settings and its calls' flows; `checkout`, `checkin`, `sleep` and the
    channels' methods are the subclass's (blocking, or coroutines)."""

    def __init__(self, pool, retry_class):
        self._connection_class = pool.connection_class
        self._kwargs = lock_connection_kwargs(pool, retry_class)
        self.confirm = AUTO  # the client's confirmation setting (rlock.configure)
        self.replicas = ReplicaCount()
        # A Sentinel-managed pool follows the primary: calls and waits go on through a failover.
        self.follows_failover = type(pool).__name__ == "SentinelConnectionPool"
        self._keepalive = None
        self.notify_unavailable: Optional[str] = None  # why waits block in WAIT instead

    def default_retries(self):
        return failover_retries(time.monotonic()) if self.follows_failover else CALL_RETRIES

    def _call_steps(self, command, keep: bool = False, retries=None, notify: Optional[int] = None):
        """Runs `command`; returns (reply, the channel if `keep` else None). After a connection
        error it sends the command again, unchanged but for WAIT's remaining time, on a new
        connection, as `retries` allows. With `notify` (the subscriber's client id), a call
        that waits is told by message on that connection, and its reply comes at once. A
        command with `confirm` is pipelined with WAIT; rlock._confirm.Unconfirmed when too few
        replicas acknowledged it."""
        retries = retries or self.default_retries()
        for attempt in itertools.count():
            try:
                return (yield from self._attempt_steps(command, keep, notify))
            except retries.errors:
                delay = retries.delay(attempt, time.monotonic())
                if delay is None:
                    raise
            yield self.sleep(delay)

    def _attempt_steps(self, command, keep: bool, notify: Optional[int], asking: bool = False):
        then = None if command.confirm is None else (yield from self._wait_words_steps(command))
        channel = yield self.checkout()
        try:
            now = time.monotonic()
            read_timeout = SOCKET_TIMEOUT if notify is not None else command.read_timeout(now)
            reply = yield from execute_steps(channel, command.args(now, notify), read_timeout, then, asking)
        except ResponseError as error:  # the server answered: the connection is fine
            yield self.checkin(channel)
            if is_failover_reply(error):
                self.replicas.invalidate()
                raise FailoverError(str(error)) from error
            raise
        except BaseException:  # broken, or interrupted mid-call: its state is unknown
            yield channel.close()
            self.replicas.invalidate()
            raise
        if then is not None:
            reply, waited = reply
            try:
                reply = settle_wait(command, then, reply, waited, channel if keep else None)
            except BaseException:
                if not keep:
                    yield self.checkin(channel)
                raise
        if keep:
            return reply, channel
        yield self.checkin(channel)
        return reply, None

    def _wait_words_steps(self, command, run=None):
        """The WAIT to pipeline after `command` (None: none), from this node's replica count,
        read (ROLE) at most once a second and again after a failure; `run(probe)` reads (the
        asyncio subscriber reads on itself, opening no other connection)."""
        confirm = command.confirm
        if confirm is None:
            return None
        if self.replicas.needs_reading(confirm):
            reading = self.replicas.reading(confirm)
            try:
                probe = next(reading)
                while True:
                    try:
                        if run is None:
                            reply = (yield from self._call_steps(probe, retries=CALL_RETRIES))[0]
                        else:
                            reply = yield run(probe)
                    except ResponseError as error:
                        reply = error
                    probe = reading.send(reply)
            except StopIteration:
                pass
        return wait_words(confirm, self.replicas)

    def _keepalive_steps(self):
        """Read once from the server: a third of rlock.watchdog-idle-ms."""
        if self._keepalive is None:
            try:
                reply, _ = yield from self._call_steps(CONFIG_COMMAND)
            except RedisError:  # CONFIG may be renamed or forbidden: assume the default
                reply = None
            self._keepalive = keepalive_interval(reply)
        return self._keepalive
