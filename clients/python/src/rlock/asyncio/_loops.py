"""What rlock keeps for an event loop (idle connections, the subscriber, background tasks): a
connection's streams, futures and tasks work only in the loop that made them, so one
redis.asyncio client used by successive loops (asyncio.run, a loop per test) or by threads each
running a loop keeps these apart per loop, and so does each asyncio mutex rlock keeps in its
objects (LoopLock). A closed loop's are dropped, never handed to another loop, and its
connections are shut down then: as for a process that exits, the server frees the watchdog
holdings bound to them, and rlock reports none of them held (Binding.orphaned)."""

from __future__ import annotations

import asyncio
import os
import select
import socket
import threading
import time

from .._commands import READ_GRACE_S
from .keeper import Keeper


class LoopState:
    """A Session's things in one loop: the idle connections, the subscriber (or the task
    opening it), the keeper of its watchdog connections (made at the first watchdog acquire),
    and the background tasks (kept referenced until they end)."""

    __slots__ = ("idle", "subscriber", "tasks", "_keeper")

    def __init__(self):
        self.idle = []
        self.subscriber = None
        self.tasks = {}
        self._keeper = None

    @property
    def keeper(self) -> Keeper:
        if self._keeper is None:
            self._keeper = Keeper(self.track)
        return self._keeper

    def track(self, task: asyncio.Task) -> None:
        """Keeps a background task referenced (the event loop keeps only weak references) until
        it ends, or its loop closes."""
        self.tasks[task] = None
        task.add_done_callback(lambda done: self.tasks.pop(done, None))

    def connections(self) -> list:
        """The redis-py connections it has open."""
        opened = [channel.connection for channel in self.idle]
        if self._keeper is not None:
            opened += [channel.connection for channel in self._keeper.channels()]
        if hasattr(self.subscriber, "connection"):
            opened.append(self.subscriber.connection)
        return opened

    def abandon(self) -> None:
        """Its loop closed: its connections cannot be closed in it any more, so their sockets
        are shut down under it (the server sees them close), and the state is dropped."""
        shut_down(self.connections())
        self.idle, self.subscriber, self.tasks, self._keeper = [], None, {}, None


def shut_down(connections) -> None:
    """Shuts down the sockets of a closed loop's connections and waits (a bounded time) until
    the server closed them too: by then it has freed what was bound to them, so a later call
    of the same owner (an Election's candidate) finds nothing of them."""
    sockets = []
    for connection in connections:
        writer = getattr(connection, "_writer", None)
        transport_socket = None if writer is None else writer.get_extra_info("socket")
        if transport_socket is None:
            continue
        try:  # a socket of our own on the same connection: the transport's is its loop's
            own = socket.socket(fileno=os.dup(transport_socket.fileno()))
            own.setblocking(False)
            own.shutdown(socket.SHUT_WR)
            sockets.append(own)
        except OSError:
            continue
    deadline = time.monotonic() + READ_GRACE_S
    while sockets and time.monotonic() < deadline:
        readable, _, _ = select.select(sockets, [], [], deadline - time.monotonic())
        for own in readable:
            try:
                if own.recv(65536):
                    continue  # a reply or message sent before the server saw the close
            except BlockingIOError:
                continue
            except OSError:
                pass
            own.close()
            sockets.remove(own)
    for own in sockets:
        own.close()


class PerLoop:
    """One value per event loop, made on first use by `make()`. Shared by the threads that run
    the loops, hence the mutex. A closed loop's value is abandoned (`abandon()`, if it has one)
    when any loop next asks."""

    def __init__(self, make):
        self._make = make
        self._values = {}
        self._mutex = threading.Lock()

    def here(self):
        """The running loop's value."""
        loop = asyncio.get_running_loop()
        for abandoned in self._drop_closed():
            abandoned.abandon()
        with self._mutex:
            value = self._values.get(loop)
            if value is None:
                value = self._values[loop] = self._make()
            return value

    def values(self) -> list:
        for abandoned in self._drop_closed():
            abandoned.abandon()
        with self._mutex:
            return list(self._values.values())

    def _drop_closed(self) -> list:
        """The values of closed loops, dropped: the caller abandons those that can be."""
        with self._mutex:
            closed = [loop for loop in self._values if loop.is_closed()]
            return [value for value in (self._values.pop(loop) for loop in closed) if hasattr(value, "abandon")]


class LoopLock:
    """An asyncio.Lock for each loop that uses it: one made once and kept in an object (a
    binding's guard, an Election's campaign mutex) binds to the first loop in which a task
    waited on it, and raises in any other. It excludes the tasks of one loop, which is what
    an asyncio.Lock does (it never excluded another thread's loop)."""

    def __init__(self):
        self._locks = PerLoop(asyncio.Lock)

    async def acquire(self) -> bool:
        return await self._locks.here().acquire()

    def release(self) -> None:
        self._locks.here().release()

    def locked(self) -> bool:
        return self._locks.here().locked()

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc_info) -> None:
        self.release()
