"""celery-once and celery-singleton through rlock's backends (the one settings line each, in
celery_app.py), on real Celery workers; and the contrast with celery-once's own Redis backend,
whose lock a killed worker leaves held until its timeout."""

from __future__ import annotations

import time

import pytest
from celery import states
from celery_once import AlreadyQueued
from celery_singleton import DuplicateTaskError, clear_locks

from conftest import let_finish, lock_holder, lock_info, started, wait_for

FREED_WITHIN_S = 1.0
RESULT_TIMEOUT_S = 60
ONCE_TIMEOUT_S = 60  # celery_app's ONCE default_timeout
CELERY_ONCE_OWN = "celery_once.backends.Redis"


def once_key(task, *args):
    return task.get_key(args, {})


def test_once_refuses_a_duplicate_until_the_job_finished(app, admin, shared_worker, job_name):
    task = app.once_job
    first = task.delay(job_name)
    started(admin, job_name)
    key = once_key(task, job_name)
    assert lock_info(admin, key)["watchdog"] is not None, "adopted by the worker"
    with pytest.raises(AlreadyQueued) as refused:
        task.delay(job_name)
    assert 0 < refused.value.countdown  # the seconds left of a lease
    graceful = task.apply_async((job_name,), once={"graceful": True})
    assert graceful.state == states.REJECTED
    let_finish(admin, job_name)
    assert first.get(timeout=RESULT_TIMEOUT_S) == job_name
    wait_for(lambda: lock_holder(admin, key) is None, "the lock ended with the job")
    second = task.delay(job_name)  # accepted again
    started(admin, job_name, 2)
    let_finish(admin, job_name)
    assert second.get(timeout=RESULT_TIMEOUT_S) == job_name


def test_once_keys_and_unlock_before_run(app, admin, shared_worker, job_name):
    task = app.once_unlock_before_run  # keys=["name"], unlock_before_run
    parked = task.apply_async((job_name, 1), queue="parked")
    with pytest.raises(AlreadyQueued):
        task.apply_async((job_name, 2), queue="parked")  # another attempt, the same key
    assert parked.id

    running = job_name + "-run"
    first = task.delay(running, 1)
    started(admin, running)
    wait_for(lambda: lock_holder(admin, once_key(task, running, 1)) is None, "unlocked as the job started")
    second = task.delay(running, 2)  # accepted while the first runs
    started(admin, running, 2)
    let_finish(admin, running, 2)
    assert first.get(timeout=RESULT_TIMEOUT_S) == second.get(timeout=RESULT_TIMEOUT_S) == running


def test_a_killed_worker_frees_rlocks_once_lock_and_leaves_celery_onces_own_until_its_timeout(
        app, admin, start_worker, job_name):
    ours = start_worker(concurrency=1, queues="once-rlock")
    theirs = start_worker(concurrency=1, queues="once-own", env={"RLOCK_TEST_ONCE_BACKEND": CELERY_ONCE_OWN})
    task = app.once_job
    ours_name, theirs_name = job_name + "-rlock", job_name + "-own"
    task.apply_async((ours_name,), queue="once-rlock")
    own_settings = {**app.app.conf.ONCE, "backend": CELERY_ONCE_OWN}
    with once_backend(app, own_settings):
        task.apply_async((theirs_name,), queue="once-own")
    assert started(admin, ours_name)[0][0] == ours.pid
    assert started(admin, theirs_name)[0][0] == theirs.pid

    ours.kill()
    theirs.kill()
    killed_at = time.monotonic()
    wait_for(lambda: lock_holder(admin, once_key(task, ours_name)) is None, "rlock's once lock freed", deadline_s=10)
    assert time.monotonic() - killed_at < FREED_WITHIN_S
    task.apply_async((ours_name,), queue="parked")  # accepted

    with once_backend(app, own_settings):
        with pytest.raises(AlreadyQueued) as refused:
            task.apply_async((theirs_name,), queue="parked")
    # celery-once's own lock outlives the dead worker: it ends only with its timeout
    assert refused.value.countdown > ONCE_TIMEOUT_S - 15
    assert admin.pttl(once_key(task, theirs_name)) > (ONCE_TIMEOUT_S - 15) * 1000


class once_backend:
    """Switches the enqueuing side's celery-once backend for a block (the ONCE setting)."""

    def __init__(self, module, settings):
        self.conf, self.settings = module.app.conf, settings

    def __enter__(self):
        self.saved, self.conf.ONCE = self.conf.ONCE, self.settings

    def __exit__(self, *_):
        self.conf.ONCE = self.saved


def test_singleton_collapses_a_duplicate_onto_the_queued_job(app, admin, shared_worker, job_name):
    task = app.singleton_job
    first = task.delay(job_name)
    (_, running), = started(admin, job_name)
    key = task.generate_lock(task.name, [job_name], {})
    info = lock_info(admin, key)
    assert (info["owner"], info["watchdog"] is not None) == (f"celery:{first.id}", True)
    assert task.delay(job_name).id == first.id
    let_finish(admin, job_name)
    assert first.get(timeout=RESULT_TIMEOUT_S) == job_name
    wait_for(lambda: lock_holder(admin, key) is None, "the lock ended with the job")
    assert task.apply_async((job_name,), queue="parked").id != first.id


def test_singleton_raise_on_duplicate_unique_on_and_clear_locks(app, admin, job_name):
    task = app.singleton_raising  # unique_on=["name"], raise_on_duplicate
    first = task.apply_async((job_name, 1), queue="parked")
    with pytest.raises(DuplicateTaskError) as refused:
        task.apply_async((job_name, 2), queue="parked")
    assert refused.value.task_id == first.id
    clear_locks(app.app)
    assert lock_holder(admin, task.generate_lock(task.name, [job_name, 1], {})) is None
    assert task.apply_async((job_name, 3), queue="parked").id != first.id


def test_a_killed_worker_frees_the_singleton_lock_within_a_second(app, admin, start_worker, job_name):
    worker = start_worker(concurrency=1, queues="singleton-killable")
    task = app.singleton_job
    first = task.apply_async((job_name,), queue="singleton-killable")
    assert started(admin, job_name)[0][0] == worker.pid
    key = task.generate_lock(task.name, [job_name], {})
    worker.kill()
    killed_at = time.monotonic()
    wait_for(lambda: lock_holder(admin, key) is None, "the singleton lock freed", deadline_s=10)
    assert time.monotonic() - killed_at < FREED_WITHIN_S
    assert task.apply_async((job_name,), queue="parked").id != first.id
