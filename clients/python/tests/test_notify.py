"""rlock.asyncio.Lock waits without a blocked connection (docs/notify.md): a blocking acquire
queues with NOTIFY and is told its grant on the channel of one subscriber connection that every
waiting lock of the client shares. Each test runs over RESP2 (the calls name the subscriber's
client id) and RESP3 (the subscriber runs the calls itself), against real servers, synchronised
on what the server reports (RLOCK.INFO, INFO rlock, PUBSUB CHANNELS)."""

from __future__ import annotations

import asyncio
import time

import pytest
import rlock.asyncio
from redis.exceptions import LockNotOwnedError
from rlock._connections import MAX_IDLE_CONNECTIONS
from rlock._notify import Message, parse_message

from support import AsyncioVariant, blocked_clients, eventually, lock_info, rlock_stat, subscribers, waiters

LOCKS = 50
WAITERS_PER_LOCK = 3

protocols = pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])


@pytest.fixture
def variant(redis_server):
    """These cases are the asyncio Lock's (cancelled tasks, RESP3 subscribers); what the
    blocking Lock shares is in test_waiting_by_message.py."""
    return AsyncioVariant(redis_server.port)


def hold(admin, name, owner="holder"):
    assert admin.execute_command("RLOCK.ACQUIRE", name, owner, "PX", 60000)


def owner_of(admin, name) -> bytes:
    return lock_info(admin, name)["owner"].encode()


async def queue(admin, lock, name, place: int, **kwargs) -> asyncio.Task:
    """Starts lock.acquire(**kwargs) in a task of its own, once it stands `place`-th in the queue."""
    task = asyncio.create_task(lock.acquire(**kwargs))
    await eventually(lambda: waiters(admin, name) == place, what=f"waiter {place} of {name} to queue")
    return task


def test_messages_are_read_as_documented():
    cases = [
        (b"granted lock 1763900000123456 5 jobs1 worker-7", Message("granted", "lock", 1763900000123456, b"jobs1", b"worker-7")),
        (b"timeout lock - 3 a b o w", Message("timeout", "lock", None, b"a b", b"o w")),  # spaces in both
        (b"failed lock WRONGTYPE 1 k o", Message("failed", "lock", "WRONGTYPE", b"k", b"o")),
        (b"lost write 5 0  x y", Message("lost", "write", 5, b"", b"x y")),  # an empty key
        (b"granted latch 1 5 l\r\n\x00  ", Message("granted", "latch", 1, b"l\r\n\x00 ", b"")),  # binary, no owner
    ]
    for data, message in cases:
        assert parse_message(data) == message
    for broken in [b"granted lock 1 9 short o", b"granted lock 1 x k o", b"granted lock 1", b"hello lock 1 1 k o", b"granted lock 1 1 kXo"]:
        with pytest.raises(ValueError):
            parse_message(broken)


