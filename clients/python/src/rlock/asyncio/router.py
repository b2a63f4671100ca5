"""The Router for redis.asyncio's RedisCluster: rlock.router's routing, awaited."""

from __future__ import annotations

import asyncio

from redis.exceptions import ConnectionError, RedisClusterException, ResponseError, TimeoutError

from .._connections import PerPool
from .._router import RouterBase, SlotSessionBase
from .._steps import drive_async
from ._loops import LoopState, PerLoop
from .session import Binder, Session


class ClusterRouter(RouterBase):
    """As rlock.router.ClusterRouter; redis.asyncio's RedisCluster reads its slot map on its
    first command, which rlock may send (`ready`)."""

    session_class = Session

    def __init__(self, cluster):
        super().__init__(cluster)
        self._loops = PerLoop(LoopState)  # only its background tasks: a node's Session has the rest

    async def ready(self) -> None:
        cluster = self._cluster()
        if getattr(cluster, "_initialize", False):
            await cluster.initialize()

    async def refresh(self) -> None:
        """As rlock.router.ClusterRouter.refresh."""
        if not self._refresh_due():
            return
        try:
            await self._cluster().nodes_manager.initialize()
        except (ConnectionError, TimeoutError, ResponseError, RedisClusterException):
            pass

    async def close_idle(self) -> None:
        for session in list(self._nodes.values()):
            await session.close_idle()


class SlotSession(SlotSessionBase, Binder):
    """As rlock.router.SlotSession."""

    @property
    def notify_unavailable(self):
        try:
            return self.cluster.node(self.slot).notify_unavailable
        except ConnectionError:  # no slot map yet: call() reads it
            return None

    async def subscriber(self):
        await self.cluster.ready()
        try:
            return await self.cluster.node(self.slot).subscriber()
        except (ConnectionError, TimeoutError):  # the node is gone: the next try asks the map
            await self.cluster.refresh()
            raise

    async def keepalive_interval(self) -> float:
        await self.cluster.ready()
        return await self.cluster.node(self.slot).keepalive_interval()

    async def refresh(self) -> None:
        await self.cluster.refresh()

    async def checkin(self, channel) -> None:
        await channel.home.checkin(channel)

    async def close_idle(self) -> None:
        await self.cluster.close_idle()

    def _here(self) -> LoopState:
        return self.cluster._loops.here()

    def track(self, task: asyncio.Task) -> None:
        self.cluster._loops.here().track(task)

    async def _connect(self, **overrides):
        """A connection to the key's primary (an observer's: keyspace events are the node's)."""
        await self.cluster.ready()
        await self.cluster.refresh()
        return await self.cluster.node(self.slot)._connect(**overrides)

    async def call(self, command, *, keep: bool = False, retries=None, notify=None, names=None):
        """As rlock.router.SlotSession.call."""
        await self.cluster.ready()
        return await drive_async(self._call_steps(command, keep, retries, notify, names))


ClusterRouter.slot_session_class = SlotSession

#: One ClusterRouter per RedisCluster client.
clusters = PerPool(ClusterRouter)
