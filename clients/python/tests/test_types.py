"""ReadWriteLock, Semaphore and CountDownLatch, blocking (a thread per handle) and asyncio (a
task per handle), against a real server: what each holds, who waits for whom, processes that
exclude each other or die holding, retried calls, cancelled waits and the watchdog."""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time

import pytest
import rlock
from redis.exceptions import LockError

from support import (
    DroppedReplies,
    eventually,
    excluded_by,
    holder_entries,
    holders,
    holding_process,
    owner,
    queued,
    rlock_stat,
    rwlock_info,
    sem_info,
    side,
)

KINDS = ["read", "write", "permits"]


# -- read-write lock ------------------------------------------------------------------------------


async def test_readers_share_and_a_writer_excludes(variant, admin):
    (reader1, _), (reader2, _), (_, writer) = variant.rwlock("k"), variant.rwlock("k"), variant.rwlock("k")
    assert await reader1.acquire() and await reader2.acquire(blocking=False)
    assert not await writer.acquire(blocking=False)
    assert await reader1.locked() and not await writer.locked()
    assert len(holders(admin, "k")) == 2
    await reader1.release()
    await reader2.release()
    assert rwlock_info(admin, "k") is None
    assert await writer.acquire(blocking=False)
    assert not await reader1.acquire(blocking=False)
    assert await writer.locked() and not await reader1.locked()
    assert await writer.owned() and not await reader1.owned()
    fence = await writer.get(lambda lock: lock.fence)
    assert rwlock_info(admin, "k")["holders"][0]["token"] == fence
    await writer.release()
    assert await reader1.acquire()
    assert await reader1.get(lambda lock: lock.fence) > fence
    await reader1.release()


async def test_a_writer_downgrades_and_a_reader_cannot_upgrade(variant, admin):
    read, write = variant.rwlock("k")
    assert await write.acquire()
    bound = rwlock_info(admin, "k")["holders"][0]["watchdog"]
    assert await read.acquire(blocking=False)  # the writer may read
    await write.release()  # ... and keeps reading, on the same watchdog connection
    me = await owner(read)
    assert holders(admin, "k") == {(me, "read"): 1}
    info = rwlock_info(admin, "k")
    assert info["mode"] == "read" and info["holders"][0]["watchdog"] == bound
    assert await read.owned() and not await write.owned()
    (other_reader, _) = variant.rwlock("k")
    assert await other_reader.acquire(blocking=False)
    await other_reader.release()

    started = time.monotonic()
    with pytest.raises(LockError, match="read lock"):
        await write.acquire(blocking_timeout=5)  # would wait for itself: refused at once
    assert time.monotonic() - started < 0.5
    assert queued(admin, "write", "k") == 0
    await read.release()
    assert rwlock_info(admin, "k") is None


async def test_a_side_with_a_lease_extends_and_reacquires(variant, admin):
    read, write = variant.rwlock("k", timeout=1)
    assert await write.acquire()
    assert await write.extend(10)
    assert 9000 < rwlock_info(admin, "k")["ttl"] <= 11000
    assert await write.reacquire()
    assert rwlock_info(admin, "k")["ttl"] <= 1000
    await write.release()
    with pytest.raises(LockError):
        await write.release()
    with pytest.raises(LockError):
        await variant.rwlock("k")[0].extend(1)  # holds nothing


# -- semaphore ------------------------------------------------------------------------------------


async def test_permits_are_counted_per_thread(variant, admin):
    sem = variant.semaphore("s")
    same_object_elsewhere = variant.worker(sem.lock)  # another thread (task): another owner
    assert await sem.try_set_permits(3)
    assert not await sem.try_set_permits(5)
    assert await sem.available_permits() == 3
    assert await sem.acquire(2)
    with pytest.raises(LockError, match="more than held"):
        await sem.release(3)  # and nothing changes
    assert await same_object_elsewhere.acquire(blocking=False)
    assert not await same_object_elsewhere.acquire(blocking=False)  # none left
    assert await sem.available_permits() == 0
    assert holders(admin, "s") == {await owner(sem): 2, await owner(same_object_elsewhere): 1}
    fence = await sem.get(lambda lock: lock.fence)
    me = await owner(sem)
    assert fence == next(entry["token"] for entry in sem_info(admin, "s")["holders"] if entry["owner"] == me)

    await sem.release()
    assert holders(admin, "s")[await owner(sem)] == 1 and await sem.owned()
    assert await sem.add_permits(2) == 3
    assert await sem.acquire(2, blocking=False)  # more for the same thread: they add up
    assert await sem.get(lambda lock: lock.fence) > fence  # each grant has a token of its own
    assert holders(admin, "s")[await owner(sem)] == 3
    await sem.release(3)
    await same_object_elsewhere.release()
    assert holders(admin, "s") == {} and await sem.available_permits() == 5  # 3 set, 2 added
    with pytest.raises(LockError):
        await sem.release()
    async with sem:  # one permit
        assert await sem.available_permits() == 4
    assert await sem.available_permits() == 5


