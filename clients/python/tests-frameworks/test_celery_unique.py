"""rlock.contrib.celery.UniqueTask on real Celery workers: each mode's answer to a second
enqueue, a worker killed with -9 mid-job, a job re-delivered after its worker died."""

from __future__ import annotations

import os
import signal
import time

import pytest

from conftest import let_finish, lock_holder, lock_info, started, wait_for
from rlock.contrib import _jobs
from rlock.contrib.celery import DuplicateJob, UniqueTask

#: A killed worker's job lock must be free within this (the issue's bound; typically a few ms).
FREED_WITHIN_S = 1.0
RESULT_TIMEOUT_S = 60


def key_of(task, *args):
    return task.unique_key(args, {})


def test_until_executing_is_unique_while_queued_only(app, admin, shared_worker, job_name):
    task = app.until_executing
    parked = task.apply_async((job_name,), queue="parked")  # a queue no worker reads
    assert task.apply_async((job_name,), queue="parked").id == parked.id  # collapsed onto it
    assert lock_holder(admin, key_of(task, job_name)) == f"celery:{parked.id}"

    running_name = job_name + "-run"
    first = task.delay(running_name)
    started(admin, running_name)
    wait_for(lambda: lock_holder(admin, key_of(task, running_name)) is None, "the lock ended as the job started")
    second = task.delay(running_name)  # accepted while the first runs
    assert second.id != first.id
    started(admin, running_name, 2)
    let_finish(admin, running_name, 2)
    assert first.get(timeout=RESULT_TIMEOUT_S) == second.get(timeout=RESULT_TIMEOUT_S) == running_name


def test_until_executed_collapses_until_the_job_finished(app, admin, shared_worker, job_name):
    task = app.until_executed
    first = task.delay(job_name)
    (pid, task_id), = started(admin, job_name)
    assert task_id == first.id and pid == shared_worker.pid
    key = key_of(task, job_name)
    info = lock_info(admin, key)
    assert info["owner"] == f"celery:{first.id}"
    assert info["watchdog"] is not None, "adopted: bound to the worker's connection"
    assert task.delay(job_name).id == first.id  # collapsed onto the running job
    let_finish(admin, job_name)
    assert first.get(timeout=RESULT_TIMEOUT_S) == job_name
    assert lock_holder(admin, key) is None
    again = task.delay(job_name)
    assert again.id != first.id  # a new job once the first finished
    started(admin, job_name, 2)
    let_finish(admin, job_name)
    assert again.get(timeout=RESULT_TIMEOUT_S) == job_name


def test_until_executed_keeps_a_retried_job_unique(app, admin, shared_worker, job_name):
    task = app.until_executed_retrying
    job = task.delay(job_name)
    (_, first), (_, again) = started(admin, job_name, 2)  # the run that retried, then the retry
    assert first == again == job.id
    key = key_of(task, job_name)
    assert lock_holder(admin, key) == f"celery:{job.id}"
    assert task.delay(job_name).id == job.id  # still collapsed onto the retried job
    let_finish(admin, job_name)
    assert job.get(timeout=RESULT_TIMEOUT_S) == job_name
    wait_for(lambda: lock_holder(admin, key) is None, "the lock ended with the retried job")


def test_until_executed_raising_refuses_a_duplicate(app, admin, job_name):
    task = app.until_executed_raising
    first = task.apply_async((job_name,), queue="parked")
    with pytest.raises(DuplicateJob) as refused:
        task.apply_async((job_name,), queue="parked")
    assert refused.value.task_id == first.id and refused.value.key == key_of(task, job_name)


def test_while_executing_runs_one_at_a_time(app, admin, shared_worker, job_name):
    task = app.while_executing_waiting
    first, second = task.delay(job_name, 1), task.delay(job_name, 2)
    assert first.id != second.id  # nothing is refused at enqueue
    (_, running), = started(admin, job_name)
    key = key_of(task, job_name, 1)
    wait_for(lambda: lock_info(admin, key).get("waiters") == 1, "the duplicate waits in the lock's queue")
    assert lock_holder(admin, key) == f"celery:{running}"
    let_finish(admin, job_name)
    started(admin, job_name, 2)
    let_finish(admin, job_name)
    assert first.get(timeout=RESULT_TIMEOUT_S) == second.get(timeout=RESULT_TIMEOUT_S) == job_name


