"""The blocking client's Router on a RedisCluster: every call for a key goes to the primary
that owns its hash slot, through that node's Session (as for a single server); MOVED and a node that fails refresh redis-py's slot map and send the call again, with
the same ID, to the node named now; ASK sends it once to the node named, after ASKING.

A lock object's `_session` is a SlotSession: the Session interface for one hash slot, always
talking to whichever node owns that slot now. Its watchdog holdings are re-bound through it
(so after a failover, on the new primary), and its waits are told on the subscriber of the
node that owns the key (a NOTIFY channel names the node: RLOCK.CHANNEL there).
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref

from redis.exceptions import (
    AskError, ClusterCrossSlotError, ConnectionError, MovedError, RedisClusterException, ResponseError, TimeoutError,
)

from ._commands import CALL_RETRIES, failover_retries
from ._confirm import AUTO
from ._connections import PerPool, cross_slot, node_source
from ._router import REFRESH_EVERY_S, redirected, slot_of
from .session import Binder, Session


class ClusterRouter:
    """The Router of one RedisCluster client: which node serves a key (redis-py's slot map,
    read again after MOVED or a failure), and the Session of each node."""

    def __init__(self, cluster):
        self._cluster = weakref.ref(cluster)  # kept per client: must not keep the client alive
        self.confirm = AUTO
        self._nodes = {}  # node name -> Session
        self._routes = weakref.WeakValueDictionary()  # slot -> SlotSession
        self._mutex = threading.Lock()
        self._refreshed_at = 0.0

    def route(self, names) -> "SlotSession":
        slot = slot_of(self._cluster(), names)
        with self._mutex:
            route = self._routes.get(slot)
            if route is None:
                route = self._routes[slot] = SlotSession(self, slot)
            return route

    def node(self, slot: int) -> Session:
        """The Session of the slot's primary; ConnectionError (retried) while redis-py's slot
        map has none (it is being read again, or the cluster is reconfiguring)."""
        try:
            return self.at(self._cluster().nodes_manager.get_node_from_slot(slot))
        except (KeyError, IndexError, RedisClusterException) as error:
            raise ConnectionError(f"rlock: no primary known for slot {slot} yet ({error!r})") from error

    def at(self, node) -> Session:
        with self._mutex:
            session = self._nodes.get(node.name)
            if session is None:
                session = self._nodes[node.name] = Session(node_source(node))
                session.follows_failover = True
            return session

    def named(self, host, port):
        """The Session of the node a redirection names (None if redis-py does not know it)."""
        node = self._cluster().nodes_manager.get_node(host, port)
        return None if node is None else self.at(node)

    def refresh(self) -> None:
        """Reads the slot map again (at most every REFRESH_EVERY_S: a failover makes many
        calls fail at once)."""
        with self._mutex:
            if time.monotonic() - self._refreshed_at < REFRESH_EVERY_S:
                return
            self._refreshed_at = time.monotonic()
        try:
            self._cluster().nodes_manager.initialize()
        except (ConnectionError, TimeoutError, ResponseError, RedisClusterException):
            pass  # no node answers yet: the next attempt tries again

    def close_idle(self) -> None:
        for session in list(self._nodes.values()):
            session.close_idle()


class SlotSession(Binder):
    """The Session interface for the keys of one hash slot: each call goes to the Session of
    the node that serves the slot now (MOVED and ASK followed)."""

    follows_failover = True

    def __init__(self, cluster: ClusterRouter, slot: int):
        self.cluster, self.slot = cluster, slot

    @property
    def confirm(self):
        return self.cluster.confirm

    @property
    def notify_unavailable(self):
        return self.cluster.node(self.slot).notify_unavailable

    def subscriber(self):
        try:
            return self.cluster.node(self.slot).subscriber()
        except (ConnectionError, TimeoutError):  # the node is gone: the next try asks the map
            self.cluster.refresh()
            raise

    def keepalive_interval(self) -> float:
        return self.cluster.node(self.slot).keepalive_interval()

    def checkin(self, channel) -> None:
        channel.home.checkin(channel)

    def close_idle(self) -> None:
        self.cluster.close_idle()

    def _connect(self, **overrides):
        """A connection to the key's primary (an observer's: keyspace events are the node's)."""
        self.cluster.refresh()
        return self.cluster.node(self.slot)._connect(**overrides)

    def call(self, command, *, keep: bool = False, retries=None, notify=None, names=None):
        """As Session.call, on the node that owns the slot now. A call that names a subscriber
        (`notify`) is not sent elsewhere: it raises Moved, and the wait asks again through the
        subscriber of the node named now."""
        retries = retries or (failover_retries(time.monotonic()) if self.follows_failover else CALL_RETRIES)
        node, asking, redirects = None, False, 0
        for attempt in itertools.count():
            try:
                node = node or self.cluster.node(self.slot)
                return node._attempt(command, keep, notify, asking=asking)
            except ClusterCrossSlotError as error:
                raise cross_slot(names or command.words[1:2], error) from None
            except (AskError, *retries.errors) as error:  # MovedError is an AskError
                if notify is not None or not isinstance(error, AskError) or isinstance(error, MovedError):
                    self.cluster.refresh()
                redirects, named = redirected(self.cluster, error, notify, redirects)
                if named is not None:
                    node, asking = named, not isinstance(error, MovedError)
                    continue
                delay = retries.delay(attempt, time.monotonic())
                if delay is None:
                    raise
                time.sleep(delay)
            node, asking = None, False


#: One ClusterRouter per RedisCluster client.
clusters = PerPool(ClusterRouter)
