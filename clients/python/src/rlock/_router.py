"""What the blocking and the asyncio cluster Routers share: a key's hash slot, and the error a
call that names a subscriber raises when its key's slot moved to another node."""

from __future__ import annotations

from redis.exceptions import AskError, ConnectionError

from ._connections import CrossSlotError

#: The slot map is read again at most this often (a failover makes many calls fail at once).
REFRESH_EVERY_S = 0.25

#: MOVED and ASK followed in a row for one call before it is given up (Redis Cluster's clients
#: stop at 16 too: a slot map that keeps pointing elsewhere is broken).
MAX_REDIRECTS = 16


class Moved(ConnectionError):
    """The key's slot is served by another node now: a wait asks again there, through that
    node's subscriber (a NOTIFY call names a connection of the node it is sent to)."""


def slot_of(cluster, names) -> int:
    """The hash slot of `names` (a name, or a MultiLock's names: all in one slot, or
    CrossSlotError before anything is sent)."""
    names = [names] if isinstance(names, (str, bytes, int, float)) else list(names)
    slots = {cluster.keyslot(name) for name in names}
    if len(slots) > 1:
        raise CrossSlotError(
            f"rlock: the keys {names!r} are in different hash slots of the cluster: put the keys in"
            " one hash slot with a hash tag, e.g. {order}:1 {order}:2"
        )
    return slots.pop()


def redirected(cluster, error: Exception, notify, redirects: int):
    """After a failed attempt of a cluster key's call (its slot map already read again where
    that helps): (redirects so far, the node's Session to send it to at once, or None to retry
    after a pause). A call that names a subscriber (`notify`) raises Moved instead: the wait
    asks again through the subscriber of the node named now. Too many redirections raise."""
    if notify is not None:
        raise Moved(str(error)) from error
    if not isinstance(error, AskError):  # a failure: retried after a pause
        return redirects, None
    if redirects >= MAX_REDIRECTS:
        raise error
    # None: a node redis-py's map does not hold yet (it is being read again): retried too.
    return redirects + 1, cluster.named(error.host, error.port)
