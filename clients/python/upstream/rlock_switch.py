"""A pytest plugin that runs redis-py's own lock tests, unmodified, against rlock's locks.

redis-py's tests/test_lock.py and tests/test_asyncio/test_lock.py build every lock with
``redis.lock(..., lock_class=Lock)``, where ``Lock`` is the name they import from redis-py; the
fixture below rebinds that one name in those two modules to rlock.Lock and rlock.asyncio.Lock.
The plugin also starts the redis-server with the module that the tests' ``--redis-url`` points
at. Nothing in redis-py's files is changed; the cases left out are NOT_APPLICABLE, with reasons.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import rlock  # noqa: E402
import rlock.asyncio  # noqa: E402
from servers import RedisServer  # noqa: E402

from deselect import deselect  # noqa: E402

_server = None
_directory = None

RLOCK_CLASSES = {
    "tests.test_lock": rlock.Lock,
    "tests.test_asyncio.test_lock": rlock.asyncio.Lock,
}

# Left out, each for its reason (the same cases in the sync and the asyncio file):
NOT_APPLICABLE = {
    # They read the lock with `r.get(name)` and compare it with the token: redis-py keeps a
    # string, rlock keeps Redisson's hash (RLOCK.INFO shows the holder): GET answers WRONGTYPE.
    "test_lock": "reads redis-py's string value",
    "test_lock_token": "reads redis-py's string value",
    "test_lock_token_thread_local_false": "reads redis-py's string value",
    "test_context_manager": "reads redis-py's string value",
    # They count the sleeps of redis-py's polling loop on a fake clock: rlock waits in the
    # server and has no loop to count (its blocking_timeout is tested on the real clock).
    "test_blocking_timeout": "counts redis-py's polling sleeps",
    "test_context_manager_blocking_timeout": "counts redis-py's polling sleeps",
}


def pytest_collection_modifyitems(config, items):
    deselect(config, items, NOT_APPLICABLE)


def pytest_configure(config):
    global _server, _directory
    _directory = tempfile.TemporaryDirectory(prefix="rlock-upstream-")
    _server = RedisServer(Path(_directory.name))
    config.option.redis_url = f"redis://127.0.0.1:{_server.port}/0"


def pytest_unconfigure(config):
    if _server is not None:
        _server.stop()
    if _directory is not None:
        _directory.cleanup()


@pytest.fixture(autouse=True)
def rlock_lock_class(request, monkeypatch):
    replacement = RLOCK_CLASSES.get(request.module.__name__)
    if replacement is None:
        raise RuntimeError(f"rlock_switch only runs redis-py's lock tests, not {request.module.__name__}")
    monkeypatch.setattr(request.module, "Lock", replacement)
