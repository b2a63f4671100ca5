"""The messages a NOTIFY waiter is told by (docs/notify.md), read without touching a connection.

One bulk string per message, binary-safe, fields separated by one space:

    <event> <type> <value> <key-length> <key> <owner>

The key is counted (it may hold spaces or any byte), the owner is every byte after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from redis.exceptions import ConnectionError, RedisError, ResponseError

#: The reply of a NOTIFY call that has to wait (a simple string: never a token or nil).
WAITING = b"WAITING"

GRANTED, TIMEOUT, FAILED, LOST = "granted", "timeout", "failed", "lost"
EVENTS = frozenset((GRANTED, TIMEOUT, FAILED, LOST))

#: What a message names a latch wait by (its owner is empty).
LATCH_TYPE = "latch"


class NotifyUnavailable(RedisError):
    """The server cannot tell waiters by message here: the module predates NOTIFY, or the ACL
    user may not subscribe to ``__rlock__:*``. Waits then block in WAIT, as before NOTIFY."""


def word(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def check_subscribed(confirmation) -> None:
    """Raises ConnectionError unless `confirmation` is SUBSCRIBE's reply."""
    if not (isinstance(confirmation, list) and confirmation and word(confirmation[0]).lower() == b"subscribe"):
        raise ConnectionError(f"rlock: unexpected reply to SUBSCRIBE: {confirmation!r}")


def is_message(frame) -> bool:
    """A pub/sub message frame: [b"message", channel, data]."""
    return isinstance(frame, list) and len(frame) == 3 and word(frame[0]).lower() == b"message"


@dataclass(frozen=True)
class Message:
    event: str  # granted, timeout, failed, lost
    type: str  # lock, read, write, permits, latch
    value: Union[int, str, None]  # granted, lost: the token; failed: the error code; timeout: None
    key: bytes
    owner: bytes

    @property
    def subject(self) -> tuple:
        """Whose message it is: (type, key, owner), as waits and holdings are filed."""
        return (self.type, self.key, self.owner)

    def error(self, name) -> ResponseError:
        """The error a `failed` message stands for, as the call would have replied it."""
        return ResponseError(f"{self.value} rlock: the wait for {name!r} failed when its turn came")


def parse_message(data: bytes) -> Message:
    """Reads one message; ValueError when it is not in the documented form."""
    if not isinstance(data, (bytes, bytearray)):
        raise ValueError(f"an rlock message is a bulk string, not {type(data).__name__}")
    data = bytes(data)
    parts = data.split(b" ", 4)  # the four fields before the key, then key + owner
    if len(parts) != 5:
        raise ValueError(f"not an rlock message: {data[:100]!r}")
    event, family, value, key_length, rest = parts
    if not key_length.isdigit():
        raise ValueError(f"bad key length in rlock message: {data[:100]!r}")
    length = int(key_length)
    if len(rest) < length + 1 or rest[length : length + 1] != b" ":
        raise ValueError(f"truncated rlock message: {data[:100]!r}")
    event_text = event.decode("ascii", "replace")
    if event_text not in EVENTS:
        raise ValueError(f"unknown rlock event {event_text!r}")
    return Message(
        event=event_text,
        type=family.decode("ascii", "replace"),
        value=_value(event_text, value),
        key=rest[:length],
        owner=rest[length + 1 :],
    )


def _value(event: str, value: bytes) -> Optional[Union[int, str]]:
    if event in (GRANTED, LOST):
        return int(value)
    if event == FAILED:
        return value.decode("utf-8", "replace")
    return None
