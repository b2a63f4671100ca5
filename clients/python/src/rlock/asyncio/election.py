"""rlock.asyncio.Election: rlock.Election for redis.asyncio, with coroutines and an async
iterator of leader changes."""

from __future__ import annotations

import asyncio
import time
from typing import Optional

from redis.exceptions import ConnectionError, LockNotOwnedError

from .._election import OBSERVER_NAME, ElectionBase, Leader, NoKeyspaceEvents, ObserverBase, follow
from .._notify import check_subscribed, is_message, word
from .._commands import READ_GRACE_S
from .lock import Lock
from .._steps import drive_async as drive

__all__ = ["Election", "Leader", "NoKeyspaceEvents", "Observer"]


class Election(ElectionBase):
    """As rlock.Election, for redis.asyncio::

        election = rlock.asyncio.Election(r, "scheduler", "10.0.0.7:8080")
        term = await election.campaign()
        async with election.observe() as changes:
            async for leader in changes: ...

    Cancelling a campaign leaves the queue (RLOCK.CANCEL)."""

    lock_class = Lock

    async def campaign(self, timeout: Optional[float] = None) -> Optional[int]:
        """As rlock.Election.campaign."""
        async with self._campaigning:
            if self.term is None and not await self._lock.acquire(**self._campaign_args(timeout)):
                return None
            return self.term

    async def resign(self) -> None:
        """As rlock.Election.resign."""
        if self._lock._live_holding() is None:
            return
        try:
            await self._lock.release()
        except LockNotOwnedError:
            pass

    async def leader(self) -> Optional[Leader]:
        """As rlock.Election.leader."""
        return self._leader(await self._lock._run(self._leader_command()))

    async def guard(self, *command):
        """As rlock.Election.guard."""
        return await self._lock.guard(*command)

    def observe(self) -> "Observer":
        """As rlock.Election.observe: an async iterator (call it in the event loop that reads
        it; its task starts at once)."""
        return Observer(self)


class Observer(ObserverBase):
    """As rlock.Observer, read with ``async for`` (or ``await observer.next()``), in a task of
    its own; ``await observer.aclose()`` (or ``async with``) ends it."""

    def __init__(self, election: Election):
        self._election = election
        self._session = election._lock._session
        self._items = asyncio.Queue()
        self.connection = None
        self._task = asyncio.get_running_loop().create_task(self._run())

    # -- the flow's I/O steps -------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await drive(follow(self, self._election))
        except Exception as error:
            self._items.put_nowait(error)
        finally:
            self._items.put_nowait(self.END)
            await self._disconnect()

    closed = False

    async def call(self, command):
        return (await self._session.call(command))[0]

    async def listen(self, channel: bytes) -> None:
        await self._disconnect()
        self._interval = await self._session.keepalive_interval()
        self.connection = await self._session._connect(protocol=2, client_name=OBSERVER_NAME)
        await self.connection.send_command("SUBSCRIBE", channel, check_health=False)
        check_subscribed(await self.connection.read_response())
        self._last_sent = time.monotonic()

    async def next_event(self) -> None:
        """Returns once an event of the key came; PINGs when quiet (as rlock's Listener)."""
        patience = max(3 * self._interval, READ_GRACE_S)
        channel, pinged = self._election._keyspace_channel, False
        while True:
            quiet = patience if pinged else max(0.0, self._last_sent + self._interval - time.monotonic())
            # With a timeout, redis-py returns None when nothing came, and keeps the connection.
            frame = await self.connection.read_response(timeout=quiet)
            if frame is None and pinged:
                raise ConnectionError(f"rlock: the observer's connection did not answer PING within {patience} s")
            if frame is None:
                await self.connection.send_command("PING", check_health=False)
                self._last_sent, pinged = time.monotonic(), True
            elif isinstance(frame, list) and frame and word(frame[0]).lower() == b"pong":
                pinged = False
            elif is_message(frame) and word(frame[1]) == channel:
                return

    async def emit(self, leader: Optional[Leader]) -> None:
        self._items.put_nowait((leader,))

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def _disconnect(self) -> None:
        if self.connection is not None:
            await self.connection.disconnect(nowait=True)

    # -- the caller's side --------------------------------------------------------------------

    async def next(self) -> Optional[Leader]:
        """The next leader; StopAsyncIteration once closed."""
        if self._ended:
            raise StopAsyncIteration
        return self._item(await self._items.get(), StopAsyncIteration)

    def __aiter__(self) -> "Observer":
        return self

    async def __anext__(self) -> Optional[Leader]:
        return await self.next()

    async def aclose(self) -> None:
        """Stops observing and closes its connection."""
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        self._ended = True

    async def __aenter__(self) -> "Observer":
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()
