"""The blocking client's Session: the connections it keeps to one server node. Its own command
connections (Channels; _connections.py says why not redis-py's pool), the one subscriber
connection its waits are told on (subscriber.py), and the re-binding after a reconnect. Which node's Session serves a key
is the Router's (session_for; router.py for a cluster).

A Channel is one connection for one TCP session: when it fails it is closed, never reconnected,
because a reconnected socket is a new client to the server and has lost its watchdog bindings.
A call that fails on one is sent again, with the same request ID, on another.

A watchdog binding (what one owner holds of one key) keeps the channel that took it for as long
as it holds anything: the process's keeper thread (keeper.py) PINGs it when quiet and, the
moment it closes, re-binds from a new connection (RENEW ... WATCHDOG) or reports the holdings
lost; the moment the binding ends, the connection goes back to the idle list.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Optional

from redis.retry import Retry

from ._commands import SOCKET_TIMEOUT
from ._connections import MAX_IDLE_CONNECTIONS, PerPool, is_cluster, pack_commands
from ._session import BinderBase, SessionBase, execute_steps
from ._steps import drive
from .keeper import keeper
from .subscriber import NotifyUnavailable, Subscriber

logger = logging.getLogger("rlock")


class Channel:
    def __init__(self, connection, home=None):
        self.connection = connection
        self.home = home  # the Session that made it (a cluster node's), where it goes back

    def send_command(self, args) -> None:
        self.send_commands((args,))

    def send_commands(self, commands) -> None:
        connection = self.connection
        connection.send_packed_command((pack_commands(commands, connection.encoder),), check_health=False)

    def read(self, read_timeout):
        if read_timeout is SOCKET_TIMEOUT:
            return self.connection.read_response()
        return self.connection.read_response(timeout=read_timeout)

    def execute(self, args, read_timeout=SOCKET_TIMEOUT, then=None, asking=False):
        """The reply to `args` (rlock._session.execute_steps)."""
        return drive(execute_steps(self, args, read_timeout, then, asking))

    def close(self) -> None:
        self.connection.disconnect()


class Binder(BinderBase):
    """Keeping watchdog bindings (by the process's keeper) and re-binding them
    (rlock._session.BinderBase), blocking: for a node's Session, or a cluster key's route."""

    sleep = staticmethod(time.sleep)

    def keep_alive(self, channel, binding) -> None:
        """Gives `channel` to `binding` (a new watchdog binding) for as long as it holds
        anything, or back to the idle list when there is no such binding. A binding without its
        channel (one of several keys taken on one connection) is moved to one of its own."""
        if channel is None:
            if binding is not None:
                binding.lock._session.rebind_elsewhere(binding)
            return
        if binding is None:
            channel.home.checkin(channel)
            return
        keeper.keep(binding.lock._session, channel, binding)

    def rebind(self, binding) -> Optional[Channel]:
        """rlock._session.BinderBase._rebind_steps, blocking."""
        return drive(self._rebind_steps(binding))

    def rebind_elsewhere(self, binding) -> None:
        """A binding on a subscriber that closed: re-bound, the keeper keeps its new connection."""
        channel = self.rebind(binding)
        if channel is not None:
            self.keep_alive(channel, binding)


class Session(SessionBase, Binder):
    """The Session of one redis-py connection pool: its dedicated connections (a Sentinel-managed pool's
    connect to the primary the sentinels name at that moment)."""

    def __init__(self, pool):
        super().__init__(pool, Retry)
        self._idle = []
        self._mutex = threading.Lock()
        self._subscriber: Optional[Subscriber] = None
        self._subscriber_mutex = threading.Lock()

    def _connect(self, **overrides):
        connection = self._connection_class(**{**self._kwargs, **overrides})
        connection.connect()
        return connection

    def checkout(self) -> Channel:
        with self._mutex:
            if self._idle:
                return self._idle.pop()
        return Channel(self._connect(), self)

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
        with self._subscriber_mutex:
            subscriber = self._subscriber
        if subscriber is not None and subscriber.idle:
            subscriber.close()

    # -- the subscriber -------------------------------------------------------------------------

    def subscriber(self) -> Subscriber:
        """This client's subscriber, opened on first use (and anew after it closed). Raises
        NotifyUnavailable when the server cannot tell waiters by message."""
        with self._subscriber_mutex:
            if self.notify_unavailable is not None:
                raise NotifyUnavailable(self.notify_unavailable)
            if self._subscriber is not None and self._subscriber.error is None:
                return self._subscriber
            try:
                # RESP2 whatever the client speaks: the subscriber runs nothing but PING.
                self._subscriber = Subscriber.open(self, self._connect(protocol=2))
            except NotifyUnavailable as error:
                self.notify_unavailable = str(error)
                logger.warning(
                    "rlock: this server cannot tell waiters by message (%s): rlock's blocking "
                    "locks wait blocked in WAIT, on a connection per waiting call",
                    error,
                )
                raise
            return self._subscriber

    def subscriber_closed(self, subscriber: Subscriber) -> None:
        """The next wait opens a new one."""
        with self._subscriber_mutex:
            if self._subscriber is subscriber:
                self._subscriber = None

    # -- calls ----------------------------------------------------------------------------------

    def call(self, command, *, keep: bool = False, retries=None, notify: Optional[int] = None):
        """rlock._session.SessionBase._call_steps, blocking."""
        return drive(self._call_steps(command, keep, retries, notify))

    def wait_words(self, command):
        return drive(self._wait_words_steps(command))

    def keepalive_interval(self) -> float:
        return self._keepalive if self._keepalive is not None else drive(self._keepalive_steps())


_per_pool = PerPool(Session)


def session_for(source, names=None):
    """The Router's answer for `names`: a pool's one Session (one server, or the primary the
    sentinels name); for a RedisCluster, the SlotSession of `names`' slot, which follows it
    from node to node (without names: the cluster's ClusterRouter)."""
    if not is_cluster(source):
        return _per_pool.get(source)
    from .router import clusters  # noqa: PLC0415 (router.py builds on this module)

    cluster = clusters.get(source)
    return cluster if names is None else cluster.route(names)
