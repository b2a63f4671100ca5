"""`make bench`'s Python pairs: rlock.Lock beside redis-py's own Lock and beside
python-redis-lock's Lock (PyPI), on one redis-server with the module that this script starts,
in the same run with rounds interleaved (the order of the sides rotates from round to round).
The workloads are the Node pairs' (clients/node/bench/workloads.ts):

- uncontended: one thread, acquire then release as fast as it can (pairs/s, and the process's
  CPU time per pair, all threads);
- parallel: CONTENDERS threads, each with its own client and its own key, the same loop
  (pairs/s of all of them together);
- hot lock: CONTENDERS threads, each with its own client and Lock object, acquire then release
  at once in a loop (acquires/s, p99 wait, the most and fewest acquisitions of one thread); a
  wait still unfinished when the round ends counts with its time so far; the longest wait too;
- handoff: one thread holds, another waits; the time from the holder's release to the waiter
  holding (median of HANDOFFS per round).

redis-py's Lock gets a 10 s lease (timeout=10) and polls every 0.1 s (its default `sleep`);
python-redis-lock a 10 s lease (expire=10), waiting in BLPOP on its signal list; rlock.Lock
runs with its defaults (the server's watchdog, FIFO queue). Prints each figure's median and
range and writes every round's figures to target/bench-python.json (benches/pairs.py sets the
pairs side by side, with ratios).

Environment: BENCH_REPS (5), BENCH_ROUND_MS (2000), BENCH_CONTENDERS (16), BENCH_HANDOFFS (20),
BENCH_SIDES (all: rlock,redis-py,python-redis-lock), BENCH_WORKLOADS (all:
uncontended,parallel,handoff,hot).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import redis
import redis_lock
from redis.lock import Lock as RedisPyLock

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import rlock  # noqa: E402
from servers import REPO, RedisServer  # noqa: E402

REPS = int(os.environ.get("BENCH_REPS", 5))
ROUND_S = int(os.environ.get("BENCH_ROUND_MS", 2000)) / 1000
CONTENDERS = int(os.environ.get("BENCH_CONTENDERS", 16))
HANDOFFS = int(os.environ.get("BENCH_HANDOFFS", 20))
# How long the holder keeps the lock once the waiter is about to ask, so that it is waiting.
HANDOFF_HOLD_S = 0.005
# Long enough that no wait of a round gives up, for both sides.
BLOCKING_TIMEOUT_S = 120
REDIS_PY_LEASE_S = 10

SIDES = {
    "rlock": lambda client, key: client.lock(key, lock_class=rlock.Lock, blocking_timeout=BLOCKING_TIMEOUT_S),
    "redis-py": lambda client, key: client.lock(
        key, lock_class=RedisPyLock, timeout=REDIS_PY_LEASE_S, blocking_timeout=BLOCKING_TIMEOUT_S
    ),
    "python-redis-lock": lambda client, key: PythonRedisLock(client, key),
}


class PythonRedisLock:
    """python-redis-lock's Lock with the acquire()/release() the workloads call: a lease as
    redis-py's gets, and a wait without end (its wait may not outlast its lease)."""

    def __init__(self, client, key):
        self.name = key
        self.lock = redis_lock.Lock(client, key, expire=REDIS_PY_LEASE_S)

    def acquire(self) -> bool:
        return self.lock.acquire(blocking=True)

    def release(self) -> None:
        self.lock.release()


def acquired(lock) -> None:
    if not lock.acquire():
        raise RuntimeError(f"{lock.name}: not acquired within {BLOCKING_TIMEOUT_S} s")


def uncontended(make, client, key) -> dict:
    lock = make(client, key)
    acquired(lock)  # one pair outside the clock: connections and scripts are set up by then
    lock.release()
    pairs = 0
    start, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - start < ROUND_S:
        acquired(lock)
        lock.release()
        pairs += 1
    # CPU time of the whole process (every thread) per pair: what a loaded machine changes least.
    return {"pairs_per_s": pairs / (time.perf_counter() - start), "cpu_us_per_pair": 1e6 * (time.process_time() - cpu) / pairs}


def parallel(make, clients, key) -> float:
    """Every client's thread loops over uncontended pairs on a key of its own."""
    locks = [make(client, f"{key}:{i}") for i, client in enumerate(clients)]
    for lock in locks:
        acquired(lock)
        lock.release()
    counts = [0] * len(locks)
    running = threading.Event()
    running.set()

    def loop(i, lock):
        while running.is_set():
            acquired(lock)
            lock.release()
            counts[i] += 1

    start, end = one_round(loop, locks, running)
    return sum(counts) / (end - start)


