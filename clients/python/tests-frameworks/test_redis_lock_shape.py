"""rlock.redis_lock, python-redis-lock's shape, checked for what python-redis-lock's own tests
check (its suite is run by hand from a fetched copy, outside the repository), on rlock's terms where the README says they
differ: RLOCK.INFO instead of GET/TTL, the server's watchdog instead of a renewal thread."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest
import redis

from conftest import lock_info, wait_for
from rlock import WrongTypeError
from rlock.redis_lock import (
    AlreadyAcquired, InvalidTimeout, Lock, NotAcquired, NotExpirable, TimeoutNotUsable, TimeoutTooLarge,
    reset_all,
)

FREED_WITHIN_S = 1.0


@pytest.fixture(params=[True, False], ids=["decoded", "bytes"])
def conn(request, redis_server):
    client = redis.StrictRedis(port=redis_server.port, decode_responses=request.param)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


def test_bad_arguments_are_refused_before_anything_is_sent():
    offline = SimpleNamespace()
    with pytest.raises(ValueError, match="must be instance of StrictRedis"):
        Lock(offline, "x")
    with pytest.raises(ValueError, match="Expire may not be None when auto_renewal is set"):
        Lock(offline, "x", auto_renewal=True, strict=False)
    for expire in (-1, "-1"):
        with pytest.raises(ValueError, match="A negative expire is not acceptable."):
            Lock(offline, "x", expire=expire, strict=False)
    with pytest.raises(TypeError, match="Incorrect type for `id`"):
        Lock(offline, "x", id=object(), strict=False)
    lock = Lock(offline, "x", strict=False)
    with pytest.raises(ValueError, match="A negative expire is not acceptable."):
        lock.extend(expire=-1)
    with pytest.raises(TypeError, match="'expire' must be provided"):
        lock.extend()
    assert [Lock(offline, "x", expire=e, strict=False)._expire for e in (1, "123", 0)] == [1, 123, None]
    assert Lock(offline, "x", id=b"a", strict=False).id == "a"
    assert Lock(offline, "x", id=b"\xff", strict=False).id == "/w=="  # non-ascii bytes: base64


def test_acquire_release_owner_and_locked(conn):
    lock, other = Lock(conn, "report", id="first"), Lock(conn, "report", id="another")
    assert not lock.locked() and lock.get_owner_id() is None
    assert lock.acquire() is True
    assert lock_info(conn, "lock:report")["owner"] in ("first", b"first")
    assert lock.get_owner_id() == "first" and other.locked()
    assert other.acquire(blocking=False) is False
    with pytest.raises(AlreadyAcquired):
        lock.acquire()
    lock.release()
    assert not lock.locked()
    with pytest.raises(NotAcquired):
        lock.release()


def test_timeout_arguments(conn):
    lock = Lock(conn, "report")
    with pytest.raises(TimeoutNotUsable):
        lock.acquire(blocking=False, timeout=1)
    with pytest.raises(InvalidTimeout):
        lock.acquire(timeout=-1)
    with pytest.raises(ValueError, match="invalid literal for int"):
        lock.acquire(timeout="foobar")
    with pytest.raises(TimeoutTooLarge):
        Lock(conn, "report", expire=1).acquire(timeout=2)
    for timeout in (0, "0", "123"):
        assert lock.acquire(timeout=timeout)
        lock.release()
    assert conn.keys("*") == []  # nothing left by the refused calls


def test_a_wait_ends_at_its_timeout_or_when_the_lease_ends(conn):
    with Lock(conn, "report"):
        started = time.monotonic()
        assert Lock(conn, "report").acquire(timeout=0.3) is False
        assert time.monotonic() - started >= 0.3
    Lock(conn, "leased", expire=1).acquire()
    assert Lock(conn, "leased").acquire(timeout=30)  # granted when the 1 s lease ends


def test_auto_renewal_is_the_servers_watchdog(conn):
    with Lock(conn, "renewed", expire=1, auto_renewal=True) as lock:
        assert lock._lock_renewal_thread is None
        assert lock_info(conn, "lock:renewed")["watchdog"] is not None
        assert Lock(conn, "renewed").acquire(timeout=2) is False  # kept past its 1 s lease


def test_a_killed_holder_frees_an_expire_none_lock(conn, redis_server):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, redis; from rlock.redis_lock import Lock;"
         f"Lock(redis.StrictRedis(port={redis_server.port}), 'report').acquire(); print('held', flush=True);"
         "sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        holder.kill()
        holder.wait()
        killed_at = time.monotonic()
        assert Lock(conn, "report").acquire(timeout=30)
        assert time.monotonic() - killed_at < FREED_WITHIN_S
    finally:
        holder.kill()
        holder.wait()


def test_extend(conn):
    lock = Lock(conn, "report", expire=100)
    lock.acquire()
    assert lock_info(conn, "lock:report")["ttl"] <= 100_000
    lock.extend(expire=1000)
    assert lock_info(conn, "lock:report")["ttl"] > 100_000
    Lock(conn, "report", id=lock.id).extend(2000)  # another instance with the lock's id
    assert lock_info(conn, "lock:report")["ttl"] > 1_000_000
    with pytest.raises(NotAcquired):
        Lock(conn, "report").extend(10)
    assert lock_info(conn, "lock:report")["ttl"] > 1_000_000
    lock.release()
    with pytest.raises(NotAcquired):
        lock.extend(10)
    with Lock(conn, "forever") as forever:
        with pytest.raises(NotExpirable):
            forever.extend(expire=1000)
        with pytest.raises(TypeError):
            forever.extend()


def test_release_by_another_instance_with_the_id(conn):
    orig = Lock(conn, "report", expire=100, id=b"a")
    orig.acquire()
    same = Lock(conn, "report", id=b"a")
    with pytest.raises(AlreadyAcquired):
        same.acquire()
    same.release()
    with pytest.raises(NotAcquired):
        orig.release()
    assert not orig.locked()


def test_enter_not_blocking_raises_when_held(conn):
    Lock(conn, "report").acquire()
    with pytest.raises(NotAcquired):
        with Lock(conn, "report", blocking=False):
            pass


def test_reset_and_reset_all_hand_the_locks_to_the_waiters(conn):
    Lock(conn, "one").acquire()
    Lock(conn, "two").acquire()
    results = []
    waiter = threading.Thread(target=lambda: results.append(Lock(conn, "one").acquire(timeout=30)))
    waiter.start()
    wait_for(lambda: lock_info(conn, "lock:one").get("waiters") == 1, "the waiter queued")
    Lock(conn, "one").reset()
    waiter.join()
    assert results == [True]
    reset_all(conn)
    assert not Lock(conn, "one").locked() and not Lock(conn, "two").locked()


def test_no_overlap_among_contending_threads(conn):
    inside, overlaps, entries = [0], [], []

    def contend():
        for _ in range(20):
            with Lock(conn, "contended"):
                inside[0] += 1
                overlaps.append(inside[0] > 1)
                entries.append(1)
                inside[0] -= 1

    threads = [threading.Thread(target=contend) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(entries) == 160 and not any(overlaps)


def test_a_python_redis_lock_string_key_is_another_type(conn):
    conn.set("lock:legacy", "their-id")
    lock = Lock(conn, "legacy")
    assert lock.acquire(blocking=False) is False
    assert lock.get_owner_id() == "their-id"
    with pytest.raises(WrongTypeError):
        lock.acquire()
