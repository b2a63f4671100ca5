"""The RLOCK commands rlock sends, how they are retried, and how their replies read.

Pure code, shared by the blocking and the asyncio Lock: no connection is touched here.
"""

from __future__ import annotations

import itertools
import math
import os
import uuid
from dataclasses import dataclass
from typing import Any, Optional

from redis.exceptions import ClusterDownError, ConnectionError, ReadOnlyError, TimeoutError, TryAgainError

#: read_timeout() for a command that answers at once: the connection's own socket_timeout.
SOCKET_TIMEOUT = object()

#: How long past a WAIT deadline the reply may take before the connection counts as broken
#: (the server answers within milliseconds of the deadline).
READ_GRACE_S = 5.0

#: rlock.watchdog-idle-ms when the server does not say (its default).
DEFAULT_WATCHDOG_IDLE_MS = 30000

#: How often a keeper looks at its connection when the server has no idle bound
#: (rlock.watchdog-idle-ms 0): only to notice soon that its holding ended.
UNBOUNDED_IDLE_CHECK_S = 10.0


def to_ms(seconds: float) -> int:
    """Seconds (int or float) as whole milliseconds, at least 1 (the smallest PX RLOCK takes)."""
    return max(1, int(seconds * 1000))


class _RequestIds:
    """Request IDs: a random 128-bit prefix per process and a counter, unique as a uuid4 per
    call is, without reading the system's random source on every call (an acquire+release
    pair's costliest step after the socket calls). A forked child draws a prefix of its own."""

    def __init__(self):
        self._reset()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self.prefix = uuid.uuid4().hex
        self.counter = itertools.count(1)

    def next(self) -> str:
        return f"{self.prefix}{next(self.counter):x}"


_request_ids = _RequestIds()


def new_request_id() -> str:
    """A fresh ID for one logical call: its retries re-send the same one."""
    return _request_ids.next()


@dataclass(frozen=True)
class Command:
    """One RLOCK call, as often as it has to be sent.

    `wait_until` is the monotonic time a blocking acquire gives up (math.inf: never, None: it
    does not wait). Each attempt sends WAIT for the time that is left, so a retry after a broken
    connection does not wait longer than the caller asked; the ID stays the same, so the server
    answers a retry of a call it already carried out as it did the first time.
    """

    words: tuple
    wait_until: Optional[float] = None
    request_id: Optional[str] = None
    confirm: Any = None  # a rlock.Confirm: WAIT for the replicas after it (rlock._confirm)

    def args(self, now: float, notify: Optional[int] = None) -> list:
        """The words to send now. With `notify` (a client id), an attempt that waits does so as
        a queue entry told by message on that connection's channel (docs/notify.md)."""
        args = list(self.words)
        if self.waits(now):
            if self.wait_until == math.inf:
                args += ["WAIT", 0]  # WAIT 0: no time limit
            else:
                args += ["WAIT", math.ceil((self.wait_until - now) * 1000)]
            if notify is not None:
                args += ["NOTIFY", notify]
        # else, with nothing left: one attempt without WAIT (WAIT 0 would wait for ever)
        if self.request_id is not None:
            args += ["ID", self.request_id]
        return args

    def waits(self, now: float) -> bool:
        """Whether an attempt sent now would wait (carry WAIT)."""
        return self.wait_until is not None and (
            self.wait_until == math.inf or math.ceil((self.wait_until - now) * 1000) > 0
        )

    def read_timeout(self, now: float) -> Any:
        """SOCKET_TIMEOUT, None (wait for the reply for ever) or seconds."""
        if self.wait_until is None:
            return SOCKET_TIMEOUT
        if self.wait_until == math.inf:
            return None
        return max(0.0, self.wait_until - now) + READ_GRACE_S


def cancel_command(name, owner: bytes) -> Command:
    """RLOCK.CANCEL takes the owner's queue entries out; sent again it finds none: no ID needed."""
    return Command(("RLOCK.CANCEL", name, owner))


CONFIG_COMMAND = Command(("CONFIG", "GET", "rlock.watchdog-idle-ms"))


def set_permits_command(name, permits: int) -> Command:
    """With an ID: a retry of the call that set the count answers 1 again, not "already set"."""
    return Command(("RSEM.SETPERMITS", name, permits), request_id=new_request_id())


def add_permits_command(name, permits: int) -> Command:
    """With an ID: a retry after a lost reply adds once."""
    return Command(("RSEM.ADDPERMITS", name, permits), request_id=new_request_id())


