"""The pure part: what is sent on each attempt, when to retry, how replies read."""

from __future__ import annotations

import math

import pytest

from rlock._commands import SOCKET_TIMEOUT, Command, Retries, keepalive_interval, parse_info, wait_until
from rlock._family import LOCK, PERMITS, READ, WRITE


def test_a_retry_waits_only_for_the_time_left_and_keeps_its_id():
    command = LOCK.acquire("k", b"me", 30000, True, None, wait_until(True, 2.0, now=100.0))
    first, retry = command.args(now=100.0), command.args(now=101.5)
    assert first[:6] == ["RLOCK.ACQUIRE", "k", b"me", "PX", 30000, "WATCHDOG"]
    assert first[6:8] == ["WAIT", 2000] and retry[6:8] == ["WAIT", 500]
    assert first[-2] == retry[-2] == "ID" and first[-1] == retry[-1]
    assert command.read_timeout(now=101.5) == 0.5 + 5.0


def test_no_time_left_means_one_attempt_not_wait_0():
    command = Command(("RLOCK.ACQUIRE", "k", b"me"), wait_until=100.0)
    assert "WAIT" not in command.args(now=100.5)


def test_waiting_forever_and_not_waiting():
    assert Command((), wait_until=wait_until(True, None, now=0)).args(now=5) == ["WAIT", 0]
    assert Command((), wait_until=math.inf).read_timeout(now=0) is None
    assert Command((), wait_until=wait_until(False, 3.0, now=0)).args(now=0) == []
    assert Command(()).read_timeout(now=0) is SOCKET_TIMEOUT


def test_retries():
    assert [Retries(delays=(0.0, 0.1)).delay(n, now=0) for n in range(3)] == [0.0, 0.1, None]
    until = Retries(delays=(0.0, 0.2), until=10.0)
    assert [until.delay(n, now=9.0) for n in range(4)] == [0.0, 0.2, 0.2, 0.2]
    assert until.delay(0, now=10.0) is None


def test_replies_of_both_protocols():
    resp3 = {b"owner": b"me", b"holds": 2, b"ttl": 900, b"token": 7}
    resp2 = [b"owner", b"me", b"holds", 2, b"ttl", 900, b"token", 7]
    assert parse_info(resp3) == parse_info(resp2) == {"owner": b"me", "holds": 2, "ttl": 900, "token": 7}
    assert parse_info(None) is None
    assert keepalive_interval({b"rlock.watchdog-idle-ms": b"3000"}) == 1.0
    assert keepalive_interval([b"rlock.watchdog-idle-ms", b"30000"]) == 10.0
    assert keepalive_interval(None) == 10.0  # CONFIG refused: the server's default bound
    assert keepalive_interval([b"rlock.watchdog-idle-ms", b"0"]) == 10.0


def test_notify_goes_with_wait_only():
    command = LOCK.acquire("k", b"me", 30000, True, None, wait_until(True, 2.0, now=100.0))
    args = command.args(now=100.0, notify=12)
    assert args[6:10] == ["WAIT", 2000, "NOTIFY", 12] and args[-2] == "ID"
    assert command.waits(now=100.0) and not command.waits(now=102.0)
    assert "NOTIFY" not in command.args(now=102.0, notify=12)  # no time left: one attempt, no wait
    forever = LOCK.acquire("k", b"me", 30000, True, None, wait_until(True, None, now=0))
    assert forever.args(now=5, notify=7)[6:10] == ["WAIT", 0, "NOTIFY", 7]
    assert "NOTIFY" not in LOCK.acquire("k", b"me", 1, False, None, None).args(now=0, notify=7)