def one_round(body, locks, running, at_end=lambda: None):
    """Runs body(i, lock) in a thread per lock for ROUND_S, then clears `running`; calls
    at_end() at that moment, before the threads are joined. Returns (start, end)."""
    threads = [threading.Thread(target=body, args=(i, lock)) for i, lock in enumerate(locks)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(ROUND_S)
    running.clear()
    end = time.perf_counter()
    at_end()
    for thread in threads:
        thread.join()
    return start, end


def handoff(make, clients, key) -> float:
    """Median ms from the holder's release to the waiter holding."""
    holder, waiter = make(clients[0], key), make(clients[1], key)
    acquired(waiter)
    waiter.release()
    times = []
    for _ in range(HANDOFFS):
        acquired(holder)
        asking, held = threading.Event(), []

        def wait():  # released in the thread that holds (rlock's holdings are per thread)
            asking.set()
            acquired(waiter)
            held.append(time.perf_counter())
            waiter.release()

        thread = threading.Thread(target=wait)
        thread.start()
        asking.wait()
        time.sleep(HANDOFF_HOLD_S)
        released = time.perf_counter()
        holder.release()
        thread.join()
        times.append(held[0] - released)
    return 1000 * statistics.median(times)


def hot_lock(make, clients, key) -> dict:
    locks = [make(client, key) for client in clients]
    for lock in locks:
        acquired(lock)
        lock.release()
    waits, counts, pending = [], [0] * len(locks), [None] * len(locks)
    running = threading.Event()
    running.set()

    def contend(i, lock):
        while running.is_set():
            asked = time.perf_counter()
            pending[i] = asked
            acquired(lock)
            pending[i] = None
            if not running.is_set():
                lock.release()
                break
            waits.append(time.perf_counter() - asked)  # list.append is atomic under the GIL
            counts[i] += 1
            lock.release()

    unfinished = []
    cpu = time.process_time()
    start, end = one_round(
        contend, locks, running,
        lambda: unfinished.extend(time.perf_counter() - asked for asked in list(pending) if asked is not None),
    )
    cpu = time.process_time() - cpu
    every = sorted(waits + unfinished)
    return {
        "acquires_per_s": len(waits) / (end - start),
        "p99_ms": 1000 * every[min(len(every) - 1, math.ceil(0.99 * len(every)) - 1)] if every else math.nan,
        # The p99 is over acquisitions (a starved thread weighs once): the longest wait shows it.
        "max_wait_ms": 1000 * every[-1] if every else math.nan,
        "max_per_contender": max(counts),
        "min_per_contender": min(counts),
        "unfinished_waits": len(unfinished),
        # The process's CPU time (every thread) per acquisition: what load changes least.
        "cpu_us_per_acquire": 1e6 * cpu / max(1, len(waits)),
    }


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="rlock-bench-") as directory:
        server = RedisServer(Path(directory))
        clients = [redis.Redis(port=server.port) for _ in range(CONTENDERS)]
        try:
            figures: dict[str, list[float]] = {}
            names = [name for name in SIDES if name in os.environ.get("BENCH_SIDES", name).split(",")]
            workloads = os.environ.get("BENCH_WORKLOADS", "uncontended,parallel,handoff,hot").split(",")
            for rep in range(REPS):
                for name in names[rep % len(names):] + names[: rep % len(names)]:
                    prefix = f"python.lock.{name}"
                    if "uncontended" in workloads:
                        for figure, value in uncontended(SIDES[name], clients[0], f"bench:{prefix}:u{rep}").items():
                            figures.setdefault(f"{prefix}.uncontended.{figure}", []).append(value)
                    if "parallel" in workloads:
                        figures.setdefault(f"{prefix}.parallel{CONTENDERS}.pairs_per_s", []).append(
                            parallel(SIDES[name], clients, f"bench:{prefix}:p{rep}")
                        )
                    if "handoff" in workloads:
                        figures.setdefault(f"{prefix}.handoff.median_ms", []).append(
                            handoff(SIDES[name], clients, f"bench:{prefix}:o{rep}")
                        )
                    if "hot" in workloads:
                        hot = hot_lock(SIDES[name], clients, f"bench:{prefix}:h{rep}")
                        for figure, value in hot.items():
                            figures.setdefault(f"{prefix}.hot{CONTENDERS}.{figure}", []).append(value)
            meta = {
                "redis_version": clients[0].info("server")["redis_version"],
                "python_version": sys.version.split()[0],
                "redis_py_version": redis.__version__,
                "python_redis_lock_version": redis_lock.__version__,
                "load_average": os.getloadavg(),
                "reps": REPS,
                "round_ms": ROUND_S * 1000,
                "contenders": CONTENDERS,
            }
        finally:
            for client in clients:
                client.close()
            server.stop()
    out = REPO / "target" / "bench-python.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "figures": figures}, indent=1) + "\n")
    print(f"{'figure':<58} {'median':>10}   [min .. max] over {REPS} rounds")
    for name, values in figures.items():
        print(f"{name:<58} {statistics.median(values):>10.1f}   [{min(values):.1f} .. {max(values):.1f}]")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
