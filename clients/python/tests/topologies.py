"""Production topologies for the tests (the shared harness, clients/harness/topology.py): the
clients a user would make for them, and what the failover tests check against."""

from __future__ import annotations

import asyncio
import sys
import threading
import time

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.asyncio.sentinel
import redis.cluster
import redis.sentinel
from redis.crc import key_slot

from servers import MODULE, REPO

sys.path.insert(0, str(REPO / "clients/harness"))
from topology import Topology  # noqa: E402


def start(kind: str, workdir) -> Topology:
    return Topology.start(kind, module=str(MODULE), workdir=str(workdir))


def primary_port(topology: Topology, key: str) -> int:
    """The port of the primary that serves `key` now."""
    described = topology.describe()
    if "primary" in described and described.get("primary"):
        return described["primary"]["port"]
    slot = key_slot(key.encode())
    for node in described["nodes"]:
        if node.get("role") == "primary" and any(a <= slot <= b for a, b in node["slots"]):
            return node["port"]
    raise AssertionError(f"no primary serves {key!r}: {described}")


def admin_for(topology: Topology, key: str) -> redis.Redis:
    """A plain client of the primary serving `key` (to look at the server's state)."""
    return redis.Redis(port=primary_port(topology, key), decode_responses=True)


#: An ACL user that may not subscribe to rlock's channels: its waits block in WAIT (no NOTIFY).
BLOCKED_USER = "blocked"


def prepare(topology: Topology) -> Topology:
    """On every server (ACLs and configuration are not replicated): the user whose waits
    block in WAIT, and the module's keyspace events that election observers need."""
    for node in topology.describe()["nodes"]:
        admin = redis.Redis(port=node["port"])
        admin.execute_command("ACL", "SETUSER", BLOCKED_USER, "on", "nopass", "~*", "+@all", "resetchannels")
        admin.config_set("notify-keyspace-events", "Kdgx")
        admin.close()
    return topology


def user_client(topology: Topology, asyncio_client: bool, **kwargs):
    """The client a user passes: a Sentinel master_for() client, or a RedisCluster."""
    described = topology.describe()
    if described["kind"] == "cluster":
        node = next(n for n in described["nodes"] if n.get("role") == "primary")
        cls = redis.asyncio.cluster.RedisCluster if asyncio_client else redis.cluster.RedisCluster
        return cls(host="127.0.0.1", port=node["port"], **kwargs)
    sentinels = [(s["host"], s["port"]) for s in described["sentinels"]]
    if sentinels:
        cls = redis.asyncio.sentinel.Sentinel if asyncio_client else redis.sentinel.Sentinel
        return cls(sentinels, socket_timeout=2).master_for(described["master_name"], socket_timeout=5, **kwargs)
    cls = redis.asyncio.Redis if asyncio_client else redis.Redis
    return cls(port=described["primary"]["port"], socket_timeout=5, **kwargs)


class FencedResource:
    """A store that refuses a token lower than the highest it has accepted (the fencing a
    protected resource does), and records who was inside at once: two holders at once is what
    must never happen."""

    def __init__(self):
        self.highest = 0
        self.accepted = []
        self.inside = set()
        self._mutex = threading.Lock()

    def write(self, token: int) -> bool:
        with self._mutex:
            if token < self.highest:
                return False
            self.highest = token
            self.accepted.append(token)
            return True

    def enter(self, who: str, token: int) -> None:
        with self._mutex:
            assert not self.inside, f"{who} (token {token}) entered while {self.inside} held the lock"
            self.inside.add(who)
        assert self.write(token), f"{who}'s token {token} is below {self.highest}"

    def leave(self, who: str) -> None:
        with self._mutex:
            self.inside.discard(who)


async def eventually(predicate, timeout: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def fields(reply) -> dict:
    """An INFO reply as a dict (a RESP3 map, or RESP2's flat list)."""
    return reply if isinstance(reply, dict) else dict(zip(reply[::2], reply[1::2]))


def queued(admin: redis.Redis, key: str) -> int:
    """Waiters in the key's queue on that server."""
    info = admin.execute_command("RLOCK.INFO", key)
    return 0 if not info else int(fields(info).get("waiters", 0))
