"""The asyncio client's side of the waiting flow (rlock._waiting): its I/O steps, awaited one
by one, and the task that keeps a cancelled caller from interrupting a call on the wire.

Over RESP3 the waiting calls (ACQUIRE ... NOTIFY, CANCEL, the confirming RENEW) run on the
subscriber itself, so their replies and the messages arrive in the server's order; over RESP2
they go over rlock's other connections and name the subscriber's client id.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time

from redis.exceptions import RedisError

from .._steps import drive_async as drive
from .._waiting import Acquisition
from ._tasks import spawn_for_caller

logger = logging.getLogger("rlock")


class AsyncIO:
    """The asyncio client's steps of the waiting flow."""

    def __init__(self, session):
        self.session = session
        self._abandoned = asyncio.get_running_loop().create_future()

    @property
    def abandoned(self) -> bool:
        return self._abandoned.done()

    def abandon(self) -> None:
        if not self._abandoned.done():
            self._abandoned.set_result(None)

    async def subscriber(self):
        return await self.session.subscriber()

    async def send(self, subscriber, request):
        if subscriber.resp3:  # on the subscriber itself: the reply comes before any message
            return await subscriber.call_routed(request.command, self.session), None
        return await self.session.call(request.command, keep=request.keep, notify=subscriber.client_id)

    def calls_on(self, subscriber) -> bool:
        return subscriber.resp3

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def checkin(self, channel) -> None:
        await self.session.checkin(channel)

    async def keep_alive(self, channel, binding) -> None:
        await self.session.keep_alive(channel, binding)

    async def outcome(self, wait, give_up_at: float):
        """The message that ends the wait, or None when it is given up first (cancelled, or
        nothing by `give_up_at`). Raises the subscriber's ConnectionError if it closed."""
        timeout = None if give_up_at == math.inf else max(0.0, give_up_at - time.monotonic())
        await asyncio.wait((wait.future, self._abandoned), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        return wait.message()

    async def cancel(self, subscriber, wait, command) -> None:
        if subscriber.resp3:  # the reply comes after every message sent before it
            await subscriber.call(command.args(time.monotonic()))
            return
        removed, _ = await self.session.call(command)
        if not removed:  # the entry ended meanwhile: its message is on its way
            await subscriber.sync()

    async def call(self, subscriber, command):
        if subscriber.resp3:
            return await subscriber.call_command(command)
        return (await self.session.call(command))[0]


async def wait_with_notify(session, request, give_back=None) -> bool:
    """Runs the waiting call in a task of its own, so that cancelling the caller interrupts the
    wait but never a call on the wire. A cancelled caller waits until the wait is given up (its
    queue entry gone, a holding taken meanwhile given back with `give_back()`) before
    CancelledError goes on."""
    io = AsyncIO(session)
    task = spawn_for_caller(drive(Acquisition(io, request).run()))
    session.track(task)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        io.abandon()
        giving_up = spawn_for_caller(_give_up(request, task, give_back))
        session.track(giving_up)
        await asyncio.shield(giving_up)  # cancelled again: it goes on in the background
        raise


async def _give_up(request, task: asyncio.Task, give_back) -> None:
    """Waits for an abandoned wait to end, and gives back the holding it took after all."""
    try:
        acquired = await task
    except Exception:
        return
    if not acquired or give_back is None:
        return
    try:
        await give_back()
    except RedisError as error:
        logger.warning("rlock: giving back %r after a cancelled acquire failed: %r", request.name, error)