@protocols
async def test_one_connection_waits_for_many_locks_in_fifo_order(variant, admin, protocol):
    """150 waits on 50 locks stand in the server's queues over one subscriber connection, none
    blocked, while the client goes on running other commands; each lock is handed on in arrival
    order."""
    names = [f"job:{n}" for n in range(LOCKS)]
    for name in names:
        hold(admin, name)
    connections = len(admin.client_list())
    client = variant.client(protocol=protocol)
    queued = {name: [] for name in names}  # (lock, its acquire task), in arrival order
    for place in range(1, WAITERS_PER_LOCK + 1):
        for name in names:
            lock = rlock.asyncio.Lock(client, name)
            queued[name].append((lock, asyncio.create_task(lock.acquire(blocking_timeout=60))))
        await eventually(lambda: all(waiters(admin, name) == place for name in names), what=f"round {place} to queue")

    assert len(subscribers(admin)) == 1
    assert blocked_clients(admin) == 0
    bound = 2 if protocol == 3 else 1 + MAX_IDLE_CONNECTIONS  # the subscriber and idle lock connections
    await eventually(lambda: len(admin.client_list()) - connections <= bound, what="the connections to settle")

    other = rlock.asyncio.Lock(client, "other", timeout=10)

    async def other_work():
        for n in range(20):
            assert await other.acquire()  # blocking, but free: held at once
            assert await other.locked()
            await other.release()
            await client.set("plain", n)
            assert await client.get("plain") == str(n).encode()

    await asyncio.wait_for(other_work(), 10)
    assert not any(task.done() for entries in queued.values() for _, task in entries)

    for place in range(WAITERS_PER_LOCK):
        if place == 0:
            for name in names:
                assert admin.execute_command("RLOCK.RELEASE", name, "holder") == 0
        else:
            await asyncio.gather(*(queued[name][place - 1][0].release() for name in names))
        granted = await asyncio.wait_for(asyncio.gather(*(queued[name][place][1] for name in names)), 10)
        assert all(granted)
        for name in names:
            lock, _ = queued[name][place]
            info = lock_info(admin, name)
            assert info["owner"].encode() == lock.local.token  # the next in arrival order
            assert info["waiters"] == WAITERS_PER_LOCK - place - 1
            assert not any(task.done() for _, task in queued[name][place + 1 :])
    await asyncio.gather(*(queued[name][-1][0].release() for name in names))
    assert all(lock_info(admin, name) is None for name in names)
    assert blocked_clients(admin) == 0


@protocols
async def test_a_cancelled_wait_leaves_the_queue(variant, admin, protocol):
    client = variant.client(protocol=protocol)
    hold(admin, "k")
    first, second = rlock.asyncio.Lock(client, "k"), rlock.asyncio.Lock(client, "k")
    waiting_first = await queue(admin, first, "k", 1)
    waiting_second = await queue(admin, second, "k", 2)
    cancelled = rlock_stat(admin, "cancelled")

    waiting_first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting_first
    assert waiters(admin, "k") == 1  # out of the queue once the cancelled call returns
    assert rlock_stat(admin, "cancelled") == cancelled + 1

    assert admin.execute_command("RLOCK.RELEASE", "k", "holder") == 0
    assert await asyncio.wait_for(waiting_second, 5)
    assert owner_of(admin, "k") == second.local.token
    assert first.local.holding is None
    await second.release()
    assert lock_info(admin, "k") is None


@protocols
async def test_a_grant_that_races_the_cancel_goes_to_the_next_waiter(variant, admin, protocol):
    """The holder releases and the first waiter's task is cancelled before it has read its
    grant: the grant it got after all is released, and the lock goes on to the second."""
    client = variant.client(protocol=protocol)
    hold(admin, "k")
    first, second = rlock.asyncio.Lock(client, "k"), rlock.asyncio.Lock(client, "k")
    waiting_first = await queue(admin, first, "k", 1)
    waiting_second = await queue(admin, second, "k", 2)

    assert admin.execute_command("RLOCK.RELEASE", "k", "holder") == 0  # the grant is on its way
    assert lock_info(admin, "k")["owner"] != "holder"
    waiting_first.cancel()  # before the event loop has run the subscriber's reader
    with pytest.raises(asyncio.CancelledError):
        await waiting_first

    assert await asyncio.wait_for(waiting_second, 5)
    assert owner_of(admin, "k") == second.local.token
    assert first.local.holding is None or not first.local.holding.live
    await second.release()
    assert lock_info(admin, "k") is None


@protocols
async def test_the_server_times_the_wait_out(variant, admin, protocol):
    client = variant.client(protocol=protocol)
    hold(admin, "k")
    lock = rlock.asyncio.Lock(client, "k")
    timeouts = rlock_stat(admin, "wait_timeouts")
    started = time.monotonic()
    assert not await lock.acquire(blocking_timeout=0.2)
    waited = time.monotonic() - started
    assert 0.18 < waited < 0.9  # the server's `timeout` message, well before the client's grace
    assert rlock_stat(admin, "wait_timeouts") == timeouts + 1
    assert waiters(admin, "k") == 0
    assert lock.local.holding is None
    assert admin.execute_command("RLOCK.RELEASE", "k", "holder") == 0
    assert lock_info(admin, "k") is None


