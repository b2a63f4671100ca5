"""Celery job uniqueness bound to the worker that runs the job.

    from rlock.contrib.celery import UniqueTask

    @app.task(base=UniqueTask, unique="until_executed")
    def rebuild_report(account_id): ...

Modes (sidekiq-unique-jobs' names):

- ``until_executing``: one job per key while queued; the lock ends when a worker starts it.
- ``until_executed``: one job per key from enqueue until it finishes. The worker that starts the
  job adopts its lock (bound by the server's watchdog to that worker's connection): it ends when
  the job finishes, or the moment that worker dies (kill -9, OOM, lost connection).
- ``while_executing``: nothing at enqueue; one job per key runs at a time. A duplicate waits
  ``unique_wait`` seconds for its turn (None: as long as it takes; 0, the default: rejected at
  once with DuplicateJob).

A second enqueue of a locked key returns the AsyncResult of the job that holds it
(``unique_conflict="collapse"``, the default) or raises DuplicateJob (``"raise"``). The lock's
owner id is ``celery:<task id>``: a retried or re-delivered job (acks_late, visibility timeout)
re-enters its own lock instead of being refused as a duplicate of itself.

Settings: ``rlock_url`` (else ``broker_url``) names the Redis server with the module.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from typing import Optional

from celery import Task
from celery.exceptions import Ignore, Retry
from kombu.utils.uuid import uuid

from ._jobs import adopted, check_lease, client_for, enqueue, holder

UNTIL_EXECUTING = "until_executing"
UNTIL_EXECUTED = "until_executed"
WHILE_EXECUTING = "while_executing"
MODES = (UNTIL_EXECUTING, UNTIL_EXECUTED, WHILE_EXECUTING)
CONFLICTS = ("collapse", "raise")
OWNER_PREFIX = "celery:"
#: Tries to read who holds a key that was just refused, if it is released meanwhile.
_CONFLICT_ATTEMPTS = 5


class DuplicateJob(Exception):
    """A job of the same key is queued or running already: ``task_id`` is its id (None if
    unknown)."""

    def __init__(self, key: str, task_id: Optional[str]):
        super().__init__(key, task_id)  # the args a result backend rebuilds it from
        self.key, self.task_id = key, task_id

    def __str__(self) -> str:
        return f"a job with the unique key {self.key!r} is queued or running already (task {self.task_id})"


class UniqueTask(Task):
    """A Celery task base class whose jobs are unique per key (see the module's doc)."""

    abstract = True
    #: until_executing, until_executed or while_executing.
    unique: Optional[str] = None
    #: Names of the arguments that make the key; None: all of them.
    unique_on = None
    #: Seconds the lock taken at enqueue lasts until a worker adopts the job (its time in the queue).
    unique_queue_lease: float = 3600.0
    #: "collapse" (return the queued job's AsyncResult) or "raise" (DuplicateJob).
    unique_conflict: str = "collapse"
    #: while_executing: seconds a duplicate waits for its turn; None: no limit; 0: none.
    unique_wait: Optional[float] = 0

    # -- configuration ------------------------------------------------------------------------

    def _mode(self) -> str:
        if self.unique not in MODES:
            raise ValueError(f"{self.name}: unique must be one of {', '.join(MODES)}, not {self.unique!r}")
        if self.unique_conflict not in CONFLICTS:
            raise ValueError(f"{self.name}: unique_conflict must be one of {', '.join(CONFLICTS)}, not {self.unique_conflict!r}")
        if self.unique_wait is not None and (isinstance(self.unique_wait, bool) or not isinstance(self.unique_wait, (int, float)) or self.unique_wait < 0):
            raise ValueError(f"{self.name}: unique_wait must be None or seconds >= 0, not {self.unique_wait!r}")
        check_lease(self.unique_queue_lease)
        return self.unique

    def _redis(self):
        conf = self._get_app().conf
        return client_for(conf.get("rlock_url") or conf.broker_url)

    def unique_key(self, args=None, kwargs=None) -> str:
        """``rlock:unique:<task name>:<digest of the arguments>`` (those of unique_on)."""
        bound = inspect.signature(self.run).bind(*(args or ()), **(kwargs or {}))
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        if self.unique_on is not None:
            names = [self.unique_on] if isinstance(self.unique_on, str) else list(self.unique_on)
            unknown = [name for name in names if name not in arguments]
            if unknown:
                raise ValueError(f"{self.name}: unique_on names no argument of the task: {unknown}")
            arguments = {name: arguments[name] for name in names}
        text = json.dumps(arguments, sort_keys=True, default=repr)
        return f"rlock:unique:{self.name}:{hashlib.sha256(text.encode()).hexdigest()[:32]}"

    # -- enqueue -----------------------------------------------------------------------------

    def apply_async(self, args=None, kwargs=None, task_id=None, **options):
        mode = self._mode()
        if mode == WHILE_EXECUTING or options.get("retries"):
            # a retry is the same job: its lock was kept for it (see __call__)
            return super().apply_async(args, kwargs, task_id=task_id, **options)
        redis, key = self._redis(), self.unique_key(args, kwargs)
        task_id = task_id or uuid()
        for _ in range(_CONFLICT_ATTEMPTS):
            if enqueue(redis, key, OWNER_PREFIX + task_id, self.unique_queue_lease):
                break
            existing = holder(redis, key)
            if existing is not None:
                return self._on_duplicate(key, existing)
        else:
            return self._on_duplicate(key, None)
        try:
            return super().apply_async(args, kwargs, task_id=task_id, **options)
        except BaseException:
            adopted.finish(redis, key, OWNER_PREFIX + task_id)
            raise

    def _on_duplicate(self, key: str, owner: Optional[str]):
        task_id = _task_of(owner)
        if self.unique_conflict == "raise" or task_id is None:
            raise DuplicateJob(key, task_id)
        return self.AsyncResult(task_id)

    # -- run in the worker -------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        mode = self._mode()
        if self.request.called_directly or self.request.is_eager:
            return super().__call__(*args, **kwargs)
        redis, key, owner = self._redis(), self.unique_key(args, kwargs), OWNER_PREFIX + self.request.id
        if mode == UNTIL_EXECUTING:
            adopted.finish(redis, key, owner)
            return super().__call__(*args, **kwargs)
        if mode == UNTIL_EXECUTED and not adopted.adopt(redis, key, owner):
            # our queue lease ran out and another job of the key holds the lock: it does the work
            raise Ignore()
        if mode == WHILE_EXECUTING and not adopted.adopt(redis, key, owner, wait=self.unique_wait):
            raise DuplicateJob(key, _task_of(holder(redis, key)))
        try:
            result = super().__call__(*args, **kwargs)
        except Retry:
            adopted.finish(redis, key, owner)
            if mode == UNTIL_EXECUTED:  # the retry stays unique while it waits in the queue
                enqueue(redis, key, owner, self.unique_queue_lease)
            raise
        except BaseException:
            adopted.finish(redis, key, owner)
            raise
        adopted.finish(redis, key, owner)
        return result


def _task_of(owner: Optional[str]) -> Optional[str]:
    return owner[len(OWNER_PREFIX):] if owner and owner.startswith(OWNER_PREFIX) else None
