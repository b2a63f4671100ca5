"""The asyncio keeper: one task per event loop (per Session, or per cluster) that keeps every
watchdog connection of that loop's locks alive, instead of a task started for every watchdog
acquire (as rlock.keeper keeps the blocking locks' with one thread per process; starting a task
per acquire, with its reads, cost an uncontended pair about a third of its time).

A watchdog binding (what one owner holds of one key) keeps the channel that took it for as long
as it holds anything. While it keeps any, the keeper looks at every kept channel each ADOPT_S:
one that closed (or holds bytes nobody asked for, which only a broken connection does) is
re-bound from a new connection (RENEW ... WATCHDOG) in a task of its own (the rare path: it may
wait up to a lease, and must hold up no other channel), or its holdings are reported lost; one
quiet for the keep-alive interval (a third of rlock.watchdog-idle-ms) is PINGed. A closed
connection is noticed within ADOPT_S, not the moment it closes (the task per connection read
it); a lease is seconds long.

The release of a binding's last holding gives its channel back to the idle list at once, in the
releasing task (the next acquire finds it there: no new connection, no wake-up of the keeper),
unless the keeper is PINGing that channel at that moment; then the keeper gives it back when
done. The keeper ends LINGER_S after it last kept anything (the next watchdog acquire starts
another); a loop that closes cancels it, and it closes the connections it keeps, as the
task per connection did.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import Optional

from redis.exceptions import RedisError

logger = logging.getLogger("rlock")

#: How often the keeper looks at the kept channels (and so how late it may notice a close).
ADOPT_S = 0.05

#: How long the keeper task stays when nothing is kept, before it ends: an uncontended
#: acquire+release loop keeps it alive.
LINGER_S = 10.0


class Kept:
    """One kept channel: its binding, the Session that re-binds it, when it is next PINGed."""

    __slots__ = ("session", "channel", "binding", "interval", "due", "busy")

    def __init__(self, session, channel, binding, interval: float):
        self.session, self.channel, self.binding, self.interval = session, channel, binding, interval
        self.due = time.monotonic() + interval
        self.busy = False  # the keeper is PINGing it: a release leaves it to the keeper


class Keeper:
    """The keeper of one event loop's watchdog channels (LoopState.keeper). `track` keeps its
    tasks referenced until they end (rlock.asyncio.session.track_in)."""

    def __init__(self, track):
        self._track = track
        self._kept: dict = {}  # binding -> Kept
        self._task: Optional[asyncio.Task] = None
        self._last_kept = 0.0

    def channels(self) -> list:
        """The channels it keeps (closed with their loop: LoopState.abandon)."""
        return [entry.channel for entry in self._kept.values()]

    def keep(self, session, channel, binding, interval: float) -> None:
        """Keeps `channel` for `binding` (a new watchdog binding) for as long as it holds
        anything; `session` re-binds it if the channel closes. Runs in the binding's loop."""
        binding.bound, binding.loop = True, asyncio.get_running_loop()
        binding.on_end = functools.partial(self._binding_ended, binding)  # before reading `live`
        if not binding.live:  # released meanwhile (another task of the owner)
            channel.home.checkin_now(channel)
            return
        self._kept[binding] = Kept(session, channel, binding, interval)
        self._last_kept = time.monotonic()
        if self._task is None:
            self._task = binding.loop.create_task(self._run())
            self._track(self._task)

    def _binding_ended(self, binding) -> None:
        """Called by Binding.holding_ended in the task that released (or lost) its last
        holding: its channel goes back to the idle list now, unless the keeper is using it."""
        kept = self._kept.get(binding)
        if kept is None or kept.busy:
            return
        del self._kept[binding]
        kept.channel.home.checkin_now(kept.channel)

    async def _run(self) -> None:
        try:
            while self._kept or time.monotonic() - self._last_kept < LINGER_S:
                await asyncio.sleep(ADOPT_S)
                for entry in list(self._kept.values()):
                    await self._look_at(entry)
        except asyncio.CancelledError:  # the loop is closing: so do the locks' connections
            kept, self._kept = list(self._kept.values()), {}
            for entry in kept:
                await entry.channel.close()
            raise
        finally:
            # Collected pending with its closed loop, no loop runs (current_task would raise):
            # the keeper goes with the loop.
            if asyncio._get_running_loop() is None or self._task is asyncio.current_task():
                self._task = None

    async def _look_at(self, entry: Kept) -> None:
        if self._kept.get(entry.binding) is not entry:  # released meanwhile: given back
            return
        entry.busy = True
        try:
            open_ = await self._stays_open(entry) if entry.binding.live else True
        finally:
            entry.busy = False
        done = not open_ or not entry.binding.live
        if not done:
            return
        if self._kept.get(entry.binding) is entry:
            del self._kept[entry.binding]
        if open_:
            entry.channel.home.checkin_now(entry.channel)
            return
        await entry.channel.close()
        rebinding = asyncio.get_running_loop().create_task(self._rebind(entry))
        self._track(rebinding)

    @staticmethod
    async def _stays_open(entry: Kept) -> bool:
        """False when the channel closed (or sent something nobody asked for); else it PINGs
        it if its PING is due."""
        connection = entry.channel.connection
        try:
            # redis-py's can_read: bytes buffered, or the stream at its end (it reads nothing).
            if not connection.is_connected or await connection.can_read():
                return False
            if entry.due <= time.monotonic():
                await entry.channel.execute(("PING",))
                entry.due = time.monotonic() + entry.interval
            return True
        except (RedisError, OSError, ValueError):
            return False

    async def _rebind(self, entry: Kept) -> None:
        """Its channel closed: binds the binding from a new connection and keeps that one, or
        reports its holdings lost (rlock._session.BinderBase._rebind_steps)."""
        try:
            channel = await entry.session.rebind(entry.binding)
        except Exception:
            logger.exception("rlock: re-binding %r failed", entry.binding.lock.name)
            return
        if channel is not None:
            self.keep(entry.session, channel, entry.binding, entry.interval)
