"""Job locks: taken when a job is enqueued (a plain lease that covers its time in the queue),
adopted by the worker that runs it (the same owner's ACQUIRE ... WATCHDOG re-enters the holding
and binds it to that worker's own connection, so the server ends it the moment the worker dies)
and ended when the job finishes. Shared by the Celery task base, the celery-once and the
celery-singleton backends."""

from __future__ import annotations

import os
import threading
from typing import Optional

import redis as redis_py
from redis.exceptions import LockError

from .. import Lock
from .._family import LOCK

#: Seconds a released job lock is re-entered for, just to count and drop its holds.
_RELEASE_LEASE = 60.0
#: More holds than one owner's job lock ever has (its enqueue's, its worker's adoption).
_MAX_HOLDS = 8

_clients: dict = {}
_clients_guard = threading.Lock()


def client_for(url: str) -> redis_py.Redis:
    """One redis-py client per URL and process (a forked worker child makes its own)."""
    if not url:
        raise ValueError("rlock: no Redis URL for the job locks (set rlock_url or broker_url)")
    with _clients_guard:
        key = (os.getpid(), url)
        if key not in _clients:
            _clients[key] = redis_py.Redis.from_url(url)
        return _clients[key]


def check_lease(seconds) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        raise ValueError(f"rlock: a job lock's lease must be a positive number of seconds, not {seconds!r}")
    return float(seconds)


def enqueue(redis, key: str, owner: str, lease: float) -> bool:
    """Takes the job's lock for its time in the queue (a plain lease); False when held."""
    lock = Lock(redis, key, timeout=check_lease(lease), thread_local=False)
    return lock.acquire(blocking=False, token=owner)


def holder(redis, key: str) -> Optional[str]:
    """The owner id holding the job lock, None when it is free."""
    holders = LOCK.holders(redis.execute_command("RLOCK.INFO", key))
    if not holders:
        return None
    owner = holders[0]["owner"]
    return owner.decode() if isinstance(owner, bytes) else owner


class Adopted:
    """The job locks this process's workers hold, bound to their own connections: the lock of a
    key is released through the object that holds it, so that its keeper connection is given back."""

    def __init__(self):
        self._locks: dict = {}
        self._guard = threading.Lock()

    def adopt(self, redis, key: str, owner: str, wait: Optional[float] = 0) -> bool:
        """Takes or re-enters the job's lock as `owner`, bound to this worker's connection
        (server watchdog). `wait`: 0 none, None as long as needed, else seconds. False when
        another owner holds it (after `wait`)."""
        lock = Lock(redis, key, timeout=None, thread_local=False)
        if wait == 0:
            acquired = lock.acquire(blocking=False, token=owner)
        else:
            acquired = lock.acquire(blocking=True, blocking_timeout=wait, token=owner)
        if acquired:
            with self._guard:
                self._locks[(key, owner)] = lock
        return acquired

    def finish(self, redis, key: str, owner: Optional[str] = None) -> None:
        """Ends the job lock of `key` held by `owner` (None: by whoever holds it), every hold of
        it, whichever process took them."""
        with self._guard:
            if owner is None:
                owner = next((o for (k, o) in self._locks if k == key), None)
            lock = self._locks.pop((key, owner), None)
        if owner is None:
            owner = holder(redis, key)
            if owner is None:
                return
        if lock is None:
            lock = Lock(redis, key, timeout=_RELEASE_LEASE, thread_local=False)
            if not lock.acquire(blocking=False, token=owner):
                return  # another owner's now: not this job's to end
        release_all(lock)

    def held(self, key: str) -> bool:
        with self._guard:
            return any(k == key for (k, _) in self._locks)


def release_all(lock: Lock) -> None:
    """Releases every hold of the lock's owner (its enqueue's and its worker's)."""
    for _ in range(_MAX_HOLDS):
        if lock.fence is None:
            return
        try:
            lock.release()
        except LockError:  # lost meanwhile (a lease that ran out): nothing left to release
            return


#: This process's adopted job locks.
adopted = Adopted()