@protocols
async def test_a_key_turned_another_type_fails_the_wait(variant, admin, protocol):
    """The holder's key is overwritten by a string: at its lease end the waiter is told
    `failed ... WRONGTYPE`, and acquire() raises rlock.asyncio.WrongTypeError then, as it does
    for a name that holds another type at once (not after the whole blocking_timeout). The
    holder's lease is long until the waiter has queued, then cut to 100 ms in the transaction
    that overwrites the key: however slowly the test runs, the lease cannot end first."""
    client = variant.client(protocol=protocol)
    hold(admin, "k")
    lock = rlock.asyncio.Lock(client, "k")
    waiting = await queue(admin, lock, "k", 1, blocking_timeout=30)
    with admin.pipeline(transaction=True) as overwrite:
        overwrite.execute_command("RLOCK.RENEW", "k", "holder", "PX", 100).set("k", "not a lock")
        assert overwrite.execute() == [1, True]
    with pytest.raises(rlock.asyncio.WrongTypeError, match="^WRONGTYPE"):
        await asyncio.wait_for(waiting, 5)
    assert lock.local.holding is None


@protocols
async def test_a_watchdog_grant_is_confirmed_and_renewed(variant, new_server, protocol):
    """A watchdog grant told by message is renewed only once confirmed (RENEW ... WATCHDOG),
    and stays bound to the subscriber, which must PING to count as alive: with a 1 s lease and a
    1 s idle bound (unconfirmed it would end after 1 s, unPINGed after at most 2 s + the lease),
    the lock lives through 3.5 s only if both happen. The lease leaves a loaded server 0.67 s to
    renew it in."""
    server = new_server("watchdog-idle-ms", 1000)
    admin = server.client()
    client = variant.client(port=server.port, protocol=protocol)
    hold(admin, "k")
    lock = rlock.asyncio.Lock(client, "k", watchdog_lease=1.0)
    waiting = await queue(admin, lock, "k", 1)
    assert admin.execute_command("RLOCK.RELEASE", "k", "holder") == 0
    assert await asyncio.wait_for(waiting, 5)

    info = lock_info(admin, "k")
    assert info["token"] == lock.fence
    assert info["watchdog"] in subscribers(admin)  # bound to the connection told of the grant
    bound = info["watchdog"]

    def renewed_for_long():
        info = lock_info(admin, "k")
        assert info is not None, "the lock ended"
        assert (info["token"], info["watchdog"]) == (lock.fence, bound)
        assert info["ttl"] <= 1000
        return info["held"] >= 3500

    await eventually(renewed_for_long, timeout=15, what="3.5 s of holding")
    assert await lock.owned()
    await lock.release()
    assert lock_info(admin, "k") is None


@protocols
@pytest.mark.parametrize("timeout", [None, 10], ids=["watchdog", "lease"])
@pytest.mark.parametrize("granted", ["by-message", "at-once"])
async def test_a_forced_release_is_reported_lost(variant, admin, protocol, timeout, granted):
    client = variant.client(protocol=protocol)
    lost = asyncio.Event()
    lock = rlock.asyncio.Lock(client, "k", timeout=timeout, on_lost=lambda lock: lost.set())
    if granted == "by-message":
        hold(admin, "k")
        waiting = await queue(admin, lock, "k", 1)
        assert admin.execute_command("RLOCK.RELEASE", "k", "holder") == 0
        assert await asyncio.wait_for(waiting, 5)
    else:
        assert await lock.acquire(blocking_timeout=5)  # free: held at once, still with NOTIFY
    assert await lock.owned()
    notices = rlock_stat(admin, "notify_lost")

    assert admin.execute_command("RLOCK.FORCERELEASE", "k") == 1
    await asyncio.wait_for(lost.wait(), 5)
    assert rlock_stat(admin, "notify_lost") == notices + 1
    assert not await lock.owned()
    with pytest.raises(LockNotOwnedError):
        await lock.release()
