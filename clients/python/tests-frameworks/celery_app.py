"""The Celery app the tests' workers run (``celery -A celery_app worker``): Redis with the rlock
module as broker and result backend (RLOCK_TEST_REDIS_URL). Each job reports its start (a key
naming its pid) and waits for the test to let it finish (a list it pops), so the tests
synchronise on state, never on sleeps."""

from __future__ import annotations

import os
import socket

import redis
from celery import Celery
from celery.signals import worker_ready
from celery_once import QueueOnce
from celery_singleton import Singleton

from rlock.contrib.celery import UniqueTask

URL = os.environ["RLOCK_TEST_REDIS_URL"]
#: How long a job waits for its go before giving up (a test that failed elsewhere).
JOB_DEADLINE_S = 120

app = Celery("celery_app", broker=URL, backend=URL)
app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    broker_transport_options={"visibility_timeout": float(os.environ.get("RLOCK_TEST_VISIBILITY_S", 3600))},
    broker_connection_retry_on_startup=True,
)
# The switches docs/frameworks.md shows (test_docs_switches.py checks they are these lines).
app.conf.ONCE = {"backend": "rlock.contrib.celery_once.Backend", "settings": {"url": URL, "default_timeout": 60}}
app.conf.singleton_backend_class = "rlock.contrib.celery_singleton.Backend"
app.conf.imports = ["rlock.contrib.celery_once", "rlock.contrib.celery_singleton"]  # the worker adopts the jobs' locks
if "RLOCK_TEST_ONCE_BACKEND" in os.environ:  # a worker on celery-once's own backend, for the contrast
    app.conf.ONCE = {**app.conf.ONCE, "backend": os.environ["RLOCK_TEST_ONCE_BACKEND"]}
_redis = redis.Redis.from_url(URL, decode_responses=True)


@worker_ready.connect
def _ready(sender=None, **_):
    _redis.set(f"ready:{os.environ['RLOCK_TEST_WORKER']}", os.getpid())


def _job(task, name: str):
    """Reports the start (the worker's pid, the job's id), waits for the test's go."""
    _redis.rpush(f"started:{name}", f"{os.getpid()} {task.request.id}")
    if _redis.blpop([f"go:{name}"], timeout=JOB_DEADLINE_S) is None:
        raise TimeoutError(f"no go for {name}")
    _redis.rpush(f"done:{name}", task.request.id)
    return name


@app.task(bind=True, base=UniqueTask, unique="until_executing")
def until_executing(self, name):
    return _job(self, name)


@app.task(bind=True, base=UniqueTask, unique="until_executed")
def until_executed(self, name):
    return _job(self, name)


@app.task(bind=True, base=UniqueTask, unique="until_executed", unique_conflict="raise")
def until_executed_raising(self, name):
    return _job(self, name)


@app.task(bind=True, base=UniqueTask, unique="while_executing", unique_on="name", unique_wait=None)
def while_executing_waiting(self, name, attempt):
    return _job(self, name)


@app.task(bind=True, base=UniqueTask, unique="while_executing", unique_on="name")
def while_executing_rejecting(self, name, attempt):
    return _job(self, name)


@app.task(bind=True, base=QueueOnce, once={"graceful": False})
def once_job(self, name):
    return _job(self, name)


@app.task(bind=True, base=QueueOnce, once={"keys": ["name"], "unlock_before_run": True})
def once_unlock_before_run(self, name, attempt):
    return _job(self, name)


@app.task(bind=True, base=Singleton)
def singleton_job(self, name):
    return _job(self, name)


@app.task(bind=True, base=Singleton, unique_on=["name"], raise_on_duplicate=True)
def singleton_raising(self, name, attempt):
    return _job(self, name)


@app.task(bind=True, base=UniqueTask, unique="until_executed")
def until_executed_retrying(self, name):
    """Its first run asks for a retry; the second is an ordinary job."""
    if self.request.retries == 0:
        _redis.rpush(f"started:{name}", f"{os.getpid()} {self.request.id}")
        raise self.retry(countdown=1)
    return _job(self, name)
