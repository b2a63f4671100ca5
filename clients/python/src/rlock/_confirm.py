"""Confirmation by the replicas (docs/availability.md): a write rlock makes is pipelined with
``WAIT n timeout`` (or ``WAITAOF 1 n timeout``) on the same connection, so a failover right
after an acquisition cannot hand the lock to a second holder unnoticed. Pure code: what to
send and what the replies mean; the blocking and the asyncio Session do the I/O.

Redis sets a connection's replication offset after each of its commands (7.2+ also for a
module-blocked client when it is unblocked), so the WAIT after a command counts the replicas
that have that command's write. A grant told by message was written by another connection;
it is confirmed by a RENEW (which writes PEXPIREAT) pipelined with WAIT instead.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Optional, Union

from redis.exceptions import LockError, ResponseError

from ._commands import Command
from ._notify import WAITING

logger = logging.getLogger("rlock")

#: How long a node's replica count (from ROLE) is trusted before it is read again.
REPLICAS_TTL_S = 1.0


class NotConfirmedError(LockError):
    """Fewer replicas than required acknowledged a write within the confirmation timeout.
    An acquisition was undone (released) and is not held; a release, renewal or count-down
    stands on the primary but may be lost if it fails over now."""

    def __init__(self, message: str, *, confirmed: int, required: int, timeout_ms: int, lock_name=None):
        super().__init__(message, lock_name=lock_name)
        self.confirmed, self.required, self.timeout_ms = confirmed, required, timeout_ms


@dataclass(frozen=True)
class Confirm:
    """How rlock's writes are confirmed by the replicas.

    - ``replicas``: ``"auto"`` (the replicas connected to the primary at that moment, read
      with ROLE, at most once a second; none: no WAIT at all) or a number.
    - ``timeout``: seconds (1, as Redisson's ``slavesSyncTimeout``).
    - ``aof``: ``WAITAOF 1 n`` (fsynced by the primary and n replicas; Redis >= 7.2).
    - ``on_failure``: ``"raise"`` (NotConfirmedError; an acquisition is released first) or
      ``"warn"`` (log a warning and go on as if confirmed).
    """

    replicas: Union[str, int] = "auto"
    timeout: float = 1.0
    aof: bool = False
    on_failure: str = "raise"

    def __post_init__(self):
        if self.replicas != "auto" and not (isinstance(self.replicas, int) and self.replicas >= 0):
            raise ValueError(f"Confirm(replicas=...) is 'auto' or a count, not {self.replicas!r}")
        if self.on_failure not in ("raise", "warn"):
            raise ValueError(f"Confirm(on_failure=...) is 'raise' or 'warn', not {self.on_failure!r}")

    @property
    def timeout_ms(self) -> int:
        return max(1, int(self.timeout * 1000))


AUTO = Confirm()


def as_confirm(setting) -> Optional[Confirm]:
    """A ``confirm=`` argument as a Confirm, or None for no confirmation: a Confirm, ``"auto"``,
    ``"aof"``, a replica count, or ``False``/``"off"``/``0``."""
    if isinstance(setting, Confirm):
        return setting
    if setting is False or setting == "off" or setting is None:
        return None
    if setting is True or setting == "auto":
        return AUTO
    if setting == "aof":
        return Confirm(aof=True)
    if isinstance(setting, int) and not isinstance(setting, bool):
        return Confirm(replicas=setting) if setting > 0 else None
    raise ValueError(f"confirm= takes a rlock.Confirm, 'auto', 'aof', a replica count or False, not {setting!r}")


def replicas_from_role(reply) -> int:
    """ROLE's reply on a primary: [b"master", offset, [[ip, port, offset], ...]]."""
    if isinstance(reply, list) and len(reply) >= 3 and bytes(reply[0]).lower() == b"master":
        return len(reply[2] or ())
    return 0


def replicas_from_info(reply) -> int:
    """INFO replication's text (for a user that may not run ROLE)."""
    text = reply.decode() if isinstance(reply, bytes) else str(reply)
    for line in text.splitlines():
        if line.startswith("connected_slaves:"):
            return int(line.split(":", 1)[1])
    return 0


ROLE_COMMAND = Command(("ROLE",))
INFO_REPLICATION_COMMAND = Command(("INFO", "replication"))
WAITAOF_INFO_COMMAND = Command(("COMMAND", "INFO", "WAITAOF"))


class ReplicaCount:
    """One node's replica count, read at most once a second and again after a failure, and
    whether it has WAITAOF."""

    def __init__(self):
        self.count: Optional[int] = None
        self.read_at = 0.0
        self.has_waitaof: Optional[bool] = None
        self._warned = False

    def stale(self) -> bool:
        return self.count is None or time.monotonic() - self.read_at > REPLICAS_TTL_S

    def invalidate(self) -> None:
        self.count = None

    def needs_reading(self, confirm: "Confirm") -> bool:
        return (confirm.replicas == "auto" and self.stale()) or (confirm.aof and self.has_waitaof is None)

    def reading(self, confirm: "Confirm"):
        """The reads (a generator: yields a Command, is sent its reply or its ResponseError)."""
        if confirm.replicas == "auto" and self.stale():
            reply = yield ROLE_COMMAND
            if isinstance(reply, ResponseError):  # ROLE forbidden by the ACL: INFO may not be
                reply = yield INFO_REPLICATION_COMMAND
                count = 0 if isinstance(reply, ResponseError) else replicas_from_info(reply)
                if isinstance(reply, ResponseError) and not self._warned:
                    self._warned = True
                    logger.warning("rlock: cannot read the replica count (%s): writes are not confirmed", reply)
            else:
                count = replicas_from_role(reply)
            self.count, self.read_at = count, time.monotonic()
        if confirm.aof and self.has_waitaof is None:
            reply = yield WAITAOF_INFO_COMMAND
            self.has_waitaof = isinstance(reply, list) and bool(reply) and reply[0] is not None


def wait_words(confirm: Confirm, replicas: ReplicaCount) -> Optional[tuple]:
    """The WAIT (WAITAOF) to pipeline after a write, or None when there is nothing to wait for."""
    if confirm.aof and not replicas.has_waitaof:
        raise LockError(
            "rlock: Confirm(aof=True) needs WAITAOF, which this server lacks (Redis >= 7.2,"
            " Valkey >= 8.0): confirm by the replicas only (aof=False), or upgrade"
        )
    wanted = (replicas.count or 0) if confirm.replicas == "auto" else confirm.replicas
    if wanted <= 0 and not confirm.aof:
        return None
    if confirm.aof:
        return ("WAITAOF", 1, wanted, confirm.timeout_ms)
    return ("WAIT", wanted, confirm.timeout_ms)


def confirmed_count(words: tuple, reply) -> int:
    """How many replicas acknowledged: WAIT's integer, WAITAOF's [local, replicas]."""
    if words[0] == "WAITAOF":
        local, replicas = int(reply[0]), int(reply[1])
        return replicas if local >= 1 else -1
    return int(reply)


class Unconfirmed(Exception):
    """Raised by a channel's call (not a RedisError: never retried) when a write was carried
    out but not confirmed; the caller undoes an acquisition and raises NotConfirmedError."""

    def __init__(self, reply, channel, confirmed: int, required: int, confirm: Confirm):
        super().__init__(f"confirmed by {confirmed} of {required} replicas within {confirm.timeout_ms} ms")
        self.reply, self.channel = reply, channel
        self.confirmed, self.required, self.confirm = confirmed, required, confirm

    def error(self, name, what: str) -> NotConfirmedError:
        return NotConfirmedError(
            f"{what} {name!r}: confirmed by {max(self.confirmed, 0)} of {self.required} replicas"
            f" within {self.confirm.timeout_ms} ms",
            confirmed=max(self.confirmed, 0), required=self.required,
            timeout_ms=self.confirm.timeout_ms, lock_name=name,
        )


def settle_wait(command, words: tuple, reply, wait_reply, channel):
    """The command's reply once its WAIT answered: raises Unconfirmed when a write it made
    (a nil reply made none) was acknowledged by too few replicas; logs it under ``warn``.
    A queued acquire (``WAITING``) wrote nothing either: its grant, told later by message, is
    confirmed on its own; answering it "not confirmed" here would leave its wait queued on the
    server, to be granted to an owner that no longer knows it."""
    if reply is None or reply == WAITING or words is None:
        return reply
    confirmed, required = confirmed_count(words, wait_reply), words[-2]
    if confirmed >= required:
        return reply
    confirm = command.confirm
    if confirm.on_failure == "warn":
        logger.warning(
            "rlock: %s confirmed by %s of %s replicas within %s ms",
            command.words[0], max(confirmed, 0), required, confirm.timeout_ms,
        )
        return reply
    raise Unconfirmed(reply, channel, confirmed, required, confirm)
