"""A celery-once backend on rlock: the job's lock is adopted by the worker that runs it, so it
ends when the job finishes or the moment that worker dies, not a timeout later.

    ONCE = {"backend": "rlock.contrib.celery_once.Backend",
            "settings": {"url": "redis://localhost:6379/0", "default_timeout": 3600}}
    imports = ["rlock.contrib.celery_once"]   # the worker adopts the jobs' locks

celery-once's behaviour stays: AlreadyQueued (with the seconds left of the queue lease),
``graceful``, ``keys``, ``unlock_before_run`` (the lock ends as the job starts: nothing is
adopted), ``timeout`` (the lease while queued), the settings ``blocking`` and
``blocking_timeout``.
"""

from __future__ import annotations

from celery.signals import task_prerun
from celery_once.tasks import AlreadyQueued, QueueOnce
from kombu.utils.uuid import uuid

from .. import Lock
from .._family import LOCK
from ._jobs import adopted, check_lease, client_for, holder

OWNER_PREFIX = "celery-once:"


class Backend:
    """celery-once's backend interface: raise_or_lock(key, timeout), clear_lock(key)."""

    def __init__(self, settings: dict):
        self.redis = client_for(settings.get("url"))
        self.blocking = settings.get("blocking", False)
        self.blocking_timeout = settings.get("blocking_timeout", 1)

    def raise_or_lock(self, key: str, timeout) -> None:
        """Takes the key for the job's time in the queue (a lease of `timeout` s), or raises
        AlreadyQueued with the seconds left of the holder's lease."""
        lock = Lock(self.redis, key, timeout=check_lease(timeout), thread_local=False)
        if lock.acquire(blocking=self.blocking, blocking_timeout=self.blocking_timeout, token=OWNER_PREFIX + uuid()):
            return
        holders = LOCK.holders(self.redis.execute_command("RLOCK.INFO", key))
        ttl_ms = holders[0]["ttl"] if holders else 0
        raise AlreadyQueued(max(ttl_ms, 0) / 1000.0)

    def clear_lock(self, key: str) -> None:
        adopted.finish(self.redis, key)


@task_prerun.connect(weak=False)
def _adopt(sender=None, task_id=None, args=None, kwargs=None, **_):
    """In the worker, before a QueueOnce job runs: its lock becomes bound to this worker."""
    if not isinstance(sender, QueueOnce) or sender.request.called_directly or sender.unlock_before_run():
        return
    backend = sender.once_backend
    if not isinstance(backend, Backend):
        return
    key = sender.get_key(args, kwargs)
    adopted.adopt(backend.redis, key, holder(backend.redis, key) or OWNER_PREFIX + task_id)
