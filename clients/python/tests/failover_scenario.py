"""One scenario for every kind of failover (SENTINEL FAILOVER, CLUSTER FAILOVER, kill -9 of the
primary and a promotion), through the public API only, with the blocking and the asyncio
client at once (each on a key of its own, both served by the primary that fails over):

a holder (confirmed by the replica), and two waiters queued behind it, each on a client of its
own: one told its grant by message (NOTIFY, on its client's subscriber), one blocked in WAIT
(its ACL user may not subscribe: topologies.BLOCKED_USER); then the failover. Afterwards the holder still
holds on the new primary or was told it lost it (on_lost, and release() raises
LockNotOwnedError), never silently kept; both waiters are served after it, one at a time, with
rising tokens; a fenced resource accepts every one of them and never two at once.
"""

from __future__ import annotations

import asyncio
import threading

import rlock
import rlock.asyncio
from redis.exceptions import LockNotOwnedError

import topologies

WAIT_S = 90.0  # the waiters' blocking_timeout: long past any failover here


class Party:
    """A lock object and how to call it: awaited (asyncio), or in a worker thread (blocking;
    thread_local=False, so that any worker thread may release what another acquired)."""

    def __init__(self, lock, blocking: bool):
        self.lock, self.blocking = lock, blocking

    async def do(self, method, *args, **kwargs):
        if self.blocking:
            return await asyncio.to_thread(getattr(self.lock, method), *args, **kwargs)
        return await getattr(self.lock, method)(*args, **kwargs)


def parties(topology, key: str, blocking: bool, lost: threading.Event):
    """The holder and two waiters (told by message, blocked in WAIT), each on a client of its own."""
    module = rlock if blocking else rlock.asyncio
    options = {"thread_local": False} if blocking else {}
    users = ({}, {}, {"username": topologies.BLOCKED_USER})
    clients = [topologies.user_client(topology, asyncio_client=not blocking, **user) for user in users]
    holder = Party(module.Lock(clients[0], key, on_lost=lambda _: lost.set(), **options), blocking)
    waiters = [Party(module.Lock(client, key, **options), blocking) for client in clients[1:]]
    return holder, waiters, clients


async def before(topology, key: str, blocking: bool, resource):
    """Holds and queues; returns what after() needs."""
    lost = threading.Event()
    holder, waiters, clients = parties(topology, key, blocking, lost)
    assert await holder.do("acquire", blocking=False)
    resource.enter(f"holder of {key}", holder.lock.fence)
    waiting = []
    admin = topologies.admin_for(topology, key)
    for place, waiter in enumerate(waiters, 1):
        waiting.append(asyncio.ensure_future(waiter.do("acquire", blocking_timeout=WAIT_S)))
        await topologies.eventually(lambda: topologies.queued(admin, key) == place, what=f"waiter {place} of {key} to queue")
    admin.close()
    return holder, waiters, waiting, lost, clients


async def after(key: str, state, resource) -> list:
    """Checks the outcome; returns the tokens in the order they held."""
    holder, waiters, waiting, lost, clients = state
    first = holder.lock.fence
    # Re-bound on the new primary (owned) or reported lost: one of the two, soon.
    await topologies.eventually(lambda: lost.is_set() or holder.do("owned"), what=f"the holder of {key} to settle")
    if lost.is_set():
        try:
            await holder.do("release")
            raise AssertionError("release() of a lost holding must raise")
        except LockNotOwnedError:
            pass
    else:
        assert resource.write(first), "the holder still holds: its token is still the highest"
        await holder.do("release")
    resource.leave(f"holder of {key}")
    tokens = [first]
    for _ in waiters:  # served one at a time, in whichever order they re-joined
        done, _pending = await asyncio.wait(waiting, timeout=WAIT_S, return_when=asyncio.FIRST_COMPLETED)
        assert done, f"a waiter of {key} is served"
        task = done.pop()
        assert task.result() is True
        index = waiting.index(task)
        waiting[index] = asyncio.get_running_loop().create_future()  # not waited on again
        waiter = waiters[index]
        tokens.append(waiter.lock.fence)
        resource.enter(f"waiter {index} of {key}", waiter.lock.fence)
        resource.leave(f"waiter {index} of {key}")
        await waiter.do("release")
    assert tokens == sorted(tokens) and len(set(tokens)) == len(tokens), f"tokens rise: {tokens}"
    print(f"\n  {key}: the holder {'was told it lost' if lost.is_set() else 'kept'} the lock; tokens {tokens}")
    for client in clients:
        closing = client.aclose() if hasattr(client, "aclose") else client.close()
        if asyncio.iscoroutine(closing):
            await closing
    return tokens


async def across(topology, event, keys=("{failover}:blocking", "{failover}:asyncio")) -> None:
    """Runs the scenario for the blocking client on keys[0] and the asyncio one on keys[1]
    (both served by one primary), across `event()` (run in a thread: it blocks until the
    topology agrees again). The topology must be prepared (topologies.prepare)."""
    resources = [topologies.FencedResource() for _ in keys]  # one protected resource per lock
    states = [await before(topology, *args) for args in zip(keys, (True, False), resources)]
    admin = topologies.admin_for(topology, keys[0])
    assert admin.info("clients")["blocked_clients"] == 2, "a waiter of each key blocks in WAIT"
    admin.close()
    await asyncio.to_thread(event)
    for key, state, resource in zip(keys, states, resources):
        await after(key, state, resource)
