"""rlock.session for redis.asyncio: the Session of one server node, with the same dedicated
connections, one keeper task per event loop for its watchdog connections (keeper.py) instead
of a thread per process, and the one subscriber connection per event loop that waiting acquires
are told on (subscriber.py). A binding's connection goes back the moment it ends, as
rlock.session's does."""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Optional

from redis.asyncio.retry import Retry
from redis.exceptions import TimeoutError

from .._commands import SOCKET_TIMEOUT
from .._connections import MAX_IDLE_CONNECTIONS, PerPool, is_cluster
from .._session import BinderBase, SessionBase, execute_steps
from .._steps import drive_async
from ._loops import LoopState, PerLoop
from .subscriber import NotifyUnavailable, Subscriber

logger = logging.getLogger("rlock")


class Channel:
    def __init__(self, connection, home=None):
        self.connection = connection
        self.home = home  # the Session that made it (a cluster node's), where it goes back

    async def send_command(self, args) -> None:
        await self.connection.send_command(*args, check_health=False)

    async def send_commands(self, commands) -> None:
        await self.connection.send_packed_command(self.connection.pack_commands(commands), check_health=False)

    async def execute(self, args, read_timeout=SOCKET_TIMEOUT, then=None, asking=False):
        """As rlock.session.Channel.execute."""
        return await drive_async(execute_steps(self, args, read_timeout, then, asking))

    async def read(self, read_timeout):
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

    async def close(self) -> None:
        await self.connection.disconnect(nowait=True)


class Binder(BinderBase):
    """Keeping watchdog bindings (this loop's keeper) and re-binding them
    (rlock._session.BinderBase), awaited: for a node's Session, or a cluster key's route."""

    sleep = staticmethod(asyncio.sleep)

    def _here(self) -> LoopState:
        """This loop's state, where its keeper is."""
        raise NotImplementedError

    async def keep_alive(self, channel, binding) -> None:
        """As rlock.session.Binder.keep_alive, with this loop's keeper."""
        if channel is None:
            if binding is not None:
                await binding.lock._session.rebind_elsewhere(binding)
            return
        if binding is None:
            await channel.home.checkin(channel)
            return
        session = binding.lock._session
        # Read once per Session (CONFIG GET), by the first watchdog acquire, not by the keeper.
        interval = getattr(session, "_keepalive", None) or await session.keepalive_interval()
        self._here().keeper.keep(session, channel, binding, interval)

    async def rebind(self, binding) -> Optional[Channel]:
        """As rlock.session.Binder.rebind."""
        return await drive_async(self._rebind_steps(binding))

    async def rebind_elsewhere(self, binding) -> None:
        """A binding on a subscriber that closed: re-bound, it gets a keeper of its own."""
        channel = await self.rebind(binding)
        if channel is not None:
            await self.keep_alive(channel, binding)


class Session(SessionBase, Binder):
    """The dedicated connections of one redis.asyncio connection pool (a Sentinel-managed
    pool's connect to the primary the sentinels name at that moment)."""

    def __init__(self, pool):
        super().__init__(pool, Retry)
        self._loops = PerLoop(LoopState)  # a connection works only in the loop that made it

    async def _connect(self, **overrides):
        connection = self._connection_class(**{**self._kwargs, **overrides})
        await connection.connect()
        return connection

    async def checkout(self) -> Channel:
        idle = self._loops.here().idle
        if idle:
            return idle.pop()
        return Channel(await self._connect(), self)

    async def checkin(self, channel: Channel) -> None:
        idle = self._loops.here().idle
        if len(idle) < MAX_IDLE_CONNECTIONS:
            idle.append(channel)
        else:
            await channel.close()

    def checkin_now(self, channel: Channel) -> None:
        """`checkin` without waiting (the keeper's, from a release): a connection beyond the
        idle list's size is closed in a task of its own."""
        here = self._loops.here()
        if len(here.idle) < MAX_IDLE_CONNECTIONS:
            here.idle.append(channel)
        else:
            here.track(asyncio.get_running_loop().create_task(channel.close()))

    async def close_idle(self) -> None:
        """Closes this loop's idle connections (another loop's work only there)."""
        here = self._loops.here()
        idle, here.idle = here.idle, []
        for channel in idle:
            await channel.close()
        if isinstance(here.subscriber, Subscriber) and here.subscriber.idle:
            await here.subscriber.close()

    # -- the subscriber -------------------------------------------------------------------------

    async def subscriber(self) -> Subscriber:
        """This event loop's subscriber, opened on first use (and anew after it closed). Raises
        NotifyUnavailable when the server cannot tell waiters by message."""
        if self.notify_unavailable is not None:
            raise NotifyUnavailable(self.notify_unavailable)
        here = self._loops.here()
        entry = here.subscriber
        if isinstance(entry, Subscriber) and entry.error is None:
            return entry
        if not isinstance(entry, asyncio.Task):  # one opening for all who ask meanwhile
            entry = here.subscriber = asyncio.get_running_loop().create_task(self._open_subscriber(here))
            entry.add_done_callback(lambda task: task.cancelled() or task.exception())
        try:
            return await asyncio.shield(entry)
        except NotifyUnavailable as error:
            if self.notify_unavailable is None:
                self.notify_unavailable = str(error)
                logger.warning(
                    "rlock: this server cannot tell waiters by message (%s): rlock.asyncio.Lock "
                    "waits blocked in WAIT, on a connection per waiting lock",
                    error,
                )
            raise

    async def _open_subscriber(self, here: LoopState) -> Subscriber:
        opening = asyncio.current_task()
        try:
            subscriber = await Subscriber.open(self, await self._connect())
        except BaseException:
            if here.subscriber is opening:
                here.subscriber = None
            raise
        if here.subscriber is opening:
            here.subscriber = subscriber if subscriber.error is None else None
        return subscriber

    def subscriber_closed(self, subscriber: Subscriber) -> None:
        """The next wait opens a new one."""
        for here in self._loops.values():
            if here.subscriber is subscriber:
                here.subscriber = None

    # -- calls ----------------------------------------------------------------------------------

    async def wait_words(self, command, run=None):
        return await drive_async(self._wait_words_steps(command, run))

    async def call(self, command, *, keep: bool = False, retries=None, notify: Optional[int] = None):
        """As rlock.session.Session.call."""
        return await drive_async(self._call_steps(command, keep, retries, notify))

    def _here(self) -> LoopState:
        return self._loops.here()

    def track(self, task: asyncio.Task) -> None:
        """Keeps a background task referenced (the event loop keeps only weak references) until
        it ends, or its loop closes."""
        self._loops.here().track(task)

    async def keepalive_interval(self) -> float:
        return await drive_async(self._keepalive_steps())


_per_pool = PerPool(Session)


def session_for(source, names=None):
    """As rlock.session.session_for."""
    if not is_cluster(source):
        return _per_pool.get(source)
    from .router import clusters  # noqa: PLC0415 (router.py builds on this module)

    cluster = clusters.get(source)
    return cluster if names is None else cluster.route(names)
