"""``import redis_lock`` gives rlock.redis_lock: python-redis-lock's tests (and the helper
processes they start) run against rlock's shape of it (redis_lock_run.sh)."""

import sys

import rlock.redis_lock

sys.modules[__name__] = rlock.redis_lock