def test_while_executing_rejects_a_duplicate_that_may_not_wait(app, admin, shared_worker, job_name):
    task = app.while_executing_rejecting
    first = task.delay(job_name, 1)
    (_, running), = started(admin, job_name)
    second = task.delay(job_name, 2)
    with pytest.raises(DuplicateJob) as rejected:
        second.get(timeout=RESULT_TIMEOUT_S)
    assert rejected.value.task_id == first.id
    let_finish(admin, job_name)
    assert first.get(timeout=RESULT_TIMEOUT_S) == job_name


def test_bad_settings_are_refused_before_anything_is_sent(app, admin, job_name):
    class Unknown(UniqueTask):
        name = "unknown-mode"
        unique = "sometimes"

        def run(self, name):
            return name

    bad_keys = type("BadKeys", (Unknown,), {"unique": "until_executed", "unique_on": "nope"})
    bad_lease = type("BadLease", (Unknown,), {"unique": "until_executed", "unique_queue_lease": 0})
    queued_before = admin.llen("parked")
    with pytest.raises(ValueError, match="unique must be one of"):
        Unknown().apply_async((job_name,), queue="parked")
    with pytest.raises(ValueError, match="unique_on names no argument"):
        bad_keys().apply_async((job_name,), queue="parked")
    with pytest.raises(ValueError, match="positive number of seconds"):
        bad_lease().apply_async((job_name,), queue="parked")
    assert admin.llen("parked") == queued_before  # nothing enqueued
    assert admin.keys("rlock:unique:unknown-mode:*") == []  # nothing locked


def test_a_killed_worker_frees_the_lock_within_a_second(app, admin, start_worker, job_name):
    worker = start_worker(concurrency=1, queues="killable")
    task = app.until_executed
    first = task.apply_async((job_name,), queue="killable")
    (pid, _), = started(admin, job_name)
    assert pid == worker.pid
    key = key_of(task, job_name)
    assert task.apply_async((job_name,), queue="parked").id == first.id  # unique while it runs

    worker.kill()
    killed_at = time.monotonic()
    wait_for(lambda: lock_holder(admin, key) is None, "the killed worker's lock freed", deadline_s=10)
    assert time.monotonic() - killed_at < FREED_WITHIN_S
    accepted = task.apply_async((job_name,), queue="parked")
    assert accepted.id != first.id  # a new enqueue is accepted


def test_a_killed_worker_lets_the_waiting_duplicate_run(app, admin, shared_worker, start_worker, job_name):
    worker = start_worker(concurrency=1, queues="killable")
    task = app.while_executing_waiting
    task.apply_async((job_name, 1), queue="killable")
    (pid, _), = started(admin, job_name)
    assert pid == worker.pid
    waiting = task.delay(job_name, 2)  # the shared worker runs it once the lock is free
    key = key_of(task, job_name, 1)
    wait_for(lambda: lock_info(admin, key).get("waiters") == 1, "the duplicate waits in the lock's queue")

    worker.kill()
    killed_at = time.monotonic()
    wait_for(lambda: lock_holder(admin, key) == f"celery:{waiting.id}", "the lock granted to the waiting duplicate",
             deadline_s=10)
    assert time.monotonic() - killed_at < FREED_WITHIN_S
    (_, first), (pid, second) = started(admin, job_name, 2)
    assert (pid, second) == (shared_worker.pid, waiting.id)
    let_finish(admin, job_name)
    assert waiting.get(timeout=RESULT_TIMEOUT_S) == job_name


def delivered_longer_ago_than(admin, seconds: float) -> bool:
    """Whether every message the broker holds unacked was delivered more than `seconds` ago
    (kombu's own record: the `unacked_index` sorted set, scored by delivery time)."""
    deliveries = admin.zrange("unacked_index", 0, -1, withscores=True)
    return bool(deliveries) and all(time.time() - at > seconds for _, at in deliveries)


