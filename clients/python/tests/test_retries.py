"""A call whose reply is lost with its connection is sent again, with the same request ID, on a
new connection: the server answers the retry as it did the first call and counts nothing twice.

The lock's client uses a connection class that, when told, reads one reply and then breaks its
connection: the server carried the call out, the client never learned."""

from __future__ import annotations

from support import DroppedReplies, client_ids, lock_info, rlock_stat


def flaky_lock(variant, **kwargs):
    client = variant.client(connection_class=variant.flaky_connection_class)
    return variant.lock("k", client=client, **kwargs)


async def test_retried_acquire_and_release_count_once(variant, admin):
    lock = flaky_lock(variant, timeout=30)
    answered = rlock_stat(admin, "retries_answered")
    dropped = DroppedReplies.count

    DroppedReplies.arm("RLOCK.ACQUIRE")
    assert await lock.acquire()
    assert lock_info(admin, "k")["holds"] == 1

    DroppedReplies.arm("RLOCK.ACQUIRE")
    assert await lock.acquire()  # a re-entry
    assert lock_info(admin, "k")["holds"] == 2

    DroppedReplies.arm("RLOCK.RELEASE")
    await lock.release()
    assert lock_info(admin, "k")["holds"] == 1

    assert DroppedReplies.count - dropped == 3
    assert rlock_stat(admin, "retries_answered") - answered == 3
    await lock.release()
    assert lock_info(admin, "k") is None


async def test_a_retried_full_release_frees_once(variant, admin):
    lock = flaky_lock(variant, timeout=30)
    other = variant.lock("k", timeout=30)
    assert await lock.acquire()
    DroppedReplies.arm("RLOCK.RELEASE")
    await lock.release()
    assert lock_info(admin, "k") is None
    assert await other.acquire(blocking=False)
    assert await other.owned()


async def test_a_watchdog_acquire_whose_connection_broke_is_taken_anew(variant, admin):
    """The broken connection was the one the lock was bound to, so its close ended the lock;
    the retry takes it again, bound to a connection that lives."""
    lock = flaky_lock(variant)
    DroppedReplies.arm("RLOCK.ACQUIRE")
    assert await lock.acquire()
    info = lock_info(admin, "k")
    assert info["holds"] == 1
    assert info["watchdog"] in client_ids(admin)
    assert info["token"] == await lock.get(lambda lock: lock.fence)
    await lock.release()
    assert lock_info(admin, "k") is None


async def each_reply_lost(admin, steps):
    """Runs each (command, call, answer) with the reply to `command` lost: the call is re-sent
    with the same ID and must give `answer` (of its type: True, not 1), the server answering
    the retry from its memory."""
    answered = rlock_stat(admin, "retries_answered")
    dropped = DroppedReplies.count
    for command, call, expected in steps:
        DroppedReplies.arm(command)
        answer = await call()
        assert (answer, type(answer)) == (expected, type(expected)), command
    assert DroppedReplies.count - dropped == len(steps)
    assert rlock_stat(admin, "retries_answered") - answered == len(steps)


async def test_retried_set_and_add_permits_count_once(variant, admin):
    """Each carries a request ID, so the re-sent call is answered as the first: a retried
    try_set_permits that set the count is True, not "already set"; add_permits adds once."""
    client = variant.client(connection_class=variant.flaky_connection_class)
    sem = variant.semaphore("s", client=client)
    await each_reply_lost(admin, [
        ("RSEM.SETPERMITS", lambda: sem.try_set_permits(3), True),
        ("RSEM.ADDPERMITS", lambda: sem.add_permits(2), 5),
        ("RSEM.ADDPERMITS", lambda: sem.add_permits(-1), 4),
    ])
    assert await sem.available_permits() == 4
    assert await sem.try_set_permits(9) is False


async def test_a_retried_try_set_count_is_true_and_sets_once(variant, admin):
    """The re-sent RLATCH.SET carries the first call's ID: the server answers it 1 again
    instead of "already set", and the count is not set anew."""
    client = variant.client(connection_class=variant.flaky_connection_class)
    latch = variant.latch("l", client=client)
    await each_reply_lost(admin, [
        ("RLATCH.SET", lambda: latch.try_set_count(3), True),
        ("RLATCH.COUNTDOWN", latch.count_down, 2),
    ])
    assert await latch.get_count() == 2
    assert await latch.try_set_count(9) is False
    assert admin.get("l") == "2"
