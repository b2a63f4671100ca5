"""The Router for redis.asyncio's RedisCluster: rlock.router's routing, awaited."""

from __future__ import annotations

import asyncio
import itertools
import time
import weakref

from redis.exceptions import (
    AskError, ClusterCrossSlotError, ConnectionError, MovedError, RedisClusterException, ResponseError, TimeoutError,
)

from .._commands import CALL_RETRIES, failover_retries
from .._confirm import AUTO
from .._connections import PerPool, cross_slot, node_source
from .._router import REFRESH_EVERY_S, redirected, slot_of
from .session import Binder, Session


class ClusterRouter:
    """As rlock.router.ClusterRouter."""

    def __init__(self, cluster):
        self._cluster = weakref.ref(cluster)
        self.confirm = AUTO
        self._nodes = {}  # node name -> Session
        self._routes = weakref.WeakValueDictionary()  # slot -> SlotSession
        self._refreshed_at = 0.0
        self._keepers = set()

    def route(self, names) -> "SlotSession":
        slot = slot_of(self._cluster(), names)
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

    async def ready(self) -> None:
        """redis.asyncio's RedisCluster reads the slot map on its first command: rlock may
        send the first one."""
        cluster = self._cluster()
        if getattr(cluster, "_initialize", False):
            await cluster.initialize()

    def at(self, node) -> Session:
        session = self._nodes.get(node.name)
        if session is None:
            session = self._nodes[node.name] = Session(node_source(node))
            session.follows_failover = True
        return session

    def named(self, host, port):
        node = self._cluster().nodes_manager.get_node(host, port)
        return None if node is None else self.at(node)

    async def refresh(self) -> None:
        """As rlock.router.ClusterRouter.refresh."""
        if time.monotonic() - self._refreshed_at < REFRESH_EVERY_S:
            return
        self._refreshed_at = time.monotonic()
        try:
            await self._cluster().nodes_manager.initialize()
        except (ConnectionError, TimeoutError, ResponseError, RedisClusterException):
            pass

    async def close_idle(self) -> None:
        for session in list(self._nodes.values()):
            await session.close_idle()


class SlotSession(Binder):
    """As rlock.router.SlotSession."""

    follows_failover = True

    def __init__(self, cluster: ClusterRouter, slot: int):
        self.cluster, self.slot = cluster, slot

    @property
    def confirm(self):
        return self.cluster.confirm

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

    def track(self, task: asyncio.Task) -> None:
        self.cluster._keepers.add(task)
        task.add_done_callback(self.cluster._keepers.discard)

    async def _connect(self, **overrides):
        """A connection to the key's primary (an observer's: keyspace events are the node's)."""
        await self.cluster.ready()
        await self.cluster.refresh()
        return await self.cluster.node(self.slot)._connect(**overrides)

    async def call(self, command, *, keep: bool = False, retries=None, notify=None, names=None):
        """As rlock.router.SlotSession.call."""
        await self.cluster.ready()
        retries = retries or (failover_retries(time.monotonic()) if self.follows_failover else CALL_RETRIES)
        node, asking, redirects = None, False, 0
        for attempt in itertools.count():
            try:
                node = node or self.cluster.node(self.slot)
                return await node._attempt(command, keep, notify, asking=asking)
            except ClusterCrossSlotError as error:
                raise cross_slot(names or command.words[1:2], error) from None
            except (AskError, *retries.errors) as error:  # MovedError is an AskError
                if notify is not None or not isinstance(error, AskError) or isinstance(error, MovedError):
                    await self.cluster.refresh()
                redirects, named = redirected(self.cluster, error, notify, redirects)
                if named is not None:
                    node, asking = named, not isinstance(error, MovedError)
                    continue
                delay = retries.delay(attempt, time.monotonic())
                if delay is None:
                    raise
                await asyncio.sleep(delay)
            node, asking = None, False


#: One ClusterRouter per RedisCluster client.
clusters = PerPool(ClusterRouter)
