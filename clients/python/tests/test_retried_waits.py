"""A wait told by message whose subscriber connection closes is sent again, with the same
request ID, through a new subscriber (CONTRACT.md C9.2): a grant made as it closed is answered
to the retry (held once, never twice), an entry dropped with it is queued again (once), and a
wait whose subscribers keep closing ends not held, with nothing left in the queue.

The subscriber is closed by the admin connection (CLIENT KILL ID), after the server acted and
before any message reached it when the grant is in the same MULTI."""

from __future__ import annotations

import asyncio

import pytest
from redis.exceptions import ConnectionError
from rlock._commands import CALL_RETRIES

from support import client_ids, eventually, lock_info, rlock_stat, subscribers, waiters


def hold_as_admin(admin) -> None:
    assert admin.execute_command("RLOCK.ACQUIRE", "k", "admin-holder", "PX", 60000) > 0


async def queued_on_a_new_subscriber(admin, closed: set) -> int:
    """The client id of the subscriber the wait is queued on now, once it is one not in `closed`."""
    await eventually(lambda: waiters(admin, "k") == 1 and subscribers(admin) - closed, timeout=20, what="the wait to queue")
    [subscriber] = subscribers(admin) - closed
    return subscriber


def grant_and_close(admin, subscriber: int) -> None:
    """Releases the admin's holding, which grants the queued wait, and closes the subscriber
    the grant's message is written to, in one transaction: the message never leaves."""
    with admin.pipeline(transaction=True) as pipe:
        pipe.execute_command("RLOCK.RELEASE", "k", "admin-holder")
        pipe.execute_command("CLIENT", "KILL", "ID", subscriber)
        assert pipe.execute() == [0, 1]


async def test_a_leased_grant_lost_with_its_subscriber_is_the_retrys_answer(variant, admin):
    """The grant survives the close (a lease, no binding): the retry with its ID is answered
    its token from the server's memory, one hold, no second queue entry."""
    hold_as_admin(admin)
    lock = variant.lock("k", timeout=60)
    waiting = lock.start("acquire", blocking_timeout=30)
    subscriber = await queued_on_a_new_subscriber(admin, set())
    answered = rlock_stat(admin, "retries_answered")
    grant_and_close(admin, subscriber)

    assert await asyncio.wait_for(waiting, 20)
    info = lock_info(admin, "k")
    assert (info["holds"], info["waiters"]) == (1, 0)
    assert info["token"] == await lock.get(lambda lock: lock.fence)
    assert rlock_stat(admin, "retries_answered") - answered == 1
    await lock.release()
    assert lock_info(admin, "k") is None


async def test_a_watchdog_grant_lost_with_its_subscriber_is_held_by_a_live_connection(variant, admin):
    """The grant was bound to the subscriber, whose close ended it: the retry takes the lock
    anew, bound to a connection that lives, and is told of its loss as any holding is."""
    hold_as_admin(admin)
    lock = variant.lock("k")
    waiting = lock.start("acquire", blocking_timeout=30)
    subscriber = await queued_on_a_new_subscriber(admin, set())
    grant_and_close(admin, subscriber)

    assert await asyncio.wait_for(waiting, 20)
    info = lock_info(admin, "k")
    assert (info["holds"], info["waiters"]) == (1, 0)
    assert info["watchdog"] in client_ids(admin) and info["watchdog"] != subscriber
    assert info["token"] == await lock.get(lambda lock: lock.fence)
    await lock.release()
    assert lock_info(admin, "k") is None


async def test_a_wait_whose_subscribers_keep_closing_ends_not_held_and_leaves_no_entry(variant, admin):
    """Sent again as often as any call is retried (once per delay of CALL_RETRIES), each time
    through a new subscriber; when that one closes too, the wait raises the subscriber's
    ConnectionError and the queue holds nothing of it."""
    hold_as_admin(admin)
    lock = variant.lock("k", timeout=60)
    waiting = lock.start("acquire", blocking_timeout=60)
    closed = set()
    for _ in range(1 + len(CALL_RETRIES.delays)):
        subscriber = await queued_on_a_new_subscriber(admin, closed)
        closed.add(subscriber)
        admin.client_kill_filter(_id=subscriber)
    with pytest.raises(ConnectionError, match="subscriber"):
        await asyncio.wait_for(waiting, 20)
    assert waiters(admin, "k") == 0
    assert lock_info(admin, "k")["owner"] == "admin-holder"
    assert not await lock.owned()
