"""The blocking client's keeper: one thread per process that keeps every watchdog connection of
its blocking locks alive, instead of a thread per held lock (starting a thread cost a pair of
acquire+release a third of its time; docs/benchmark.md).

A watchdog binding (what one owner holds of one key) keeps the channel that took it for as long
as it holds anything. The keeper watches all those channels in one `select`: it PINGs a channel
that has been quiet for the keep-alive interval (a third of rlock.watchdog-idle-ms, so the
server never finds it idle), and the moment one closes it re-binds its binding from a new
connection (RENEW ... WATCHDOG) or reports the holdings lost; that re-binding, which may wait up
to a lease, runs in a thread of its own so that it holds up no other channel.

The release of a binding's last holding gives its channel back to the idle list at once, in the
releasing thread (the next acquire finds it there: no new connection, no wake-up of the
keeper), unless the keeper is using that channel at that moment, in which case the keeper gives
it back when done.
"""

from __future__ import annotations

import functools
import logging
import os
import select
import socket
import threading
import time
from typing import Optional

from redis.exceptions import RedisError

logger = logging.getLogger("rlock")

#: How long the keeper thread stays when nothing is kept, before it ends (the next watchdog
#: acquire starts another): an uncontended acquire+release loop keeps it alive.
LINGER_S = 60.0

#: While channels are being kept one after another (a loop of watchdog acquires), the keeper
#: looks for new ones this often instead of being woken for each (a wake-up cost a pair about a
#: third of its CPU time); it watches a channel from this age on: a new channel's close is
#: noticed within this (twice this at worst), not at once.
ADOPT_S = 0.05


class Kept:
    """One kept channel: its binding, the Session that re-binds it, when it is next PINGed."""

    __slots__ = ("session", "channel", "binding", "interval", "kept_at", "due", "busy")

    def __init__(self, session, channel, binding, interval: float):
        self.session, self.channel, self.binding, self.interval = session, channel, binding, interval
        self.kept_at = time.monotonic()
        self.due: Optional[float] = None  # set when the keeper first looks at it
        self.busy = False  # the keeper is PINGing or checking it: a release leaves it to the keeper


