"""rlock.session for redis.asyncio: the Session of one server node, with the same dedicated
connections, one keeper task per watchdog connection instead of a thread, and the one
subscriber connection per event loop that waiting acquires are told on (subscriber.py). A keeper
gives its connection back the moment its binding ends, as rlock.session's does."""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Optional

from redis.asyncio.retry import Retry
from redis.exceptions import RedisError, TimeoutError

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

    async def stays_open(self, seconds: float, woken: asyncio.Event) -> bool:
        """Watches the idle connection for `seconds`, then PINGs it; or less, when `woken` is
        set. False as soon as it closes (or sends something nobody asked for, which only a
        broken connection does)."""
        try:
            if not self.connection.is_connected:
                return False
            # With a timeout, redis-py returns None when nothing came, and keeps the connection;
            # without disconnect_on_error it keeps it too when a wake-up cancels the read (a
            # cancel while no byte of a reply came, as its own timeout is).
            read = asyncio.ensure_future(self.connection.read_response(timeout=seconds, disconnect_on_error=False))
            wake = asyncio.ensure_future(woken.wait())
            try:
                await asyncio.wait((read, wake), return_when=asyncio.FIRST_COMPLETED)
            finally:
                if wake.get_loop().is_closed():  # collected pending, its loop closed: nothing runs
                    return False
                wake.cancel()
                if not read.done():
                    read.cancel()
                    await asyncio.wait((read,))  # ended before anyone else reads the connection
            if read.cancelled():
                woken.clear()
                return True
            if read.result() is not None:
                return False
            if asyncio.current_task().cancelling():
                # redis-py's timed read can return None for a cancel that came meanwhile: the
                # loop is closing, and a keeper that went on would keep it from closing.
                raise asyncio.CancelledError
            await self.execute(("PING",))
            return True
        except (RedisError, OSError):
            return False

    async def close(self) -> None:
        await self.connection.disconnect(nowait=True)


class Binder(BinderBase):
    """Keeping watchdog bindings (a keeper per connection) and re-binding them
    (rlock._session.BinderBase), awaited: for a node's Session, or a cluster key's route."""

    sleep = staticmethod(asyncio.sleep)

    async def keep_alive(self, channel, binding) -> None:
        """As rlock.session.Binder.keep_alive, with a keeper task."""
        if channel is None:
            if binding is not None:
                await binding.lock._session.rebind_elsewhere(binding)
            return
        if binding is None:
            await channel.home.checkin(channel)
            return
        binding.bound, binding.loop = True, asyncio.get_running_loop()
        keeper = Keeper(binding.lock._session, channel, binding)
        self.track(binding.loop.create_task(keeper.run()), keeper)

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

    def track(self, task: asyncio.Task, keeper=None) -> None:
        """Keeps a background task referenced (the event loop keeps only weak references) until
        it ends, or its loop closes."""
        track_in(self._loops.here(), task, keeper)

    async def keepalive_interval(self) -> float:
        return await drive_async(self._keepalive_steps())


def track_in(here: LoopState, task: asyncio.Task, keeper) -> None:
    here.tasks[task] = keeper
    task.add_done_callback(lambda done: here.tasks.pop(done, None))


class Keeper:
    """Keeps one watchdog connection, and the binding on it, alive."""

    def __init__(self, session: Session, channel: Channel, binding):
        self.session, self.channel, self.binding = session, channel, binding

    async def run(self) -> None:
        # The release (or loss) of the binding's last holding sets it to end the wait.
        woken = asyncio.Event()
        self.binding.on_end = woken.set  # before reading `live`: an end from now on wakes us
        try:
            await self._keep(woken)
        finally:
            if self.binding.on_end == woken.set:
                self.binding.on_end = None

    async def _keep(self, woken: asyncio.Event) -> None:
        try:
            interval = await self.session.keepalive_interval()
            while self.binding.live:
                if await self.channel.stays_open(interval, woken):
                    continue
                await self.channel.close()
                self.channel = await self.session.rebind(self.binding)
                if self.channel is None:
                    return
            await self.channel.home.checkin(self.channel)
        except asyncio.CancelledError:  # the loop is closing: so does the lock's connection
            if self.channel is not None:
                await self.channel.close()
            raise


_per_pool = PerPool(Session)


def session_for(source, names=None):
    """As rlock.session.session_for."""
    if not is_cluster(source):
        return _per_pool.get(source)
    from .router import clusters  # noqa: PLC0415 (router.py builds on this module)

    cluster = clusters.get(source)
    return cluster if names is None else cluster.route(names)
