"""What some replies mean to every type: a refused wait (DEADLOCK), a name that holds another
type (WRONGTYPE), a release of more than held; and a guarded command's reply, decoded as the
client decodes."""

from __future__ import annotations

from typing import Any

from redis.exceptions import LockError, ResponseError


class DeadlockError(LockError):
    """The wait would close a cycle of owners, each waiting for a lock the next one holds: the
    server refused it at once (``-DEADLOCK``, with the cycle in the message) and queued nothing.
    Release what this owner holds, then try again."""


class WrongTypeError(LockError, ResponseError):
    """The name holds another type (a string, another rlock type's key): nothing was acquired.
    A LockError, as redis-py's Lock raises for a name it cannot take, and a ResponseError whose
    message starts with the server's WRONGTYPE."""


def acquire_refused(error: ResponseError, name) -> None:
    """An acquire's error reply: WRONGTYPE (at once, or told by message while waiting) raises
    WrongTypeError rather than reading as a name held by someone else; the rest as not_a_lock."""
    if str(error).startswith("WRONGTYPE"):
        raise WrongTypeError(f"{error} ({name!r} holds another type: nothing was acquired)", lock_name=name) from error
    return not_a_lock(error)


def not_a_lock(error: ResponseError, otherwise: Any = None) -> Any:
    """A WRONGTYPE reply to anything but an acquire means the name holds something that is not
    this type (another writer took the name): redis-py's lock reports that as not owned any
    more, so it reads as the reply for "not yours" (None), or as ``otherwise`` where redis-py
    sees a taken name (locked()). A release of more permits than the owner holds is a
    LockError. Anything else is raised again."""
    message = str(error)
    if message.startswith("DEADLOCK"):
        raise DeadlockError(message) from error
    if message.startswith("this owner holds only"):  # redis-py drops the ERR prefix
        raise LockError(f"Cannot release more than held: {message}") from error
    if not message.startswith("WRONGTYPE"):
        raise error
    return otherwise


#: What INFO reads as when the key holds another type: taken, as redis-py sees a name it cannot use.
TAKEN = object()


def _decoded(encoder, reply):
    if not getattr(encoder, "decode_responses", False):
        return reply
    if isinstance(reply, list):
        return [_decoded(encoder, item) for item in reply]
    return encoder.decode(reply) if isinstance(reply, bytes) else reply