def test_each_kind_names_its_command_family_and_mode():
    read = READ.acquire("k", b"me", 5000, True, 900, wait_until(True, 1.0, now=0.0)).args(now=0.0, notify=3)
    assert read[:9] == ["RWLOCK.ACQUIRE", "k", b"me", "READ", "PX", 5000, "WATCHDOG", "MAXHOLD", 900]
    assert read[9:13] == ["WAIT", 1000, "NOTIFY", 3] and read[13] == "ID"
    assert READ.release("k", b"me").args(now=0)[:4] == ["RWLOCK.RELEASE", "k", b"me", "READ"]
    assert READ.renew("k", b"me", 700, watchdog=True).args(now=0) == ["RWLOCK.RENEW", "k", b"me", "PX", 700, "WATCHDOG"]
    assert PERMITS.acquire("s", b"me", 5000, False, None, None, amount=3).args(now=0)[:7] == [
        "RSEM.ACQUIRE", "s", b"me", "PERMITS", 3, "PX", 5000,
    ]
    assert PERMITS.release("s", b"me").args(now=0)[:3] == ["RSEM.RELEASE", "s", b"me"]  # one: the default
    assert LOCK.info("k").args(now=0) == ["RLOCK.INFO", "k"]


def test_holders_are_read_per_kind():
    rwlock_info = {b"mode": b"write", b"holders": [
        [b"owner", b"w", b"mode", b"write", b"token", 9, b"ttl", 100],  # RESP2: a flat array
        {b"owner": b"w", b"mode": b"read", b"token": 11, b"ttl": 100},  # RESP3: a map
    ]}
    assert READ.holder(rwlock_info, b"w")["token"] == 11
    assert WRITE.holder(rwlock_info, b"w")["token"] == 9
    assert READ.holder(rwlock_info, b"x") is None and READ.holders(None) == []
    lock_info = {b"owner": b"o", b"token": 4, b"ttl": 5}
    assert LOCK.holder(lock_info, b"o")["token"] == 4 and LOCK.holder(lock_info, b"p") is None


def test_confirmation_settings_and_replies():
    from rlock._confirm import AUTO, Confirm, ReplicaCount, as_confirm, confirmed_count, replicas_from_role, wait_words

    assert as_confirm("auto") is AUTO and as_confirm(False) is None and as_confirm(0) is None
    assert as_confirm(2) == Confirm(replicas=2) and as_confirm("aof").aof
    with pytest.raises(ValueError):
        as_confirm("sometimes")
    role = [b"master", 100, [[b"127.0.0.1", b"7001", b"100"], [b"127.0.0.1", b"7002", b"90"]]]
    assert replicas_from_role(role) == 2 and replicas_from_role([b"slave", b"h", 1, b"connected", 5]) == 0
    count = ReplicaCount()
    count.count = 0
    assert wait_words(AUTO, count) is None, "no replica: no WAIT at all"
    count.count = 2
    assert wait_words(AUTO, count) == ("WAIT", 2, 1000)
    count.has_waitaof = True
    assert wait_words(Confirm(replicas=1, aof=True, timeout=0.25), count) == ("WAITAOF", 1, 1, 250)
    assert confirmed_count(("WAITAOF", 1, 1, 250), [0, 1]) == -1, "not fsynced on the primary"


def test_commands_are_packed_as_redis_py_packs_them():
    """rlock packs its commands itself (rlock._connections.pack_commands): the same bytes as
    redis-py's packer, names in the client's encoding, and redis-py's error for what it refuses."""
    from redis.connection import Connection
    from redis.exceptions import DataError

    from rlock._connections import pack_commands

    for encoding in ("utf-8", "latin-1"):
        connection = Connection(encoding=encoding)
        commands = [
            LOCK.acquire("clé", b"owner:1", 30000, True, 5000, math.inf).args(now=0, notify=12),
            PERMITS.acquire("s", b"o", 10, False, None, None, 3).args(now=0),
            READ.release("r", b"o").args(now=0),
            WRITE.renew(b"w\xff", b"o", 5, watchdog=True).args(now=0),
            ("RLOCK.GUARD", "k", b"o", 7, "SET", "x", 1.5, memoryview(b"v")),
        ]
        for args in commands:
            assert pack_commands((args,), connection.encoder) == b"".join(map(bytes, connection.pack_command(*args))), args
        assert pack_commands(commands[:2], connection.encoder) == b"".join(map(bytes, connection.pack_commands(commands[:2])))
        with pytest.raises(DataError):
            pack_commands((("RLOCK.GUARD", "k", b"o", 7, "SET", "x", True),), connection.encoder)
