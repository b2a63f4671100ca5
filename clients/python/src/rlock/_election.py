"""Leader election with etcd's verbs over one lock key (docs/election.md), for the blocking and
the asyncio client alike: candidates queue for a watchdog lock under their candidate id (the
server's FIFO queue), the holder leads, and its fencing token is its term. Observers follow
the leader through the key's keyspace events (module class ``d``), reading ``RLOCK.LEADER``
at each event and after every (re)subscription.

The observer's flow is written once, as a generator of I/O steps (as rlock._waiting's): the
blocking client runs it in a thread, the asyncio one in a task.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, NamedTuple, Optional

from redis.exceptions import ConnectionError, RedisError, ResponseError, TimeoutError

from ._commands import Command, _as_dict

logger = logging.getLogger("rlock")

#: How long an observer waits before it connects again after its connection dropped.
RECONNECT_PAUSE_S = 0.1

#: The shortest wait a campaign asks for (1 ms: WAIT's unit).
MIN_CAMPAIGN_S = 0.001

#: The name of an observer's connection (CLIENT LIST).
OBSERVER_NAME = "rlock-observer"

EVENTS_SETTING = Command(("CONFIG", "GET", "notify-keyspace-events"))


class Leader(NamedTuple):
    """Who leads: the candidate id (the lock's owner id) and its term (the holding's fencing
    token, larger than every term before it; None for a lock a Redisson client took)."""

    owner: str
    term: Optional[int]


class NoKeyspaceEvents(RedisError):
    """observe() needs the server to publish keyspace events of the module class:
    ``notify-keyspace-events`` with ``K`` and ``d`` (``Kdgx`` also shows a lease end and a DEL)."""


def check_events(setting) -> None:
    """Raises NoKeyspaceEvents unless CONFIG GET notify-keyspace-events's reply has K and d
    (``A`` includes ``d``). A server that does not let us read it (None) is trusted."""
    if setting is None:
        return
    values = list(_as_dict(setting).values())
    flags = values[0].decode() if values and isinstance(values[0], bytes) else str(values[0] if values else "")
    if "K" in flags and ("d" in flags or "A" in flags):
        return
    raise NoKeyspaceEvents(
        f"notify-keyspace-events is {flags!r}: observing an election needs K and d"
        " (CONFIG SET notify-keyspace-events Kdgx)"
    )


class ElectionBase:
    """One candidate in the election `name` (the lock key, used as given), running as
    `candidate`: the owner id every participant sees as the leader, so put in it what
    followers need (its address, say). Candidate ids must be unique: two Elections with one id
    are one candidate. Nothing is sent until it campaigns or asks.

    ``on_lost(election)`` is called (from a background thread; asyncio: a task, and it may be a
    coroutine function) when a leadership ends other than by resign(): its connection dropped
    and could not be re-bound, the lock was force-released or deleted, its lease ran out.
    ``watchdog_lease`` (seconds, 30 by default) is how long a leader that went quiet (its
    process paused) keeps the lock before the next candidate leads."""

    lock_class: Any  # rlock.Lock or rlock.asyncio.Lock

    def __init__(
        self,
        redis,
        name,
        candidate: str,
        *,
        on_lost: Optional[Callable[[Any], Any]] = None,
        watchdog_lease: Optional[float] = None,
        confirm=None,
    ):
        self.name, self.candidate, self.on_lost = name, candidate, on_lost
        # The holding is the object's (any thread or task may resign), its owner the candidate.
        self._lock = self.lock_class(
            redis, name, thread_local=False, on_lost=self._lost, watchdog_lease=watchdog_lease, confirm=confirm,
        )
        self._campaigning = self._lock._new_guard()  # one campaign at a time
        pool = getattr(redis, "connection_pool", None)  # a RedisCluster has db 0 only
        db = 0 if pool is None else pool.connection_kwargs.get("db", 0)
        self._keyspace_channel = f"__keyspace@{db}__:".encode() + self._lock._key

    @property
    def term(self) -> Optional[int]:
        """This candidate's term while it leads (as far as it knows: on_lost tells when that
        ends), else None."""
        holding = self._lock._live_holding()
        return None if holding is None else holding.fence

    @property
    def is_leader(self) -> bool:
        return self.term is not None

    def _lost(self, lock):
        return None if self.on_lost is None else self.on_lost(self)

    def _campaign_args(self, timeout: Optional[float]) -> dict:
        """Lock.acquire's arguments. A campaign always waits by NOTIFY (WAIT 1 ms at least, for
        timeout=0), so that its holding is told of a force release or a lease end by message."""
        if timeout is not None:
            timeout = max(timeout, MIN_CAMPAIGN_S)
        return {"blocking": True, "blocking_timeout": timeout, "token": self.candidate}

    def _leader_command(self) -> Command:
        return Command(("RLOCK.LEADER", self.name))

    def _leader(self, reply) -> Optional[Leader]:
        """RLOCK.LEADER's reply: a map (RESP3) or flat array (RESP2) of owner, token, ttl; nil
        when free."""
        if reply is None:
            return None
        fields = _as_dict(reply)
        token = fields.get("token")
        owner = self._lock._encoder.decode(fields["owner"], force=True)
        return Leader(owner, None if token is None else int(token))


_UNSEEN = object()


class ObserverBase:
    """What the blocking and the asyncio observer share: their flow (follow) queues each
    leader as a 1-tuple, then its error if it failed, then END; the caller reads them."""

    END = object()
    _ended = False

    def _item(self, item, stop: type):
        """A queued leader, or raises: the flow's error, else `stop` once it ended."""
        if isinstance(item, tuple):
            return item[0]
        self._ended = True
        if isinstance(item, Exception):
            raise item
        raise stop


def follow(io, election: ElectionBase):
    """The observer's flow: on each connection (subscribed first), read the leader, then again
    at every event of the key, reporting each change (io.emit); when the connection drops, a
    fresh one catches up the same way, so a change missed meanwhile is reported late, never
    lost for good. Between changes it sends nothing but a PING when quiet."""
    try:
        setting = yield io.call(EVENTS_SETTING)
    except ResponseError:  # CONFIG renamed or forbidden: trusted
        setting = None
    check_events(setting)
    last = _UNSEEN
    while not io.closed:
        try:
            yield io.listen(election._keyspace_channel)
            while True:
                leader = election._leader((yield io.call(election._leader_command())))
                if leader != last:
                    last = leader
                    yield io.emit(leader)
                yield io.next_event()
        except (ConnectionError, TimeoutError) as error:
            if io.closed:
                return
            logger.info("rlock: observing %r: %r; connecting again", election.name, error)
        yield io.sleep(RECONNECT_PAUSE_S)
