"""A Holding (one granted hold: key, owner, token, family, lost notice) and the watchdog Binding
that ties an owner's holdings of one key to one connection of a Session (shared by every type,
blocking and asyncio alike)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ._commands import rebind_retries


class Binding:
    """All that one owner holds of one key (a lock; a read and a write holding; permits): the
    server binds it to one watchdog connection, renews it as one (RENEW) and ends it as one when
    that connection closes. A keeper or a subscriber keeps that connection; `guard` serialises
    the owner's calls with its re-binding."""

    def __init__(self, lock: "HoldBase", owner: bytes, guard):
        self.lock, self.owner, self.guard = lock, owner, guard
        self.holdings: list = []
        self.bound = False  # a keeper or a subscriber keeps its watchdog connection
        self.loop = None  # the asyncio event loop whose keeper or subscriber keeps it
        # Called once nothing is held any more: a Keeper waiting on the connection is woken by
        # it to give the connection back at once (else the next acquire would open another).
        self.on_end = None

    def holding_ended(self) -> None:
        """One of its holdings was released or lost. Once none is live, the binding is done
        for good (a new holding gets a new binding): it lets go of its holdings and of its
        on_end, each of which refers back to it, so that reference counting frees all three at
        once. Left to the cyclic garbage collector, an acquire+release left five objects a
        pair behind, and their collections (a full one took 12 ms) stopped every thread of a
        hot lock's process at once, the handoff in progress with them (issue 46)."""
        if self.live:
            return
        on_end, self.on_end = self.on_end, None
        self.holdings = []
        if on_end is not None:
            on_end()

    @property
    def live(self) -> bool:
        return any(holding.live for holding in self.holdings)

    @property
    def orphaned(self) -> bool:
        """Kept in an event loop that closed: as for a process that exited holding it, its
        connection closes and the server frees its holdings (asyncio/_loops.py)."""
        return self.loop is not None and self.loop.is_closed()

    def live_holdings(self) -> list:
        return [holding for holding in self.holdings if holding.live]

    def rebind_command(self):
        lock = self.lock
        return lock.family.renew(lock.name, self.owner, lock.lease_ms, watchdog=True)

    def rebind_retries(self):
        return rebind_retries(self.lock.lease_ms, time.monotonic())


@dataclass(eq=False)
class Holding:
    """One granted hold of one family by one owner: from the acquire that created it (its
    fencing token) to its full release. Re-entries share it; a semaphore's later grants add to
    it. `lock` gives its key, family and Session; `binding`, the connection it is bound to;
    `lost` and the subscriber that tells it so, its lost notice."""

    lock: "HoldBase"
    owner: bytes
    fence: int
    binding: Binding = field(repr=False)
    _ended: bool = False
    _lost: bool = False
    subscriber: Any = None  # the subscriber told of its loss (granted with NOTIFY)

    @property
    def ended(self) -> bool:
        """Fully released."""
        return self._ended

    @ended.setter
    def ended(self, value: bool) -> None:
        self._ended = value
        self.binding.holding_ended()

    @property
    def lost(self) -> bool:
        """Gone without a release of ours: expired, force-released, connection lost (or
        left in an event loop that closed)."""
        return self._lost or self.binding.orphaned

    @lost.setter
    def lost(self, value: bool) -> None:
        self._lost = value
        self.binding.holding_ended()

    @property
    def live(self) -> bool:
        return not (self._ended or self.lost)

    @property
    def guard(self):
        return self.binding.guard
