"""Through a RedisCluster client (blocking and asyncio): every type on keys spread over the
three primaries, a MultiLock with a hash tag and the clear error without one, then a holder and
its waiters across CLUSTER FAILOVER and across kill -9 of a primary and its replica's promotion
(failover_scenario.py). One topology for the module: the kill comes last."""

from __future__ import annotations

import asyncio

import pytest
import rlock
import rlock.asyncio

import failover_scenario
import topologies

#: Keys on different slots, so that the calls go to different primaries.
KEYS = ("lock:a", "rw:b", "sem:c", "latch:d", "election:e")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    topology = topologies.prepare(topologies.start("cluster", tmp_path_factory.mktemp("cluster")))
    yield topology
    topology.stop()


def test_every_blocking_type_works_on_the_cluster(cluster):
    r = topologies.user_client(cluster, asyncio_client=False)
    assert len({topologies.primary_port(cluster, key) for key in KEYS}) > 1, "the keys are spread"
    lock, other = rlock.Lock(r, "lock:a"), rlock.Lock(r, "lock:a")
    assert lock.acquire(blocking=False) and not other.acquire(blocking=False)
    assert lock.guard("SET", "lock:a:{lock:a}", "v") is not None
    lock.release()
    assert other.acquire(blocking_timeout=5)  # waits by NOTIFY on the key's node, granted at once
    other.release()

    rw = rlock.ReadWriteLock(r, "rw:b")
    with rw.read_lock():
        assert not rlock.ReadWriteLock(r, "rw:b").write_lock().acquire(blocking=False), "a reader excludes a writer"
    sem = rlock.Semaphore(r, "sem:c")
    assert sem.try_set_permits(2) and sem.acquire(2) and sem.available_permits() == 0
    sem.release(2)

    latch = rlock.CountDownLatch(r, "latch:d")
    assert latch.try_set_count(1)
    waiting = topologies.threading.Thread(target=lambda: results.append(latch.wait(timeout=10)))
    results = []
    waiting.start()
    latch.count_down()
    waiting.join(10)
    assert results == [True]

    election = rlock.Election(r, "election:e", "me")
    with election.observe() as changes:
        assert changes.next(timeout=10) is None
        term = election.campaign(timeout=5)
        assert changes.next(timeout=10) == ("me", term)
    election.resign()

    with rlock.MultiLock(r, ["{order}:1", "{order}:2"]) as both:
        assert all(both.tokens)
    with pytest.raises(rlock.CrossSlotError, match=r"hash tag, e.g. \{order\}:1 \{order\}:2"):
        rlock.MultiLock(r, ["order:1", "order:2"])
    r.close()


async def test_every_asyncio_type_works_on_the_cluster(cluster):
    r = topologies.user_client(cluster, asyncio_client=True)
    lock = rlock.asyncio.Lock(r, "lock:a")
    async with lock:
        assert await lock.owned()
        waiter = asyncio.ensure_future(rlock.asyncio.Lock(r, "lock:a").acquire(blocking_timeout=10))
        admin = topologies.admin_for(cluster, "lock:a")
        await topologies.eventually(lambda: topologies.queued(admin, "lock:a") == 1, what="the waiter to queue")
    assert await waiter

    rw = rlock.asyncio.ReadWriteLock(r, "rw:b")
    async with rw.write_lock():
        assert await rw.read_lock().acquire(blocking=False)  # a downgrade, same task
        await rw.read_lock().release()
    sem = rlock.asyncio.Semaphore(r, "sem:c")
    await sem.add_permits(0)
    async with sem:
        pass
    latch = rlock.asyncio.CountDownLatch(r, "latch:d")
    assert await latch.wait(timeout=0)  # opened by the blocking test
    election = rlock.asyncio.Election(r, "election:e", "you")
    term = await election.campaign(timeout=5)
    assert await election.leader() == ("you", term)
    await election.resign()

    multi = rlock.asyncio.MultiLock(r, ["{order}:1", "{order}:2"])
    async with multi:
        assert all(multi.tokens)
    with pytest.raises(rlock.CrossSlotError, match="hash tag"):
        rlock.asyncio.MultiLock(r, ["order:1", "order:2"])
    await r.aclose()


async def test_across_cluster_failover(cluster):
    await failover_scenario.across(cluster, lambda: cluster.failover(key="{failover}:blocking"))


async def test_across_kill_of_a_primary_and_promotion(cluster):
    keys = ("{killed}:blocking", "{killed}:asyncio")

    def kill_and_promote():
        cluster.kill(topologies.primary_port(cluster, keys[0]))
        cluster.await_promotion(key=keys[0])

    await failover_scenario.across(cluster, kill_and_promote, keys=keys)