async def test_permits_come_back_when_their_thread_ends(variant, admin, redis_server):
    """A thread (task) that ends holding permits gives them back, as a process that dies does
    (its watchdog connection closes)."""
    client = variant.client()
    sem = variant.module.Semaphore(client, "s")
    assert await variant.semaphore("s", client=client).try_set_permits(3)
    if variant.name == "asyncio":
        task = asyncio.create_task(sem.acquire(2))
        assert await task
    else:
        results = []
        thread = threading.Thread(target=lambda: results.append(sem.acquire(2)))
        thread.start()
        thread.join()
        assert results == [True]
    await eventually(lambda: holders(admin, "s") == {}, what="the permits to come back")
    assert sem_info(admin, "s")["available"] == 3


async def test_a_semaphore_that_does_not_exist_has_no_permits(variant, admin):
    sem = variant.semaphore("s")
    assert await sem.available_permits() == 0
    assert not await sem.acquire(blocking_timeout=0.1)


# -- latch ----------------------------------------------------------------------------------------


async def test_count_down_answers_what_is_left(variant, admin):
    """count_down()'s reply, which the spec's scenarios do not read (they read get_count): the
    count left, and 0 on an open latch; wait() without a timeout returns at once then."""
    latch = variant.latch("l")
    assert await latch.try_set_count(2)
    assert await latch.count_down() == 1
    assert await latch.count_down() == 0
    assert await latch.wait()
    assert await latch.count_down() == 0  # open: nothing to count


# -- every type ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_processes_exclude_each_other(variant, admin, redis_server, kind):
    if kind == "permits":
        admin.execute_command("RSEM.SETPERMITS", "k", 1)
    with holding_process(redis_server.port, "k", kind) as holder:
        mine = side(variant, excluded_by(kind), "k")
        assert not await mine.acquire(blocking=False)
        waiting = mine.start("acquire", blocking_timeout=10)
        await eventually(lambda: queued(admin, kind, "k") == 1, what="the waiter to queue")
        holder.stdin.write("release\n")
        holder.stdin.flush()
        assert await asyncio.wait_for(waiting, 5)
        assert holder.stdout.readline().strip() == "released"
        assert await mine.owned()
        await mine.release()


@pytest.mark.parametrize("kind", ["lock", *KINDS])
@pytest.mark.parametrize("granted", ["at-once", "by-message"])
async def test_the_watchdog_keeps_a_holding_past_its_lease(variant, new_server, kind, granted):
    """A 1 s watchdog lease lives through 3.2 s, held at once (its own connection, PINGed) or
    granted by message (bound to the subscriber, confirmed, PINGed), with the server's idle bound
    at 1 s: unrenewed it would end after 1 s, unPINGed after at most 2 s + the lease. The lease
    leaves a loaded server 0.67 s to renew it in."""
    server = new_server("watchdog-idle-ms", 1000)
    admin = server.client()
    client = variant.client(port=server.port)
    if kind == "permits":
        admin.execute_command("RSEM.SETPERMITS", "k", 1)
    mine = side(variant, kind, "k", client=client, watchdog_lease=1.0)
    other = side(variant, excluded_by(kind), "k", client=client)
    if granted == "by-message":
        assert await other.acquire()
        waiting = mine.start("acquire")
        await eventually(lambda: queued(admin, kind, "k") == 1, what="the waiter to queue")
        await other.release()
        assert await asyncio.wait_for(waiting, 5)
    else:
        assert await mine.acquire()
    me = await owner(mine)

    def entry():
        entries = holder_entries(admin, "k")
        key = (me, kind) if kind in ("read", "write") else me
        assert key in entries, "the holding ended"
        return entries[key]

    started = time.monotonic()
    while time.monotonic() - started < 3.2:
        assert entry()["ttl"] <= 1000 and entry()["watchdog"] is not None
        await asyncio.sleep(0.1)
    assert await mine.owned()
    await mine.release()
    assert holders(admin, "k") == {}


