"""A celery-singleton backend on rlock: the job's lock is adopted by the worker that runs it, so
it ends when the job finishes or the moment that worker dies (celery-singleton's own Redis
backend keeps it forever without ``singleton_lock_expiry``, else until that expiry).

    singleton_backend_class = "rlock.contrib.celery_singleton.Backend"
    imports = ["rlock.contrib.celery_singleton"]   # the worker adopts the jobs' locks

celery-singleton's behaviour stays: a duplicate returns the queued job's AsyncResult, or raises
DuplicateTaskError with ``raise_on_duplicate``; ``unique_on``; ``singleton_key_prefix``;
``clear_locks(app)``. ``singleton_lock_expiry`` (else ``queue_lease`` in
``singleton_backend_kwargs``, 3600 s) is the lease while the job is queued.
"""

from __future__ import annotations

from typing import Optional

from celery.signals import task_prerun
from celery_singleton.backends.base import BaseBackend
from celery_singleton.singleton import Singleton

from ._jobs import adopted, check_lease, client_for, enqueue, holder

OWNER_PREFIX = "celery:"  # as rlock.contrib.celery's


class Backend(BaseBackend):
    def __init__(self, url, queue_lease: float = 3600.0):
        self.redis = client_for(url)
        self.queue_lease = check_lease(queue_lease)

    def lock(self, lock: str, task_id: str, expiry=None) -> bool:
        return enqueue(self.redis, lock, OWNER_PREFIX + task_id, self.queue_lease if expiry is None else expiry)

    def unlock(self, lock: str) -> None:
        adopted.finish(self.redis, lock)

    def get(self, lock: str) -> Optional[str]:
        owner = holder(self.redis, lock)
        return owner[len(OWNER_PREFIX):] if owner and owner.startswith(OWNER_PREFIX) else owner

    def clear(self, key_prefix: str) -> None:
        for key in self.redis.scan_iter(match=key_prefix + "*"):
            self.redis.execute_command("RLOCK.FORCERELEASE", key)


@task_prerun.connect(weak=False)
def _adopt(sender=None, task_id=None, args=None, kwargs=None, **_):
    """In the worker, before a Singleton job runs: its lock becomes bound to this worker."""
    if not isinstance(sender, Singleton) or sender.request.called_directly:
        return
    backend = sender.singleton_backend
    if isinstance(backend, Backend):
        adopted.adopt(backend.redis, sender.generate_lock(sender.name, args, kwargs), OWNER_PREFIX + task_id)
