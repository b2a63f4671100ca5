"""One test body for both Lock classes.

Tests are coroutines, and drive locks through Handles: a Handle is a Lock object plus a worker
that makes its calls, a thread of its own for rlock.Lock and a task of its own for
rlock.asyncio.Lock (the unit each class re-enters by). Two handles on one Lock object are two
threads (or tasks) sharing it; a blocked acquire in one leaves the test free to go on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import inspect
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import redis
import redis.asyncio
import rlock
import rlock.asyncio
from redis.exceptions import ConnectionError

RLOCK_OPTIONS = ("on_lost", "watchdog_lease", "max_hold")
HOLDER = Path(__file__).with_name("holder.py")


class ThreadWorker:
    """Runs calls one after another in its own thread."""

    def __init__(self):
        self.calls = queue.Queue()
        self.finished_at = None  # monotonic time the last call returned, taken in the worker
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while (item := self.calls.get()) is not None:
            call, future = item
            try:
                result = call()
                self.finished_at = time.monotonic()
                future.set_result(result)
            except BaseException as error:
                future.set_exception(error)

    async def run(self, call):
        future = concurrent.futures.Future()
        self.calls.put((call, future))
        return await asyncio.wrap_future(future)

    def stop(self):
        self.calls.put(None)


class TaskWorker:
    """Runs calls one after another in its own asyncio task."""

    def __init__(self):
        self.calls = asyncio.Queue()
        self.finished_at = None
        self.task = asyncio.get_running_loop().create_task(self._serve())

    async def _serve(self):
        while True:
            call, future = await self.calls.get()
            try:
                result = call()
                if inspect.isawaitable(result):
                    result = await result
                self.finished_at = time.monotonic()
                future.set_result(result)
            except Exception as error:
                future.set_exception(error)

    async def run(self, call):
        future = asyncio.get_running_loop().create_future()
        await self.calls.put((call, future))
        return await future

    def stop(self):
        self.task.cancel()


class Handle:
    """`await handle.acquire(...)` and the other Lock methods, run by the handle's worker."""

    def __init__(self, lock, worker, enter: str, exit: str):
        self.lock, self.worker = lock, worker
        self._enter, self._exit = enter, exit

    def __getattr__(self, method):
        async def call(*args, **kwargs):
            return await self.worker.run(lambda: getattr(self.lock, method)(*args, **kwargs))

        return call

    def on(self, lock) -> "Handle":
        """Another object driven by this handle's worker (the same thread or task)."""
        return Handle(lock, self.worker, self._enter, self._exit)

    def start(self, method, *args, **kwargs) -> asyncio.Task:
        """Starts a call without waiting for it (a blocking acquire, say)."""
        return asyncio.ensure_future(getattr(self, method)(*args, **kwargs))

    async def get(self, read):
        """read(lock), evaluated in the worker (thread-local state is the worker's)."""
        return await self.worker.run(lambda: read(self.lock))

    async def __aenter__(self):
        await self.worker.run(lambda: getattr(self.lock, self._enter)())
        return self

    async def __aexit__(self, *exc_info):
        return await self.worker.run(lambda: getattr(self.lock, self._exit)(*exc_info))


