"""How rlock's dedicated connections are made, for the blocking and the asyncio client alike.

A lock never runs its commands on a connection of redis-py's pool: a watchdog lock lives as
long as the connection that took it, and the pool may hand that connection to someone else
(keeping the lock alive for them), reconnect it on checkout, or close it (dropping the lock).
rlock makes its own connections from the pool's settings instead, and keeps them out of it.
"""

from __future__ import annotations

import os
import threading
import weakref
from types import SimpleNamespace

from redis.backoff import NoBackoff
from redis.exceptions import LockError

try:  # redis-py 8: maintenance notifications can relax timeouts and move connections
    from redis.maint_notifications import MaintNotificationsConfig
except ImportError:  # pragma: no cover - older redis-py has no such feature
    MaintNotificationsConfig = None

#: Idle dedicated connections kept per client for reuse; more are closed.
MAX_IDLE_CONNECTIONS = 8


def lock_connection_kwargs(pool, retry_class) -> dict:
    """The pool's connection settings, minus all that would retry, reconnect or re-route a
    connection on its own: a lock's connection fails loudly, and rlock retries the call itself
    with the same request ID on a new connection. Replies stay bytes whatever the client decodes.
    """
    kwargs = dict(pool.connection_kwargs)
    kwargs.update(
        retry=retry_class(NoBackoff(), 0),
        retry_on_error=[],
        retry_on_timeout=False,
        health_check_interval=0,
        decode_responses=False,
    )
    kwargs.pop("maint_notifications_pool_handler", None)
    if MaintNotificationsConfig is not None and "maint_notifications_config" in kwargs:
        kwargs["maint_notifications_config"] = MaintNotificationsConfig(enabled=False)
    return kwargs


def _bulk(word: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(word), word)


#: rlock's own keywords, packed once (ASCII: the server reads its keywords so, whatever the
#: client's encoding, as redis-py packs a command's name).
_KEYWORDS = {
    word: _bulk(word.encode("ascii"))
    for word in (
        *(f"{family}.{verb}" for family in ("RLOCK", "RWLOCK", "RSEM") for verb in ("ACQUIRE", "RELEASE", "RENEW", "INFO")),
        "RLOCK.CANCEL", "RLOCK.GUARD", "RLOCK.ACQUIREALL", "RLOCK.RELEASEALL",
        "PX", "WATCHDOG", "MAXHOLD", "PERMITS", "READ", "WRITE", "WAIT", "NOTIFY", "ID", "WAITAOF", "PING",
    )
}


def pack_commands(commands, encoder) -> bytes:
    """The RESP bytes of `commands` (each a sequence of words), as redis-py's packer makes them
    but for rlock's words only (bytes, str, int; anything else through the client's encoder, which
    raises redis-py's own errors), in one buffer: redis-py's packer cost an uncontended pair more
    CPU than any other step of ours (issue 46). Strings are encoded as the client encodes them."""
    encoding, errors = encoder.encoding, encoder.encoding_errors
    out = []
    for words in commands:
        out.append(b"*%d\r\n" % len(words))
        for word in words:
            kind = type(word)
            if kind is str:
                packed = _KEYWORDS.get(word)
                if packed is not None:
                    out.append(packed)
                    continue
                data = word.encode(encoding, errors)
            elif kind is bytes:
                data = word
            elif kind is int:
                data = b"%d" % word
            else:
                data = encoder.encode(word)
            out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def is_cluster(redis) -> bool:
    """A redis-py RedisCluster (blocking or asyncio): it has a nodes manager, not one pool."""
    return hasattr(redis, "nodes_manager") and hasattr(redis, "keyslot")


def check_client(redis, want_async: bool):
    """What rlock's connections are made from, once it is sure the client suits this class:
    the client's connection pool (a Sentinel ``master_for`` client's pool connects to the
    primary the sentinels name), or the RedisCluster client itself. Both have get_encoder()."""
    if is_cluster(redis):
        is_async = type(redis).__module__.startswith("redis.asyncio")
        source = redis
    else:
        source = getattr(redis, "connection_pool", None)
        if source is None:
            raise TypeError(
                "rlock needs a redis.Redis (one with a connection pool), a Sentinel master_for()"
                f" client or a RedisCluster, blocking or asyncio, not {type(redis).__name__}"
            )
        is_async = type(source).__module__.startswith("redis.asyncio")
        if getattr(source, "is_master", True) is False:
            raise TypeError("rlock writes: use the Sentinel's master_for() client, not slave_for()")
    if is_async != want_async:
        wanted = "rlock.asyncio.Lock" if is_async else "rlock.Lock"
        raise TypeError(f"this client is {'' if is_async else 'not '}asyncio: use {wanted} (and its module's other classes)")
    return source


def node_source(node):
    """A cluster node's connection settings in a pool's shape (connection_class and
    connection_kwargs with its host and port), for its Session."""
    pool = getattr(getattr(node, "redis_connection", None), "connection_pool", None)
    if pool is not None:  # the blocking client's node has a Redis of its own
        return SimpleNamespace(connection_class=pool.connection_class, connection_kwargs=dict(pool.connection_kwargs))
    kwargs = dict(node.connection_kwargs, host=node.host, port=node.port)
    return SimpleNamespace(connection_class=node.connection_class, connection_kwargs=kwargs)


class CrossSlotError(LockError):
    """The keys of one call (a MultiLock's names) are in different hash slots of a cluster."""


def cross_slot(names, error: Exception) -> CrossSlotError:
    """The server's CROSSSLOT, said so that it tells what to do."""
    return CrossSlotError(
        f"rlock: the keys {list(names)!r} are in different hash slots of the cluster: put the keys"
        " in one hash slot with a hash tag, e.g. {order}:1 {order}:2 (the server said: CROSSSLOT"
        f" {error})"
    )
class PerPool:
    """One value per redis-py connection pool, made on first use, and anew after a fork (the
    child must not share the parent's sockets)."""

    def __init__(self, make):
        self._make = make
        self._values = weakref.WeakKeyDictionary()
        self._mutex = threading.Lock()

    def get(self, pool):
        with self._mutex:
            entry = self._values.get(pool)
            if entry is None or entry[0] != os.getpid():
                entry = self._values[pool] = (os.getpid(), self._make(pool))
            return entry[1]
