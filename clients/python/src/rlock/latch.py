"""rlock.CountDownLatch: RLATCH's count-down latch for redis-py."""

from __future__ import annotations

from typing import Optional

from ._core import Blocking, wait_with_notify
from ._notify import NotifyUnavailable
from ._types import LatchBase
from ._waiting import LatchRequest, notifies


class CountDownLatch(Blocking, LatchBase):
    """A count that opens the latch for every waiter when it reaches 0 (Redisson's
    RCountDownLatch)::

        latch = rlock.CountDownLatch(r, "batch:7")
        latch.try_set_count(3)
        ...                            # three workers each call latch.count_down()
        latch.wait(timeout=60)         # True once they all did

    A waiting wait() is told by message on the client's subscriber connection, as rlock.Lock's
    waits are (or, where NOTIFY is refused, blocks in WAIT).
    """

    def try_set_count(self, count: int) -> bool:
        """Sets the count (at least 1) if the latch is not set: True, else False. A call
        retried after a dropped connection that set it is True."""
        return self._run(self._set_count_command(count)) == 1

    def count_down(self) -> int:
        """Counts one down; returns the count left (0: open). A call retried after a dropped
        connection counts once."""
        return int(self._run(self._count_down_command()))

    def get_count(self) -> int:
        return int(self._run(self._count_command()))

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits until the latch opens (True) or ``timeout`` seconds pass (False); None: no
        limit, 0: only looks. A latch never set counts as open."""
        command = self._await_command(timeout)
        if notifies(self._session, command):
            try:
                return wait_with_notify(self._session, LatchRequest(self, command))
            except NotifyUnavailable:
                pass
        return self._run(command) == 1
