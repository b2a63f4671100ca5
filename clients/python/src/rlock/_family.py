"""The families: the per-type command set each lock type sends (RLOCK's lock, RWLOCK's read and
write sides, RSEM's permits), as the server's src/families/ has them, and how their INFO reads.
Pure code, shared by the blocking and the asyncio clients."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ._commands import Command, _as_dict, new_request_id, parse_info


@dataclass(frozen=True)
class Family:
    """The per-type command set (the server's src/families/): which ACQUIRE, RELEASE, RENEW and
    INFO a type sends, for RLOCK's lock, a side of RWLOCK's read-write lock, or RSEM's permits.
    Every family takes an owner, a lease (PX), WATCHDOG, MAXHOLD, WAIT/NOTIFY and ID the same
    way; only the command prefix and the words after the owner differ."""

    prefix: str  # RLOCK, RWLOCK, RSEM
    message_type: str  # how its NOTIFY messages name it: lock, read, write, permits
    mode: Optional[str] = None  # RWLOCK's READ or WRITE
    counted: bool = False  # RSEM: PERMITS n

    def _words(self, verb: str, name, owner: bytes, amount: int) -> list:
        words = [f"{self.prefix}.{verb}", name, owner]
        if self.mode is not None:
            words.append(self.mode)
        if self.counted and amount != 1:
            words += ["PERMITS", amount]
        return words

    def acquire(self, name, owner: bytes, lease_ms: int, watchdog: bool, max_hold_ms, wait_until, amount: int = 1, confirm=None):
        words = self._words("ACQUIRE", name, owner, amount) + ["PX", lease_ms]
        if watchdog:
            words.append("WATCHDOG")
        if max_hold_ms is not None:
            words += ["MAXHOLD", max_hold_ms]
        return Command(tuple(words), wait_until, new_request_id(), confirm)

    def release(self, name, owner: bytes, amount: int = 1, confirm=None) -> Command:
        return Command(tuple(self._words("RELEASE", name, owner, amount)), None, new_request_id(), confirm)

    def renew(self, name, owner: bytes, lease_ms: int, watchdog: bool = False, confirm=None) -> Command:
        """RENEW sets the lease again (of all the owner's holdings of the key); it is idempotent,
        so it needs no ID to be retried."""
        words = (f"{self.prefix}.RENEW", name, owner, "PX", lease_ms)
        return Command(words + ("WATCHDOG",) if watchdog else words, None, None, confirm)

    def info(self, name) -> Command:
        return Command((f"{self.prefix}.INFO", name))

    def holders(self, info_reply) -> list:
        """The holders INFO lists, each a dict with str keys (owner, token, ttl, ...), of this
        family's mode only: RLOCK's INFO is its one holder."""
        info = parse_info(info_reply)
        if info is None:
            return []
        if "holders" not in info:
            return [info]
        entries = [_as_dict(entry) for entry in info["holders"]]
        if self.mode is None:
            return entries
        mode = self.mode.lower().encode()
        return [entry for entry in entries if entry["mode"] == mode]

    def holder(self, info_reply, owner: bytes) -> Optional[dict]:
        """This owner's entry in INFO's reply, None when it holds nothing of this family."""
        return next((entry for entry in self.holders(info_reply) if entry["owner"] == owner), None)


LOCK = Family("RLOCK", "lock")
READ = Family("RWLOCK", "read", mode="READ")
WRITE = Family("RWLOCK", "write", mode="WRITE")
PERMITS = Family("RSEM", "permits", counted=True)
