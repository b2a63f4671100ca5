"""rlock.Semaphore: RSEM's owned, fair semaphore for redis-py."""

from __future__ import annotations

from typing import Optional

from ._core import Hold, OwnedByThread
from ._types import SemaphoreBase


class Semaphore(OwnedByThread, Hold, SemaphoreBase):
    """Permits on RSEM (Redisson's RPermitExpirableSemaphore, with owners)::

        sem = rlock.Semaphore(r, "gpus")
        sem.try_set_permits(4)
        with sem:                     # one permit, for this thread
            train()

    The permits belong to the thread that took them and come back when it releases them, when
    its process dies (its connection closes: the server's watchdog, ``timeout`` None), when
    its ``timeout`` lease ends, or when the thread ends holding them (rlock gives them back). Waiting is FIFO: a request for 3 permits at the head is not
    passed by later requests for 1. ``fence`` is the token of this thread's latest grant.
    """

    def try_set_permits(self, permits: int) -> bool:
        """Sets the available permits if the semaphore does not exist yet: True, else False."""
        return self._run(self._set_permits_command(permits)) == 1

    def add_permits(self, permits: int) -> int:
        """Adds (negative: removes) available permits; returns how many are available now."""
        return int(self._run(self._add_permits_command(permits)))

    def available_permits(self) -> int:
        return self._available(self._run(self._info_command()))

    def acquire(self, permits: int = 1, blocking: Optional[bool] = None, blocking_timeout: Optional[float] = None) -> bool:
        """Takes ``permits`` more for this thread; True once granted, False when not within
        ``blocking_timeout`` (or at once with ``blocking=False``)."""
        return self._acquire(self._owner(), blocking, blocking_timeout, permits)

    def release(self, permits: int = 1) -> None:
        """Gives back ``permits`` of this thread's."""
        self._release(permits)
