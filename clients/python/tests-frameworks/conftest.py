"""Fixtures of the framework tests: one redis-server with the rlock module per session (the
Celery broker, result backend and lock server), real Celery worker processes, and polling on
state with generous deadlines (a loaded machine)."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the Python suite's redis-server fixture

from servers import RedisServer  # noqa: E402

#: Deadline for any awaited state (a worker's start, a job's start, a redelivery).
DEADLINE_S = 60.0
_worker_numbers = itertools.count(1)


def wait_for(condition, what: str, deadline_s: float = DEADLINE_S):
    """Polls `condition` until it returns something true; fails naming `what`."""
    give_up = time.monotonic() + deadline_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > give_up:
            raise AssertionError(f"not within {deadline_s} s: {what}")
        time.sleep(0.01)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    os.environ["RLOCK_TEST_REDIS_URL"] = f"redis://127.0.0.1:{server.port}/0"
    yield server
    server.stop()


@pytest.fixture
def admin(redis_server):
    client = redis_server.client()
    yield client
    client.close()


class Worker:
    """A `celery worker` process (threads pool unless told) on the test app, ready once its worker_ready
    signal wrote its key."""

    def __init__(self, admin, log_dir: Path, concurrency: int = 4, queues: str = "celery", pool: str = "threads",
                 env: dict = None):
        self.name = f"w{next(_worker_numbers)}"
        self.log = log_dir / f"celery-{self.name}.log"
        environment = {**os.environ, "RLOCK_TEST_WORKER": self.name, **(env or {})}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "celery_app", "worker", "--pool", pool,
             "--concurrency", str(concurrency), "--queues", queues, "--hostname", f"{self.name}@%h", "--without-gossip",
             "--without-mingle", "--without-heartbeat", "--loglevel", "INFO", "--logfile", str(self.log)],
            cwd=HERE, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )
        wait_for(lambda: admin.get(f"ready:{self.name}") or self._exited(), f"worker {self.name} ready")

    @property
    def pid(self) -> int:
        return self.process.pid

    def _exited(self):
        if self.process.poll() is not None:
            raise AssertionError(f"worker {self.name} exited:\n{self.log_text()}")

    def log_text(self) -> str:
        return self.log.read_text() if self.log.exists() else "(no log)"

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def start_worker(admin, tmp_path):
    """start_worker(env=...) starts a worker of the test's own; all are stopped at its end."""
    workers = []

    def start(**kwargs):
        workers.append(Worker(admin, tmp_path, **kwargs))
        return workers[-1]

    yield start
    for worker in workers:
        worker.stop()


@pytest.fixture(scope="module")
def shared_worker(redis_server, tmp_path_factory):
    """One worker that the tests of a module share where they do not interfere (each job has a
    name of its own)."""
    client = redis_server.client()
    worker = Worker(client, tmp_path_factory.mktemp("worker"))
    yield worker
    worker.stop()
    client.close()


@pytest.fixture(scope="session")
def app(redis_server):
    import celery_app
    return celery_app


_job_names = itertools.count(1)


@pytest.fixture
def job_name(request):
    """A name no other job of the session uses."""
    return f"{request.node.name}-{next(_job_names)}"


def started(admin, name: str, count: int = 1):
    """Waits until `count` jobs of the name started; their (pid, task id) pairs."""
    entries = wait_for(lambda: (lambda e: e if len(e) >= count else None)(admin.lrange(f"started:{name}", 0, -1)),
                       f"{count} job(s) {name} started")
    return [(int(pid), task_id) for pid, task_id in (entry.split() for entry in entries)]


def let_finish(admin, name: str, count: int = 1) -> None:
    admin.rpush(f"go:{name}", *["go"] * count)


def lock_info(admin, key: str) -> dict:
    """RLOCK.INFO of the key as a dict (RESP2 or RESP3), {} when free."""
    reply = admin.execute_command("RLOCK.INFO", key)
    if not reply:
        return {}
    fields = dict(zip(reply[0::2], reply[1::2])) if isinstance(reply, list) else dict(reply)
    return {(name.decode() if isinstance(name, bytes) else name): value for name, value in fields.items()}


def lock_holder(admin, key: str):
    """The owner holding the key, None when free."""
    return lock_info(admin, key).get("owner")
