"""python-redis-lock's shape on RLOCK: ``from rlock.redis_lock import Lock`` in place of
``from redis_lock import Lock``.

    lock = Lock(redis_client, "report", expire=60, auto_renewal=True)
    with lock:
        ...

The same constructor, methods (acquire, release, extend, locked, get_owner_id, reset; the module's
reset_all), exceptions and log lines as python-redis-lock 4.0; the key is ``lock:<name>`` too,
but holds an RLOCK (read it with RLOCK.INFO, not GET). What differs, and why:

- ``expire=None`` (the default): python-redis-lock's key never expires, so a crashed holder
  leaves it held forever; here the server's watchdog keeps the lock while the holder's
  connection lives, and frees it the moment the holder dies.
- ``auto_renewal=True``: the server's watchdog with ``expire`` as its lease, no renewal thread
  (the ``_lock_renewal_thread`` stays None; a paused holder keeps the lock only while its
  connection lives and answers, at most ``rlock.watchdog-idle-ms``).
- Waiting is FIFO in the server's queue (no BLPOP on ``lock-signal:<name>``, which is never
  written; ``signal_expire`` is accepted and ignored); ``timeout`` may be fractional.
- ``extend()`` of a lock held without expiry raises NotExpirable, as python-redis-lock does; a
  lock held with ``auto_renewal`` by another instance is reported the same way (both are bound
  to a watchdog), while the instance that took it extends its lease.
- A ``lock:<name>`` key left by python-redis-lock itself (a string) is another type: a
  non-blocking acquire returns False, a blocking one raises rlock.WrongTypeError.
"""

from __future__ import annotations

import uuid
from base64 import b64encode
from logging import getLogger
from os import urandom
from typing import Optional

from redis import StrictRedis
from redis.exceptions import LockNotOwnedError, ResponseError

from ._base import WrongTypeError
from ._family import LOCK
from .lock import Lock as RLock

__all__ = [
    "AlreadyAcquired", "AlreadyStarted", "InvalidTimeout", "Lock", "NotAcquired", "NotExpirable",
    "TimeoutNotUsable", "TimeoutTooLarge", "reset_all",
]

logger_for_acquire = getLogger(f"{__name__}.acquire")
logger_for_release = getLogger(f"{__name__}.release")

#: python-redis-lock's scripts are not used; its tests reset this module attribute.
reset_all_script = None


class AlreadyAcquired(RuntimeError):
    pass


class NotAcquired(RuntimeError):
    pass


class AlreadyStarted(RuntimeError):
    pass


class TimeoutNotUsable(RuntimeError):
    pass


class InvalidTimeout(RuntimeError):
    pass


class TimeoutTooLarge(RuntimeError):
    pass


class NotExpirable(RuntimeError):
    pass


def _expire_seconds(expire) -> Optional[int]:
    """python-redis-lock's reading of an expire: whole seconds, 0 or None for none."""
    if not expire:
        return None
    expire = int(expire)
    if expire < 0:
        raise ValueError("A negative expire is not acceptable.")
    return expire