def set_count_command(name, count: int) -> Command:
    """With an ID: a retry of the call that set the latch answers 1 again, not "already set"."""
    return Command(("RLATCH.SET", name, count), request_id=new_request_id())


def count_down_command(name) -> Command:
    """With an ID: a retry after a lost reply counts once."""
    return Command(("RLATCH.COUNTDOWN", name), request_id=new_request_id())


def count_command(name) -> Command:
    return Command(("RLATCH.COUNT", name))


def await_command(name, wait_until: Optional[float]) -> Command:
    return Command(("RLATCH.AWAIT", name), wait_until)


def wait_until(blocking: bool, blocking_timeout: Optional[float], now: float) -> Optional[float]:
    """When a blocking acquire gives up, in the form Command.wait_until takes."""
    if not blocking:
        return None
    if blocking_timeout is None:
        return math.inf
    return now + blocking_timeout


@dataclass(frozen=True)
class Retries:
    """When a call is sent again after its connection failed (each attempt on a new connection).

    With `until`, attempts go on (at the last delay) until that monotonic time; without it, one
    attempt per delay.
    """

    delays: tuple = (0.0, 0.1, 0.4)
    until: Optional[float] = None
    errors: tuple = (ConnectionError, TimeoutError)

    def delay(self, attempt: int, now: float) -> Optional[float]:
        """Seconds to wait before retry number `attempt` (from 0), or None to give up."""
        if self.until is None:
            return self.delays[attempt] if attempt < len(self.delays) else None
        if now >= self.until:
            return None
        return self.delays[min(attempt, len(self.delays) - 1)]


CALL_RETRIES = Retries()

#: How long a call on a Sentinel or Cluster client goes on trying through a failover (the old
#: primary gone or demoted, the new one not yet known): sentinels and cluster nodes take a few
#: seconds to agree on a promotion.
FAILOVER_PATIENCE_S = 30.0


class FailoverError(ConnectionError):
    """The node answered that it cannot take the call now (READONLY: demoted; UNBLOCKED: a
    blocked wait ended by a role change; MASTERDOWN, CLUSTERDOWN, TRYAGAIN, LOADING): it was
    not carried out, and is sent again, with the same ID, wherever the primary is now."""


def is_failover_reply(error: Exception) -> bool:
    """redis-py parses READONLY, CLUSTERDOWN, MASTERDOWN and TRYAGAIN into classes of their
    own (dropping the code from the message); UNBLOCKED stays a plain ResponseError."""
    return isinstance(error, (ReadOnlyError, ClusterDownError, TryAgainError)) or str(error).startswith("UNBLOCKED")


def failover_retries(now: float, until: Optional[float] = None) -> Retries:
    """Retries through a failover, until `until` (a wait's deadline) or the patience ends."""
    limit = now + FAILOVER_PATIENCE_S
    return Retries(delays=(0.0, 0.1, 0.2, 0.5), until=limit if until is None else min(until, limit))

#: For a call without an ID that a resend would run twice (RLOCK.GUARD: the command it guards
#: may not be idempotent): a connection error is raised.
NO_RETRIES = Retries(delays=())


def rebind_retries(lease_ms: int, now: float) -> Retries:
    """Re-binding a watchdog lock after its connection closed: worth trying as long as its lease
    may still run, through a failover (READONLY while the old master turns replica)."""
    return Retries(
        delays=(0.0, 0.05, 0.1, 0.2, 0.5),
        until=now + lease_ms / 1000,
        errors=(ConnectionError, TimeoutError, ReadOnlyError),
    )


def _as_dict(reply) -> dict:
    """A RESP3 map, or the flat field/value array RESP2 gives for it, with str keys."""
    pairs = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2])
    return {key.decode() if isinstance(key, bytes) else key: value for key, value in pairs}


def parse_info(reply) -> Optional[dict]:
    """RLOCK.INFO's reply: None when the lock is free, else {"owner": b"...", "holds": 1, ...}."""
    return None if reply is None else _as_dict(reply)


def keepalive_interval(config_reply) -> float:
    """Seconds between PINGs on a watchdog connection: a third of rlock.watchdog-idle-ms, so
    the server never finds the connection idle for the whole bound."""
    idle_ms = DEFAULT_WATCHDOG_IDLE_MS
    if config_reply:
        values = list(_as_dict(config_reply).values())
        if values:
            idle_ms = int(values[0])
    return idle_ms / 3000 if idle_ms > 0 else UNBOUNDED_IDLE_CHECK_S