async def test_retried_calls_count_once(variant, admin):
    """A reply lost with its connection: the call is sent again with the same ID, and the
    server answers it as it did the first time (read-write lock, semaphore, latch)."""
    client = variant.client(connection_class=variant.flaky_connection_class)
    read, write = variant.rwlock("k", client=client, timeout=30)
    sem = variant.semaphore("s", client=client, timeout=30)
    latch = variant.latch("l", client=client)
    answered, dropped = rlock_stat(admin, "retries_answered"), DroppedReplies.count
    me = await owner(read)

    DroppedReplies.arm("RWLOCK.ACQUIRE")
    assert await write.acquire()
    DroppedReplies.arm("RWLOCK.ACQUIRE")
    assert await read.acquire()  # the downgrade
    assert holders(admin, "k") == {(me, "write"): 1, (me, "read"): 1}
    DroppedReplies.arm("RWLOCK.RELEASE")
    await write.release()
    assert holders(admin, "k") == {(me, "read"): 1}
    await read.release()

    assert await sem.try_set_permits(5)
    DroppedReplies.arm("RSEM.ACQUIRE")
    assert await sem.acquire(2)
    assert await sem.available_permits() == 3
    DroppedReplies.arm("RSEM.RELEASE")
    await sem.release()
    assert await sem.available_permits() == 4

    assert await latch.try_set_count(3)
    DroppedReplies.arm("RLATCH.COUNTDOWN")
    assert await latch.count_down() == 2
    assert await latch.get_count() == 2

    assert DroppedReplies.count - dropped == 6
    assert rlock_stat(admin, "retries_answered") - answered == 6
    await sem.release()


async def test_a_cancelled_wait_leaves_the_queue(variant, admin, redis_server):
    """asyncio: the waiting task is cancelled; blocking: the waiting thread is interrupted
    (SIGINT, in a process of its own, which stays connected). Either way the queue entry goes
    (RLOCK.CANCEL) and the next waiter gets the holding."""
    admin.execute_command("RSEM.SETPERMITS", "s", 1)
    for kind, name in (("lock", "l"), ("write", "k"), ("read", "k"), ("permits", "s")):
        holder = side(variant, excluded_by(kind), name)
        assert await holder.acquire()
        cancelled = rlock_stat(admin, "cancelled")
        if variant.name == "asyncio":
            waiting = asyncio.create_task(side(variant, kind, name).lock.acquire())  # this task waits
            await eventually(lambda: queued(admin, kind, name) == 1, what=f"the {kind} waiter to queue")
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
        else:
            await interrupted_waiter(admin, redis_server.port, kind, name)
        assert queued(admin, kind, name) == 0
        assert rlock_stat(admin, "cancelled") == cancelled + 1
        nxt = side(variant, kind, name)
        waiting = nxt.start("acquire", blocking_timeout=10)
        await eventually(lambda: queued(admin, kind, name) == 1, what="the next waiter to queue")
        await holder.release()
        assert await asyncio.wait_for(waiting, 5)
        await nxt.release()
        assert holders(admin, name) == {}


WAITER = """
import signal, sys, time, redis, rlock, rlock._waiting
# Ctrl-C as at a terminal, whatever the launcher did: a background job of a non-interactive shell
# starts with SIGINT ignored, and this process would inherit that (then no Ctrl-C ever comes).
signal.signal(signal.SIGINT, signal.default_int_handler)
port, kind, name, late = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == "late"
if late:  # the thread descheduled between its queued call and its wait (where the flake was)
    give_up_at = rlock._waiting.Acquisition._give_up_at
    rlock._waiting.Acquisition._give_up_at = lambda self: time.sleep(1) or give_up_at(self)
r = redis.Redis(port=port)
if kind in ("read", "write"):
    lock = getattr(rlock.ReadWriteLock(r, name), kind + "_lock")()
else:
    lock = rlock.Semaphore(r, name) if kind == "permits" else rlock.Lock(r, name)
print("waiting", flush=True)
try:
    lock.acquire()
except KeyboardInterrupt:
    print("interrupted", flush=True)
    time.sleep(60)
"""


async def interrupted_waiter(admin, port: int, kind: str, name: str, late: bool = False) -> None:
    """A process whose main thread waits for `kind`, interrupted by SIGINT once queued; its
    entry must have left the queue while it is still alive (its subscriber connected): by its
    cancel, not by the server dropping the waits of a closed connection."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WAITER,
        str(port), kind, name, "late" if late else "soon", stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert (await process.stdout.readline()).strip() == b"waiting"
        await eventually(lambda: queued(admin, kind, name) == 1, what=f"the {kind} waiter to queue")
        process.send_signal(signal.SIGINT)
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        assert line.strip() == b"interrupted"
        assert process.returncode is None
        assert queued(admin, kind, name) == 0, "the interrupted waiter left its entry in the queue"
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def test_an_interrupt_between_the_queued_call_and_its_wait_leaves_the_queue(admin, redis_server):
    """Ctrl-C may come anywhere in the waiting thread, not only while it waits on its future:
    here (made likely by a pause) after its call was queued and before it waits. The entry
    still leaves by RLOCK.CANCEL, so a process that goes on does not leave it to be granted."""
    holder = rlock.Lock(redis_server.client(), "l")
    assert holder.acquire(blocking=False)  # opens no subscriber, which later tests count
    cancelled = rlock_stat(admin, "cancelled")
    await interrupted_waiter(admin, redis_server.port, "lock", "l", late=True)
    assert rlock_stat(admin, "cancelled") == cancelled + 1
    holder.release()
