"""What the blocking and the asyncio cluster Routers share: a key's hash slot, and the error a
call that names a subscriber raises when its key's slot moved to another node."""

from __future__ import annotations

import itertools
import threading
import time
import weakref

from redis.exceptions import AskError, ClusterCrossSlotError, ConnectionError, MovedError, RedisClusterException

from ._commands import CALL_RETRIES, failover_retries
from ._confirm import AUTO
from ._connections import CrossSlotError, cross_slot, node_source

#: The slot map is read again at most this often (a failover makes many calls fail at once).
REFRESH_EVERY_S = 0.25

#: MOVED and ASK followed in a row for one call before it is given up (Redis Cluster's clients
#: stop at 16 too: a slot map that keeps pointing elsewhere is broken).
MAX_REDIRECTS = 16


class Moved(ConnectionError):
    """The key's slot is served by another node now: a wait asks again there, through that
    node's subscriber (a NOTIFY call names a connection of the node it is sent to)."""


def slot_of(cluster, names) -> int:
    """The hash slot of `names` (a name, or a MultiLock's names: all in one slot, or
    CrossSlotError before anything is sent)."""
    names = [names] if isinstance(names, (str, bytes, int, float)) else list(names)
    slots = {cluster.keyslot(name) for name in names}
    if len(slots) > 1:
        raise CrossSlotError(
            f"rlock: the keys {names!r} are in different hash slots of the cluster: put the keys in"
            " one hash slot with a hash tag, e.g. {order}:1 {order}:2"
        )
    return slots.pop()


def redirected(cluster, error: Exception, notify, redirects: int):
    """After a failed attempt of a cluster key's call (its slot map already read again where
    that helps): (redirects so far, the node's Session to send it to at once, or None to retry
    after a pause). A call that names a subscriber (`notify`) raises Moved instead: the wait
    asks again through the subscriber of the node named now. Too many redirections raise."""
    if notify is not None:
        raise Moved(str(error)) from error
    if not isinstance(error, AskError):  # a failure: retried after a pause
        return redirects, None
    if redirects >= MAX_REDIRECTS:
        raise error
    # None: a node redis-py's map does not hold yet (it is being read again): retried too.
    return redirects + 1, cluster.named(error.host, error.port)


class RouterBase:
    """The Router of one RedisCluster client: which node serves a key (redis-py's slot map,
    read again after MOVED or a failure), and the Session of each node. A subclass names its
    `session_class` and `slot_session_class`, and reads the slot map (`refresh`)."""

    session_class: type
    slot_session_class: type

    def __init__(self, cluster):
        self._cluster = weakref.ref(cluster)  # kept per client: must not keep the client alive
        self.confirm = AUTO
        self._nodes = {}  # node name -> Session
        self._routes = weakref.WeakValueDictionary()  # slot -> SlotSession
        self._mutex = threading.Lock()
        self._refreshed_at = 0.0

    def route(self, names):
        slot = slot_of(self._cluster(), names)
        with self._mutex:
            route = self._routes.get(slot)
            if route is None:
                route = self._routes[slot] = self.slot_session_class(self, slot)
            return route

    def node(self, slot: int):
        """The Session of the slot's primary; ConnectionError (retried) while redis-py's slot
        map has none (it is being read again, or the cluster is reconfiguring)."""
        try:
            return self.at(self._cluster().nodes_manager.get_node_from_slot(slot))
        except (KeyError, IndexError, RedisClusterException) as error:
            raise ConnectionError(f"rlock: no primary known for slot {slot} yet ({error!r})") from error

    def at(self, node):
        with self._mutex:
            session = self._nodes.get(node.name)
            if session is None:
                session = self._nodes[node.name] = self.session_class(node_source(node))
                session.follows_failover = True
            return session

    def named(self, host, port):
        """The Session of the node a redirection names (None if redis-py does not know it)."""
        node = self._cluster().nodes_manager.get_node(host, port)
        return None if node is None else self.at(node)

    def _refresh_due(self) -> bool:
        """Whether to read the slot map again now: at most every REFRESH_EVERY_S (a failover
        makes many calls fail at once)."""
        with self._mutex:
            if time.monotonic() - self._refreshed_at < REFRESH_EVERY_S:
                return False
            self._refreshed_at = time.monotonic()
            return True


class SlotSessionBase:
    """The Session interface for the keys of one hash slot: each call goes to the Session of
    the node that serves the slot now (MOVED and ASK followed). `sleep` and the cluster's
    `refresh` are the subclass's (blocking, or coroutines)."""

    follows_failover = True

    def __init__(self, cluster: RouterBase, slot: int):
        self.cluster, self.slot = cluster, slot

    @property
    def confirm(self):
        return self.cluster.confirm

    def _call_steps(self, command, keep: bool = False, retries=None, notify=None, names=None):
        """As Session.call, on the node that owns the slot now. A call that names a subscriber
        (`notify`) is not sent elsewhere: it raises Moved, and the wait asks again through the
        subscriber of the node named now."""
        retries = retries or (failover_retries(time.monotonic()) if self.follows_failover else CALL_RETRIES)
        node, asking, redirects = None, False, 0
        for attempt in itertools.count():
            try:
                node = node or self.cluster.node(self.slot)
                return (yield from node._attempt_steps(command, keep, notify, asking=asking))
            except ClusterCrossSlotError as error:
                raise cross_slot(names or command.words[1:2], error) from None
            except (AskError, *retries.errors) as error:  # MovedError is an AskError
                if notify is not None or not isinstance(error, AskError) or isinstance(error, MovedError):
                    yield self.cluster.refresh()
                redirects, named = redirected(self.cluster, error, notify, redirects)
                if named is not None:
                    node, asking = named, not isinstance(error, MovedError)
                    continue
                delay = retries.delay(attempt, time.monotonic())
                if delay is None:
                    raise
                yield self.sleep(delay)
            node, asking = None, False
