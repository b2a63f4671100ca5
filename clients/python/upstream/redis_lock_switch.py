"""A pytest plugin that runs python-redis-lock's own tests (tests/test_redis_lock.py of its
4.0.1 sdist), unmodified, against rlock.redis_lock: ``import redis_lock`` finds the shim in
redis_lock_shim/, and the ``redis-server`` their fixture starts is bin/redis-server, which loads
the module. The cases left out are NOT_APPLICABLE, each with its reason; every one of them is a
difference the README lists, and what it checks is covered by tests-frameworks/test_redis_lock_shape.py."""

from __future__ import annotations

from deselect import deselect

NOT_APPLICABLE = {
    # They read the lock's key with GET/TTL: python-redis-lock keeps a string with an expiry,
    # rlock an RLOCK (RLOCK.INFO shows the owner and the lease): GET and TTL do not apply.
    "test_token": "reads python-redis-lock's string value",
    "test_extend": "reads the key's TTL (RLOCK.INFO has the lease)",
    "test_extend_lock_default_expire": "reads the key's TTL (RLOCK.INFO has the lease)",
    "test_extend_another_instance": "reads the key's TTL (RLOCK.INFO has the lease)",
    "test_extend_another_instance_different_id_fail": "reads the key's TTL (RLOCK.INFO has the lease)",
    "test_given_id": "reads the key's TTL (RLOCK.INFO has the lease)",
    "test_auto_renewal": "reads python-redis-lock's string value and its renewal thread",
    # auto_renewal is the server's watchdog: there is no renewal thread to log or to collect.
    "test_simple_auto_renewal": "expects the renewal thread's log lines",
    "test_auto_renewal_stops_after_gc": "expects a renewal thread",
    # Waiters are woken by the server's queue, not by LPUSH to lock-signal:<name>.
    "test_release_from_nonblocking_leaving_garbage": "reads the lock-signal list",
    "test_signal_expiration": "reads the lock-signal list",
    # Its 125 processes each take the lock (expire=None) and exit holding it; python-redis-lock's
    # key outlives them, so exactly one ever holds it. rlock's watchdog frees the lock as each
    # holder exits, so the next waiter gets it: that is the difference, not an overlap.
    "test_no_overlap2": "holders exit holding an expire=None lock, which the watchdog frees",
    # A string lock:<name> left by python-redis-lock is another type for RLOCK.
    "test_upgrade": "a python-redis-lock string key under the lock's name",
}


def pytest_collection_modifyitems(config, items):
    deselect(config, items, NOT_APPLICABLE)