class Variant:
    """What differs between the blocking and the asyncio Lock, for the tests."""

    def __init__(self, port: int):
        self.port = port
        self._clients, self._workers = [], []
        self.default_client = None

    def client(self, connection_class=None, **kwargs):
        kwargs.setdefault("port", self.port)
        if connection_class is not None:
            kwargs = {"connection_pool": self.pool_class(connection_class=connection_class, **kwargs)}
        client = self.redis_class(**kwargs)
        self._clients.append(client)
        return client

    def lock(self, name, client=None, **kwargs) -> Handle:
        """A Lock made the redis-py way, client.lock(name, ..., lock_class=...), on a worker."""
        if client is None:
            client = self.default_client = self.default_client or self.client()
        options = {key: kwargs.pop(key) for key in RLOCK_OPTIONS if key in kwargs}
        lock_class = functools.partial(self.lock_class, **options) if options else self.lock_class
        return self.worker(client.lock(name, lock_class=lock_class, **kwargs))

    def rwlock(self, name, client=None, **kwargs):
        """A ReadWriteLock: (its read side, its write side), each a Handle on one worker."""
        rw = self.module.ReadWriteLock(client or self._default(), name, **kwargs)
        read = self.worker(rw.read_lock())
        return read, read.on(rw.write_lock())

    def semaphore(self, name, client=None, **kwargs) -> Handle:
        return self.worker(self.module.Semaphore(client or self._default(), name, **kwargs))

    def latch(self, name, client=None) -> Handle:
        return self.worker(self.module.CountDownLatch(client or self._default(), name))

    def _default(self):
        self.default_client = self.default_client or self.client()
        return self.default_client

    def worker(self, lock) -> Handle:
        """A new worker (thread or task) driving `lock`."""
        worker = self.worker_class()
        self._workers.append(worker)
        return Handle(lock, worker, *self.context_methods)


class BlockingVariant(Variant):
    name = "blocking"
    redis_class = redis.Redis
    pool_class = redis.ConnectionPool
    lock_class = rlock.Lock
    module = rlock
    worker_class = ThreadWorker
    context_methods = ("__enter__", "__exit__")

    async def disconnect_pool(self, client):
        client.connection_pool.disconnect()

    async def aclose(self):
        for worker in self._workers:
            worker.stop()
        for client in self._clients:
            rlock.close_idle_connections(client)
            client.close()


class AsyncioVariant(Variant):
    name = "asyncio"
    redis_class = redis.asyncio.Redis
    pool_class = redis.asyncio.ConnectionPool
    lock_class = rlock.asyncio.Lock
    module = rlock.asyncio
    worker_class = TaskWorker
    context_methods = ("__aenter__", "__aexit__")

    async def disconnect_pool(self, client):
        await client.connection_pool.disconnect()

    async def aclose(self):
        for worker in self._workers:
            worker.stop()
        for client in self._clients:
            await rlock.asyncio.close_idle_connections(client)
            await client.aclose()


# -- connections that lose one reply, for the retry tests -------------------------------------


class DroppedReplies:
    """The next reply to `command` that a Flaky connection reads is lost: the server carried
    the call out, the client sees its connection break."""

    command = None
    count = 0

    @classmethod
    def arm(cls, command: str):
        cls.command = command

    @classmethod
    def take(cls, command) -> bool:
        if cls.command is None or command != cls.command:
            return False
        cls.command = None
        cls.count += 1
        return True


class FlakyConnection(redis.connection.Connection):
    def send_packed_command(self, command, *args, **kwargs):
        # rlock packs its commands itself: the name is read off the bytes (*n, $len, name).
        packed = command if isinstance(command, bytes) else b"".join(bytes(part) for part in command)
        self.last_command = packed.split(b"\r\n", 3)[2].decode()
        super().send_packed_command(command, *args, **kwargs)

    def read_response(self, *args, **kwargs):
        reply = super().read_response(*args, **kwargs)
        if DroppedReplies.take(self.last_command):
            self.disconnect()
            raise ConnectionError("the test dropped this reply")
        return reply


class AsyncFlakyConnection(redis.asyncio.connection.Connection):
    async def send_command(self, *args, **kwargs):
        self.last_command = args[0]
        await super().send_command(*args, **kwargs)

    async def read_response(self, *args, **kwargs):
        reply = await super().read_response(*args, **kwargs)
        if DroppedReplies.take(self.last_command):
            await self.disconnect()
            raise ConnectionError("the test dropped this reply")
        return reply


BlockingVariant.flaky_connection_class = FlakyConnection
AsyncioVariant.flaky_connection_class = AsyncFlakyConnection


# -- reading the server --------------------------------------------------------------------------


