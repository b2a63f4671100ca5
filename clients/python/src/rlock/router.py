"""The blocking client's Router on a RedisCluster: every call for a key goes to the primary
that owns its hash slot, through that node's Session (as for a single server); MOVED and a node that fails refresh redis-py's slot map and send the call again, with
the same ID, to the node named now; ASK sends it once to the node named, after ASKING.

A lock object's `_session` is a SlotSession: the Session interface for one hash slot, always
talking to whichever node owns that slot now. Its watchdog holdings are re-bound through it
(so after a failover, on the new primary), and its waits are told on the subscriber of the
node that owns the key (a NOTIFY channel names the node: RLOCK.CHANNEL there).
"""

from __future__ import annotations

from redis.exceptions import ConnectionError, RedisClusterException, ResponseError, TimeoutError

from ._connections import PerPool
from ._router import RouterBase, SlotSessionBase
from ._steps import drive
from .session import Binder, Session


class ClusterRouter(RouterBase):
    """rlock._router.RouterBase, with blocking reads of the slot map."""

    session_class = Session

    def refresh(self) -> None:
        """Reads the slot map again (at most every REFRESH_EVERY_S)."""
        if not self._refresh_due():
            return
        try:
            self._cluster().nodes_manager.initialize()
        except (ConnectionError, TimeoutError, ResponseError, RedisClusterException):
            pass  # no node answers yet: the next attempt tries again

    def close_idle(self) -> None:
        for session in list(self._nodes.values()):
            session.close_idle()


class SlotSession(SlotSessionBase, Binder):
    """rlock._router.SlotSessionBase, blocking."""

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
        """rlock._router.SlotSessionBase._call_steps, blocking."""
        return drive(self._call_steps(command, keep, retries, notify, names))


ClusterRouter.slot_session_class = SlotSession

#: One ClusterRouter per RedisCluster client.
clusters = PerPool(ClusterRouter)