def test_a_redelivered_job_takes_over_its_own_lock(app, admin, start_worker, job_name):
    visibility_s = 1.0
    env = {"RLOCK_TEST_VISIBILITY_S": str(visibility_s)}
    dying = start_worker(concurrency=1, queues="redelivered", env=env)
    task = app.until_executed
    job = task.apply_async((job_name,), queue="redelivered")
    started(admin, job_name)
    dying.kill()
    key = key_of(task, job_name)
    wait_for(lambda: lock_holder(admin, key) is None, "the killed worker's lock freed")
    # A worker restores unacked messages on its first poll, then only every tenth restore
    # interval: started before the job's visibility timeout ran out, it missed it for over 60 s
    # (a CI dry run). So it starts once the broker's record says the delivery is old enough.
    wait_for(lambda: delivered_longer_ago_than(admin, visibility_s), "the job's delivery past its visibility timeout")

    taking_over = start_worker(concurrency=1, queues="redelivered", env=env)
    (_, first), (pid, again) = started(admin, job_name, 2)  # re-delivered (acks_late) once visible again
    assert (first, again, pid) == (job.id, job.id, taking_over.pid)
    assert lock_info(admin, key)["owner"] == f"celery:{job.id}"  # its own lock, not refused as a duplicate
    assert task.apply_async((job_name,), queue="parked").id == job.id
    let_finish(admin, job_name)
    assert job.get(timeout=RESULT_TIMEOUT_S) == job_name
    assert lock_holder(admin, key) is None


def test_prefork_a_killed_pool_process_hands_the_job_and_its_lock_to_the_next(app, admin, start_worker, job_name):
    """With the prefork pool the lock is bound to the pool process that runs the job: killed,
    its job is re-delivered at once (acks_late, reject_on_worker_lost) and takes over its own
    lock from a new pool process, a new connection."""
    worker = start_worker(concurrency=1, queues="prefork", pool="prefork")
    task = app.until_executed
    job = task.apply_async((job_name,), queue="prefork")
    (child, _), = started(admin, job_name)
    assert child != worker.pid
    key = key_of(task, job_name)
    bound_before = lock_info(admin, key)["watchdog"]
    os.kill(child, signal.SIGKILL)
    (_, first), (new_child, again) = started(admin, job_name, 2)
    assert (first, again) == (job.id, job.id) and new_child not in (child, worker.pid)
    info = wait_for(lambda: (lambda i: i if i.get("watchdog") not in (None, bound_before) else None)(lock_info(admin, key)),
                    "the job's lock bound to the new pool process")
    assert info["owner"] == f"celery:{job.id}"
    assert task.apply_async((job_name,), queue="parked").id == job.id
    let_finish(admin, job_name)
    assert job.get(timeout=RESULT_TIMEOUT_S) == job_name
    assert lock_holder(admin, key) is None


def test_adoption_re_enters_the_jobs_own_queued_lock_and_no_other(admin, redis_server, job_name):
    """What a re-delivered job meets while its queue lease still holds: its own lock re-entered
    (and bound to the worker's connection), never another job's."""
    r = _jobs.client_for(f"redis://127.0.0.1:{redis_server.port}/0")
    key = f"rlock:unique:test:{job_name}"
    assert _jobs.enqueue(r, key, "celery:one", 60)
    assert not _jobs.adopted.adopt(r, key, "celery:two")
    assert _jobs.adopted.adopt(r, key, "celery:one")
    info = lock_info(admin, key)
    assert (info["owner"], info["holds"]) == ("celery:one", 2) and info["watchdog"] is not None
    _jobs.adopted.finish(r, key, "celery:one")
    assert lock_holder(admin, key) is None
    with pytest.raises(ValueError, match="positive number of seconds"):
        _jobs.enqueue(r, key, "celery:one", 0)
    assert lock_holder(admin, key) is None
