"""What rlock keeps for an event loop (idle connections, the subscriber): a connection's
streams, futures and tasks work only in the loop that made them, so one redis.asyncio client
used by successive loops (asyncio.run, a loop per test) or by threads each running a loop keeps
these apart per loop. A closed loop's are dropped, never handed to another loop: closing them
would need the closed loop, so Python closes their sockets when it collects them
(`rlock.asyncio.close_idle_connections(r)` before the loop ends closes them cleanly)."""

from __future__ import annotations

import asyncio
import threading


class LoopState:
    """A Session's connections in one loop: the idle ones, and the subscriber (or the task
    opening it)."""

    __slots__ = ("idle", "subscriber")

    def __init__(self):
        self.idle = []
        self.subscriber = None


class PerLoop:
    """One value per event loop, made on first use by `make()`. Shared by the threads that run
    the loops, hence the mutex."""

    def __init__(self, make):
        self._make = make
        self._values = {}
        self._mutex = threading.Lock()

    def here(self):
        """The running loop's value."""
        loop = asyncio.get_running_loop()
        with self._mutex:
            self._drop_closed()
            value = self._values.get(loop)
            if value is None:
                value = self._values[loop] = self._make()
            return value

    def values(self) -> list:
        with self._mutex:
            self._drop_closed()
            return list(self._values.values())

    def _drop_closed(self) -> None:
        for loop in [loop for loop in self._values if loop.is_closed()]:
            del self._values[loop]
