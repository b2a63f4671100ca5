"""The Python runner's table of clients/spec ops: each op an `async def` that calls rlock's
public API through `maybe` (which awaits rlock.asyncio's coroutines and passes the blocking
results through), so that one body serves both clients; and the error kinds.
"""

from __future__ import annotations

import inspect
import threading

from redis.exceptions import LockError, LockNotOwnedError

import rlock

NOT_ACQUIRED = object()  # an acquire that returned False, a campaign that returned None


async def maybe(value):
    return await value if inspect.isawaitable(value) else value


def kind_of(error: Exception):
    """The spec's error kind of an exception rlock raised, or None (not a kind: the step fails)."""
    if isinstance(error, rlock.DeadlockError):
        return "Deadlock"
    if isinstance(error, rlock.WrongTypeError):
        return "WrongType"
    if type(error).__name__ == "NotConfirmedError":
        return "NotConfirmed"
    if isinstance(error, LockNotOwnedError):
        return "NotHeld"
    message = str(error)
    if isinstance(error, LockError):
        if "not owned" in message or "more than held" in message:
            return "NotHeld"
        if "upgrade" in message:
            return "UpgradeRefused"
    return None


def handle_key(step) -> tuple:
    """Which of an actor's handles a step uses: the two sides of a read-write lock share one."""
    kind = step["type"]
    if kind == "multilock":
        return ("multilock", tuple(step["keys"]))
    return ("rwlock" if kind in ("read", "write") else kind, step["key"])


def handle(actor, step, kind=None):
    """The actor's object for the step's type and key, made at first use."""
    step = dict(step, type=kind) if kind else step
    key = handle_key(step)
    if key not in actor.handles:
        lost = actor.lost[key] = threading.Event()
        options = {"on_lost": lambda _: lost.set()}
        if "lease_ms" in step:
            options["timeout"] = step["lease_ms"] / 1000
        if "confirm" in step:
            confirm = step["confirm"]
            options["confirm"] = rlock.Confirm(replicas=confirm["replicas"], timeout=confirm["timeout_ms"] / 1000)
        module, kind = actor.module, key[0]
        if kind == "lock":
            made = module.Lock(actor.client, step["key"], **options)
        elif kind == "rwlock":
            made = module.ReadWriteLock(actor.client, step["key"], **options)
            made = {"read": made.read_lock(), "write": made.write_lock()}
        elif kind == "semaphore":
            made = module.Semaphore(actor.client, step["key"], **options)
        elif kind == "multilock":
            made = module.MultiLock(actor.client, step["keys"], **options)
        elif kind == "latch":
            made = module.CountDownLatch(actor.client, step["key"])
        else:
            made = module.Election(actor.client, step["key"], step.get("candidate", actor.owner), on_lost=options["on_lost"])
        actor.handles[key] = made
    made = actor.handles[key]
    return made[step["type"]] if isinstance(made, dict) else made


def waiting(step) -> dict:
    if "wait_ms" not in step:
        return {"blocking": False}
    return {"blocking": True, "blocking_timeout": step["wait_ms"] / 1000}


async def acquire(actor, step):
    lock = handle(actor, step)
    if step["type"] == "lock":
        granted = await maybe(lock.acquire(token=actor.owner, **waiting(step)))
    elif step["type"] == "semaphore":
        granted = await maybe(lock.acquire(step.get("permits", 1), **waiting(step)))
    else:
        granted = await maybe(lock.acquire(**waiting(step)))
    return lock.fence if granted else NOT_ACQUIRED


async def release(actor, step):
    lock = handle(actor, step)
    if step["type"] == "semaphore":
        return await maybe(lock.release(step.get("permits", 1)))
    return await maybe(lock.release())


async def guard(actor, step):
    reply = await maybe(handle(actor, step, "lock").guard(*step["command"]))
    return reply.decode() if isinstance(reply, bytes) else reply


async def acquire_all(actor, step):
    multi = handle(actor, step, "multilock")
    granted = await maybe(multi.acquire(token=actor.owner, **waiting(step)))
    return list(multi.tokens) if granted else NOT_ACQUIRED


async def release_all(actor, step):
    return await maybe(handle(actor, step, "multilock").release())


async def campaign(actor, step):
    timeout = step["wait_ms"] / 1000 if "wait_ms" in step else 0
    term = await maybe(handle(actor, step, "election").campaign(timeout=timeout))
    return NOT_ACQUIRED if term is None else term


async def leader(actor, step):
    found = await maybe(handle(actor, step, "election").leader())
    return None if found is None else {"owner": found.owner, "term": found.term}


async def resign(actor, step):
    return await maybe(handle(actor, step, "election").resign())


def call(kind, method, *arguments, result=lambda value: value):
    """An op that calls one method of the step's `kind` object with the step's `arguments`."""

    async def op(actor, step):
        made = handle(actor, step, kind)
        return result(await maybe(getattr(made, method)(*(step[name] for name in arguments))))

    return op


async def await_latch(actor, step):
    timeout = step["wait_ms"] / 1000 if "wait_ms" in step else None
    return await maybe(handle(actor, step, "latch").wait(timeout=timeout))


ACTOR_OPS = {
    "acquire": acquire, "release": release, "guard": guard,
    "acquire_all": acquire_all, "release_all": release_all,
    "campaign": campaign, "leader": leader, "resign": resign,
    "set_permits": call("semaphore", "try_set_permits", "permits"),
    "add_permits": call("semaphore", "add_permits", "permits"),
    "available_permits": call("semaphore", "available_permits"),
    "set_count": call("latch", "try_set_count", "count"),
    "count_down": call("latch", "count_down", result=lambda _: None),
    "get_count": call("latch", "get_count"),
    "await_latch": await_latch,
}


def waiters(admin, step) -> int:
    """The waiters await_waiters counts (clients/spec/README.md)."""
    kind = step["type"]
    if kind == "server":
        return int(admin.info("rlock")["rlock_waiters"])
    info = admin.execute_command({"lock": "RLOCK.INFO", "rwlock": "RWLOCK.INFO", "semaphore": "RSEM.INFO"}[kind], step["key"])
    if info is None:
        return 0
    if kind == "lock":
        return info["waiters"]
    if kind == "rwlock":
        return info["waiting_readers"] + info["waiting_writers"]
    return len(info["waiters"])
