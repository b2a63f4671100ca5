"""Run by Django's test runner (``python -m django test django_site.checks_cache_lock``, see
test_django.py): cache.lock() and cache.alock() through the one settings line."""

import asyncio
import concurrent.futures
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import redis
import rlock
import rlock.asyncio
from django.core.cache import cache
from django.test import SimpleTestCase

HOLDER = Path(__file__).with_name("holder.py")
FREED_WITHIN_S = 1.0


def holder_of(name):
    """RLOCK.INFO's owner of the cache key, None when free."""
    admin = redis.Redis.from_url(os.environ["RLOCK_TEST_REDIS_URL"], decode_responses=True, protocol=2)
    try:
        info = admin.execute_command("RLOCK.INFO", cache.make_key(name))
        return dict(zip(info[0::2], info[1::2]))["owner"] if info else None
    finally:
        admin.close()


def in_thread(call):
    box = []
    thread = threading.Thread(target=lambda: box.append(call()))
    thread.start()
    thread.join()
    return box[0]


class CacheLockTests(SimpleTestCase):
    def test_lock_is_rlocks_reentrant_lock_under_the_cache_key(self):
        lock = cache.lock("report:1", timeout=30)
        self.assertIsInstance(lock, rlock.Lock)
        with lock:
            self.assertIsNotNone(holder_of("report:1"))
            self.assertTrue(lock.acquire(blocking=False))  # re-entered by this thread
            lock.release()
            self.assertFalse(in_thread(lambda: cache.lock("report:1").acquire(blocking=False)))
            self.assertIsInstance(lock.fence, int)
        self.assertIsNone(holder_of("report:1"))

    def test_versions_are_distinct_keys(self):
        with cache.lock("report:2", version=1):
            other_version = cache.lock("report:2", version=2, thread_local=False)
            self.assertTrue(in_thread(lambda: other_version.acquire(blocking=False)))
            self.assertFalse(in_thread(lambda: cache.lock("report:2", version=1).acquire(blocking=False)))
            other_version.release()

    def test_a_killed_process_frees_its_lock_within_a_second(self):
        holder = subprocess.Popen([sys.executable, "-m", "django_site.holder", "report:3"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, cwd=HOLDER.parent.parent)
        try:
            self.assertEqual(holder.stdout.readline().strip(), "held")
            self.assertFalse(cache.lock("report:3").acquire(blocking=False))
            holder.kill()
            holder.wait()
            killed_at = time.monotonic()
            waiting = cache.lock("report:3", blocking_timeout=30)
            self.assertTrue(waiting.acquire())  # granted from the server's queue when freed
            self.assertLess(time.monotonic() - killed_at, FREED_WITHIN_S)
            waiting.release()
        finally:
            holder.kill()
            holder.wait()

    async def test_alock_is_rlocks_asyncio_lock(self):
        lock = cache.alock("report:4")
        self.assertIsInstance(lock, rlock.asyncio.Lock)
        async with lock:
            self.assertIsNotNone(await asyncio.to_thread(holder_of, "report:4"))
            other = cache.alock("report:4")
            self.assertFalse(await other.acquire(blocking=False))
            # the sync lock of the same cache key excludes it too
            self.assertFalse(await asyncio.to_thread(lambda: cache.lock("report:4").acquire(blocking=False)))
        self.assertIsNone(await asyncio.to_thread(holder_of, "report:4"))
        await rlock.asyncio.close_idle_connections(cache._async_client())

    async def test_alock_waits_for_the_sync_holder(self):
        held = cache.lock("report:5")
        # One thread holds and releases, as a sync view would: the lock is the thread's (redis-py's
        # thread_local), and asyncio.to_thread's pool may start a second worker for the release
        # when the first has not yet told it is idle (seen at load average 16: "not owned").
        loop = asyncio.get_running_loop()
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as holder_thread:
            await loop.run_in_executor(holder_thread, held.acquire)
            waiting = asyncio.ensure_future(cache.alock("report:5", blocking_timeout=30).acquire())
            await loop.run_in_executor(holder_thread, held.release)
        self.assertTrue(await waiting)
        await rlock.asyncio.close_idle_connections(cache._async_client())
