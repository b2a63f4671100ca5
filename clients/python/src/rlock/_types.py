"""What the read-write lock, the semaphore and the latch add to the core, blocking and asyncio
alike: their arguments, their commands and how their replies read. Each blocking and asyncio
class is this plus its core's I/O."""

from __future__ import annotations

from typing import Any, Callable, Optional

from redis.exceptions import LockError

from ._base import HoldBase, Options, logger
from ._commands import (
    parse_info,
    add_permits_command,
    await_command,
    count_command,
    count_down_command,
    set_count_command,
    set_permits_command,
)
from ._family import PERMITS, READ, WRITE, Family


class TypeBase(HoldBase):
    """The arguments of ReadWriteLock and Semaphore: rlock.Lock's, less what only redis-py's
    Lock has (sleep, blocking, raise_on_release_error)."""

    def __init__(
        self,
        redis,
        name,
        timeout: Optional[float] = None,
        blocking_timeout: Optional[float] = None,
        thread_local: bool = True,
        *,
        on_lost: Optional[Callable[[Any], Any]] = None,
        watchdog_lease: Optional[float] = None,
        max_hold: Optional[float] = None,
        confirm=None,
    ):
        super().__init__(
            redis, name, timeout, True, blocking_timeout, thread_local,
            on_lost=on_lost, watchdog_lease=watchdog_lease, max_hold=max_hold, confirm=confirm,
        )


class SideBase(TypeBase):
    """One side (read or write) of a read-write lock: rlock.Lock's methods, on RWLOCK. Both
    sides of one ReadWriteLock share its owner id, so a thread that holds the write side may
    take the read side (a downgrade: releasing the write side then leaves it reading)."""

    def __init__(self, *args, family: Family, **kwargs):
        super().__init__(*args, **kwargs)
        self.family = family

    def _refuse_upgrade(self, owner: bytes) -> None:
        """A reader asking for the write side would wait for itself: refused at once, as the
        server refuses it."""
        if self.family is not WRITE:
            return
        for side in self._siblings:
            holding = side._live_holding()
            if side.family is READ and holding is not None and holding.owner == owner:
                raise LockError(
                    "this thread holds the read lock: release it before asking for the write lock"
                    " (an upgrade would wait for itself)",
                    lock_name=self.name,
                )


class ReadWriteLockBase:
    """Many readers or one writer, fair (FIFO; readers queued behind a writer wait for it),
    reentrant, fenced, with the server's watchdog when ``timeout`` is None."""

    side_class = None  # the core's side: rlock.rwlock.Side or rlock.asyncio.rwlock.Side

    def __init__(self, redis, name, *args, **kwargs):
        """Arguments as Semaphore's: ``timeout=None`` (the watchdog), ``blocking_timeout=None``,
        ``thread_local=True``, and the keywords ``on_lost``, ``watchdog_lease``, ``max_hold``."""
        self.name = name
        self._read = self.side_class(redis, name, *args, family=READ, **kwargs)
        self._write = self.side_class(redis, name, *args, family=WRITE, **kwargs)
        self._write._id = self._read._id  # one owner id: the thread's holdings of both sides
        self._read._siblings = self._write._siblings = (self._read, self._write)

    def read_lock(self):
        """The read side: shared with other readers, excluded by a writer."""
        return self._read

    def write_lock(self):
        """The write side: excludes everyone else."""
        return self._write


class SemaphoreBase(TypeBase):
    """Permits that belong to the thread (task) that took them: its owner id holds them, they
    are renewed by the server's watchdog while rlock's connection lives (``timeout`` None) or
    last ``timeout`` seconds, and they come back when the holder dies: its process (the
    server sees the connection close), or the thread (task) itself, when it ends holding them
    (the core gives them back for it)."""

    family = PERMITS
    reenters_at_once = False  # an owner may wait for more permits

    def _settle_acquire(self, owner: bytes, reply):
        known = self.local.holding
        holding = super()._settle_acquire(owner, reply)
        if holding is not None and holding is not known and self.thread_local:
            self._when_owner_ends(holding)
        return holding

    def _when_owner_ends(self, holding) -> None:
        """Arranges for _give_back(holding) once the calling thread (task) has ended."""
        raise NotImplementedError

    def _orphaned(self, holding, info_reply):
        """RELEASE of all the permits of a holding whose thread ended, or None."""
        entry = self.family.holder(info_reply, holding.owner) if holding.live else None
        if entry is None:
            return None
        logger.warning("rlock: giving back %s permits of %r: the thread (task) holding them ended", entry["permits"], self.name)
        return self.family.release(self.name, holding.owner, entry["permits"])

    def _not_acquired(self) -> LockError:
        return LockError("Unable to acquire a permit within the time specified", lock_name=self.name)

    def _set_permits_command(self, permits: int):
        return self._confirmed(set_permits_command(self.name, permits))

    def _add_permits_command(self, permits: int):
        return self._confirmed(add_permits_command(self.name, permits))

    @staticmethod
    def _available(info_reply) -> int:
        info = parse_info(info_reply)
        return 0 if info is None else int(info["available"])


class LatchBase(Options):
    """A count that opens the latch for every waiter when it reaches 0 (Redisson's
    RCountDownLatch)."""

    def __init__(self, redis, name, *, confirm=None):
        super().__init__(redis, name, confirm=confirm)

    def _set_count_command(self, count: int):
        return self._confirmed(set_count_command(self.name, count))

    def _count_down_command(self):
        return self._confirmed(count_down_command(self.name))

    def _count_command(self):
        return count_command(self.name)

    def _await_command(self, timeout: Optional[float]):
        return await_command(self.name, self._wait_until(True, timeout))