class Lock:
    """python-redis-lock's Lock on RLOCK (see the module's doc for what differs)."""

    def __init__(self, redis_client, name, expire=None, id=None, auto_renewal=False, strict=True,
                 signal_expire=1000, blocking=True):
        if strict and not isinstance(redis_client, StrictRedis):
            raise ValueError("redis_client must be instance of StrictRedis. Use strict=False if you know what you're doing.")
        if auto_renewal and expire is None:
            raise ValueError("Expire may not be None when auto_renewal is set")
        self._client = redis_client
        self._expire = _expire_seconds(expire)
        self._signal_expire = signal_expire
        if id is None:
            self._id = b64encode(urandom(18)).decode("ascii")
        elif isinstance(id, bytes):
            try:
                self._id = id.decode("ascii")
            except UnicodeDecodeError:
                self._id = b64encode(id).decode("ascii")
        elif isinstance(id, str):
            self._id = id
        else:
            raise TypeError(f"Incorrect type for `id`. Must be bytes/str not {type(id)}.")
        self._name = "lock:" + name
        self._signal = "lock-signal:" + name  # never written: waiting is the server's queue
        self._auto_renewal = bool(auto_renewal)
        self._lock_renewal_interval = float(self._expire) * 2 / 3 if auto_renewal else None
        self._lock_renewal_thread = None  # the server's watchdog renews: no thread
        self.blocking = blocking
        self._rlock: Optional[RLock] = None  # made at the first acquire (the client is checked then)

    @property
    def id(self) -> str:
        return self._id

    @property
    def _watchdog(self) -> bool:
        return self._expire is None or self._auto_renewal

    def _held_lock(self) -> RLock:
        if self._rlock is None:
            self._rlock = RLock(self._client, self._name, timeout=None if self._watchdog else self._expire,
                                thread_local=False, watchdog_lease=self._expire if self._auto_renewal else None)
        return self._rlock

    def _info(self) -> dict:
        """RLOCK.INFO's holder entry, {} when free."""
        holders = LOCK.holders(self._client.execute_command("RLOCK.INFO", self._name))
        return holders[0] if holders else {}

    @property
    def _held(self) -> bool:
        return self.id == self.get_owner_id()

    def get_owner_id(self) -> Optional[str]:
        try:
            owner = self._info().get("owner")
        except ResponseError as error:
            if not str(error).startswith("WRONGTYPE"):
                raise
            owner = self._client.get(self._name)  # python-redis-lock's own string lock
        if isinstance(owner, bytes):
            owner = owner.decode("ascii", "replace")
        return owner

    def acquire(self, blocking=True, timeout=None) -> bool:
        logger_for_acquire.debug("Acquiring Lock(%r) ...", self._name)
        if self._held:
            raise AlreadyAcquired("Already acquired from this Lock instance.")
        if not blocking and timeout is not None:
            raise TimeoutNotUsable("Timeout cannot be used if blocking=False")
        if timeout:
            timeout = float(int(timeout)) if isinstance(timeout, str) else float(timeout)
            if timeout < 0:
                raise InvalidTimeout(f"Timeout ({timeout:g}) cannot be less than or equal to 0")
            if self._expire and not self._auto_renewal and timeout > self._expire:
                raise TimeoutTooLarge(f"Timeout ({timeout:g}) cannot be greater than expire ({self._expire})")
        try:
            acquired = self._held_lock().acquire(blocking=blocking, blocking_timeout=timeout or None, token=self._id)
        except WrongTypeError:
            if blocking:
                raise
            acquired = False
        if not acquired:
            logger_for_acquire.warning("Failed to acquire Lock(%r).", self._name)
            return False
        logger_for_acquire.info("Acquired Lock(%r).", self._name)
        return True

    def extend(self, expire=None) -> None:
        if expire:
            expire = _expire_seconds(expire)
        elif self._expire is not None:
            expire = self._expire
        else:
            raise TypeError("To extend a lock 'expire' must be provided as an argument to extend() method or at initialization time.")
        info = self._info()
        owner = info.get("owner")
        if (owner.decode("ascii", "replace") if isinstance(owner, bytes) else owner) != self._id:
            raise NotAcquired(f"Lock {self._name} is not acquired or it already expired.")
        if info.get("watchdog") is not None and not self._auto_renewal:
            raise NotExpirable(f"Lock {self._name} has no assigned expiration time")
        if self._client.execute_command("RLOCK.RENEW", self._name, self._id, "PX", expire * 1000) != 1:
            raise NotAcquired(f"Lock {self._name} is not acquired or it already expired.")

    def __enter__(self):
        acquired = self.acquire(blocking=self.blocking)
        if not acquired:
            if self.blocking:
                raise AssertionError(f"Lock({self._name}) wasn't acquired, but blocking=True was used!")
            raise NotAcquired(f"Lock({self._name}) is not acquired or it already expired.")
        return self

    def __exit__(self, exc_type=None, exc_value=None, traceback=None):
        self.release()

    def release(self) -> None:
        """Releases the lock, whichever instance with this id took it."""
        logger_for_release.debug("Releasing Lock(%r).", self._name)
        lock = self._rlock
        if lock is not None and lock.fence is not None:  # taken through this instance
            try:
                lock.release()
                return
            except LockNotOwnedError:
                raise NotAcquired(f"Lock({self._name}) is not acquired or it already expired.") from None
        reply = self._client.execute_command("RLOCK.RELEASE", self._name, self._id, "ID", str(uuid.uuid4()))
        if reply is None:
            raise NotAcquired(f"Lock({self._name}) is not acquired or it already expired.")

    def locked(self) -> bool:
        """True when anyone holds the lock."""
        return self.get_owner_id() is not None

    def reset(self) -> None:
        """Forcibly releases the lock, whoever holds it (the next waiter is granted it)."""
        self._client.execute_command("RLOCK.FORCERELEASE", self._name)


def reset_all(redis_client) -> None:
    """Forcibly releases every ``lock:*`` lock (RLOCKs; other keys are left alone)."""
    for key in redis_client.scan_iter(match="lock:*"):
        try:
            redis_client.execute_command("RLOCK.FORCERELEASE", key)
        except ResponseError as error:
            if not str(error).startswith("WRONGTYPE"):
                raise