class Keeper:
    """The process's keeper (`keeper`, below)."""

    def __init__(self):
        self._reset()
        if hasattr(os, "register_at_fork"):  # a child has no keeper thread, and keeps nothing
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._mutex = threading.Lock()
        self._kept: dict = {}  # binding -> Kept
        self._thread: Optional[threading.Thread] = None
        self._wake_reader: Optional[socket.socket] = None
        self._wake_writer: Optional[socket.socket] = None
        self._woken = False  # a wake-up byte is on its way: no need for another
        self._wakes_at = 0.0  # when the keeper thread looks again at the latest
        self._adopted = False  # a channel was kept since the keeper last looked

    # -- called by the lock's threads ---------------------------------------------------------

    def keep(self, session, channel, binding) -> None:
        """Keeps `channel` for `binding` (a new watchdog binding) for as long as it holds
        anything; `session` re-binds it if the channel closes."""
        binding.bound = True
        # Read once per Session (CONFIG GET), here rather than by the keeper thread, so that the
        # read takes no idle connection from under a caller: the first acquire pays for it.
        interval = session.keepalive_interval()
        with self._mutex:
            # Before reading `live`: an end from now on tells us.
            binding.on_end = functools.partial(self._binding_ended, binding)
            if not binding.live:  # released meanwhile (another thread, thread_local=False)
                kept = None
            else:
                kept = self._kept[binding] = Kept(session, channel, binding, interval)
                self._adopted = True
                if self._thread is None or self._wakes_at > time.monotonic() + ADOPT_S:
                    self._wake_locked()
        if kept is None:
            channel.home.checkin(channel)

    def _binding_ended(self, binding) -> None:
        """Called by Binding.holding_ended in the thread that released (or lost) its last
        holding: its channel goes back to the idle list now, unless the keeper is using it."""
        with self._mutex:
            kept = self._kept.get(binding)
            if kept is None or kept.busy:
                return
            del self._kept[binding]
        kept.channel.home.checkin(kept.channel)

    def _wake_locked(self) -> None:
        """Starts the thread, or makes it look at the kept channels again (a new one to watch)."""
        if self._thread is None:
            self._wake_reader, self._wake_writer = socket.socketpair()
            self._wake_reader.setblocking(False)
            self._wake_writer.setblocking(False)
            self._thread = threading.Thread(target=self._run, name="rlock-keeper", daemon=True)
            self._thread.start()
            return
        if self._woken:
            return
        self._woken = True
        try:
            self._wake_writer.send(b"\0")
        except OSError:  # full: a wake-up is pending already
            pass

    # -- the keeper thread --------------------------------------------------------------------

    def _run(self) -> None:
        idle_since = time.monotonic()
        while True:
            with self._mutex:
                # Drained before the kept channels are read: a channel kept from now on wakes us.
                self._drain(self._wake_reader)
                self._woken = False
                adopting, self._adopted = self._adopted, False
                kept = list(self._kept.values())
                if not kept and not adopting and time.monotonic() - idle_since > LINGER_S:
                    self._thread = None
                    self._wake_reader.close()
                    self._wake_writer.close()
                    return
                wake = self._wake_reader
            if kept or adopting:
                idle_since = time.monotonic()
            self._watch(wake, kept, adopting)

    @staticmethod
    def _drain(wake: socket.socket) -> None:
        try:
            while wake.recv(64):
                pass
        except OSError:  # nothing (more) to read
            pass

    def _watch(self, wake: socket.socket, kept: list, adopting: bool) -> None:
        """Waits until a kept channel needs a look (its PING is due, or it became readable,
        which only a closed connection does; a channel kept less than ADOPT_S ago, once it is
        that old) or the keeper is woken (or, `adopting`, ADOPT_S has passed: channels were
        kept lately); then looks. A channel is watched only from ADOPT_S on: in a loop of
        acquires each is given back sooner, and then reused by the next call, whose reply
        would wake the keeper for nothing on every pair."""
        now = time.monotonic()
        sockets, wakes_at = {}, now + LINGER_S
        for entry in kept:
            if entry.due is None:  # not looked at yet: once it is ADOPT_S old
                wakes_at = min(wakes_at, entry.kept_at + ADOPT_S)
                continue
            wakes_at = min(wakes_at, entry.due)
            sock = entry.channel.connection._sock
            if sock is not None:
                sockets[sock] = entry
        with self._mutex:
            # A channel kept since the snapshot either saw this wakes_at (and woke us if far)
            # or set _adopted before: then we look again soon.
            if adopting or self._adopted:
                wakes_at = min(wakes_at, now + ADOPT_S)
            self._wakes_at = wakes_at
        timeout = max(0.0, wakes_at - now)
        try:
            readable = select.select([wake, *sockets], [], [], timeout)[0]
        except (OSError, ValueError):  # a channel closed meanwhile: looked at below
            readable = list(sockets)
        now = time.monotonic()
        for entry in kept:
            if entry.due is None:
                if now - entry.kept_at >= ADOPT_S:
                    self._look_at(entry, now)
                continue
            sock = entry.channel.connection._sock
            if sock is None or entry.due <= now or (sock in readable and sockets.get(sock) is entry):
                self._look_at(entry, now)

    def _look_at(self, entry: Kept, now: float) -> None:
        with self._mutex:
            if self._kept.get(entry.binding) is not entry:  # released meanwhile: given back
                return
            entry.busy = True
        open_ = True
        try:
            if entry.binding.live:
                open_ = self._stays_open(entry, now)
        finally:
            with self._mutex:
                entry.busy = False
                done = not open_ or not entry.binding.live
                if done:
                    del self._kept[entry.binding]
        if open_ and done:
            entry.channel.home.checkin(entry.channel)
        elif not open_:
            entry.channel.close()
            threading.Thread(target=self._rebind, args=(entry,), name="rlock-rebind", daemon=True).start()

    def _stays_open(self, entry: Kept, now: float) -> bool:
        """False when the channel closed (or sent something nobody asked for, which only a
        broken connection does); else it PINGs it if its PING is due."""
        connection = entry.channel.connection
        try:
            # can_read: the parser may hold bytes already read off the socket.
            if not connection.is_connected or connection.can_read(timeout=0):
                return False
            if entry.due is None:  # its first look: watched from now on
                entry.due = now + entry.interval
            elif entry.due <= now:
                entry.channel.execute(("PING",))
                entry.due = time.monotonic() + entry.interval
            return True
        except (RedisError, OSError, ValueError):
            return False

    def _rebind(self, entry: Kept) -> None:
        """Its channel closed: binds the binding from a new connection and keeps that one, or
        reports its holdings lost (rlock._session.BinderBase._rebind_steps)."""
        try:
            channel = entry.session.rebind(entry.binding)
        except Exception:
            logger.exception("rlock: re-binding %r failed", entry.binding.lock.name)
            return
        if channel is not None:
            self.keep(entry.session, channel, entry.binding)


keeper = Keeper()