async def eventually(predicate, timeout: float = 5.0, what: str = "condition"):
    """Waits until predicate() is true, looking every 2 ms (at server state, not at the clock)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.002)


def wait_until(predicate, what: str, timeout: float = 5.0) -> None:
    """Polls server state every 2 ms (the blocking tests' eventually())."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.002)


def lock_info(admin, name):
    return admin.execute_command("RLOCK.INFO", name)


def blocked_clients(admin) -> int:
    return admin.info("clients")["blocked_clients"]


def waiters(admin, name) -> int:
    """How many wait in the lock's queue: blocked in WAIT (rlock.Lock) or told by message
    (rlock.asyncio.Lock's NOTIFY), both kinds in one FIFO queue."""
    info = lock_info(admin, name)
    return 0 if info is None else info["waiters"]


def rwlock_info(admin, name):
    return admin.execute_command("RWLOCK.INFO", name)


def sem_info(admin, name):
    return admin.execute_command("RSEM.INFO", name)


def queued(admin, kind: str, name) -> int:
    """How many wait in the queue of a lock, read-write lock (readers and writers) or semaphore."""
    if kind == "lock":
        return waiters(admin, name)
    if kind in ("read", "write"):
        info = rwlock_info(admin, name)
        return 0 if info is None else info["waiting_readers"] + info["waiting_writers"]
    info = sem_info(admin, name)
    return 0 if info is None else len(info["waiters"])


def subscribers(admin) -> set:
    """Client ids of the connections subscribed to an rlock channel, from the channel names."""
    return {int(channel.rsplit(":", 1)[1]) for channel in admin.pubsub_channels("__rlock__:*")}


def client_ids(admin) -> set:
    return {int(client["id"]) for client in admin.client_list()}


def rlock_stat(admin, field: str) -> int:
    """A counter of INFO rlock, e.g. retries_answered."""
    return int(admin.info("rlock")[f"rlock_{field}"])


# -- every type, and other processes --------------------------------------------------------------


def holder_entries(admin, name) -> dict:
    """Who holds `name`, whatever its type: INFO's entry (owner, token, ttl, watchdog, ...) by
    owner for a lock or a semaphore, by (owner, mode) for a read-write lock."""
    stored = admin.type(name)
    if stored == "none":
        return {}
    if stored == "hash" and admin.hexists(name, "mode"):
        return {(entry["owner"], entry["mode"]): entry for entry in rwlock_info(admin, name)["holders"]}
    if stored == "hash":
        info = lock_info(admin, name)
        return {} if info is None else {info["owner"]: info}
    info = sem_info(admin, name)
    return {} if info is None else {entry["owner"]: entry for entry in info["holders"]}


def holders(admin, name) -> dict:
    """The holds (or permits) of each holder of `name`, keyed as holder_entries()."""
    return {key: entry.get("holds", entry.get("permits")) for key, entry in holder_entries(admin, name).items()}


async def owner(handle) -> str:
    return (await handle.get(lambda lock: lock._owner())).decode()


def side(variant, kind: str, name: str, **kwargs):
    """A handle that takes `kind` of `name`: a lock, a read or write side, or one permit."""
    if kind == "lock":
        return variant.lock(name, **kwargs)
    if kind == "permits":
        return variant.semaphore(name, **kwargs)
    read, write = variant.rwlock(name, **kwargs)
    return read if kind == "read" else write


def excluded_by(kind: str) -> str:
    """A kind that a holding of `kind` keeps out (one permit in all: a second one waits)."""
    return {"lock": "lock", "read": "write", "write": "read", "permits": "permits"}[kind]


@contextlib.contextmanager
def holding_process(port: int, name: str, kind: str = "lock", *args):
    """Another process holding `name` (a watchdog holding of `kind`: lock, read, write,
    permits; or leading the election `name`: kind "election", then the candidate id and the
    watchdog lease), once it holds it; killed at the end."""
    with subprocess.Popen(
        [sys.executable, str(HOLDER), str(port), name, kind, *map(str, args)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    ) as holder:
        try:
            held = holder.stdout.readline()
            assert held.startswith("held "), "the holder did not take the lock"
            holder.fence = int(held.split()[1])  # its fencing token (an election's term)
            yield holder
        finally:
            holder.kill()
