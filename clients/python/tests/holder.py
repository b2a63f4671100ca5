"""Another process holding something: `python holder.py PORT NAME [lock|read|write|permits]`,
or leading an election: `python holder.py PORT NAME election CANDIDATE [WATCHDOG_LEASE_S]`.

Takes a watchdog holding (timeout=None) of a plain lock (the default), a read-write lock's read
or write side, or one permit of a semaphore (or campaigns, and leads), prints "held <fence>"
(the term), then releases it (resigns) when it reads "release" on stdin and prints "released".
A leader reads "guard KEY VALUE" too: a guarded SET, answered "ok", or "refused" with who
refused it (the server: NOTOWNER; the client: it knew it had lost). Tests kill it with SIGKILL,
and stop it with SIGSTOP.
"""

import sys

import redis
import rlock

port, name = int(sys.argv[1]), sys.argv[2]
kind = sys.argv[3] if len(sys.argv) > 3 else "lock"
client = redis.Redis(port=port)
if kind == "election":
    lease = float(sys.argv[5]) if len(sys.argv) > 5 else None
    lock = rlock.Election(client, name, sys.argv[4], watchdog_lease=lease)
    fence = lock.campaign(timeout=1)
    assert fence is not None, "it was not free"
    lock.release = lock.resign
else:
    if kind == "lock":
        lock = client.lock(name, lock_class=rlock.Lock)
    elif kind == "read":
        lock = rlock.ReadWriteLock(client, name).read_lock()
    elif kind == "write":
        lock = rlock.ReadWriteLock(client, name).write_lock()
    else:
        lock = rlock.Semaphore(client, name)
    assert lock.acquire(blocking=False), "it was not free"
    fence = lock.fence
print("held", fence, flush=True)
for line in sys.stdin:
    words = line.split()
    if words == ["release"]:
        lock.release()
        print("released", flush=True)
    elif words[:1] == ["guard"]:
        try:
            lock.guard("SET", *words[1:])
            print("ok", flush=True)
        except redis.exceptions.LockNotOwnedError as refused:
            print("refused", "server" if refused.__cause__ is not None else "client", flush=True)
