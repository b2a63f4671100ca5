"""Another process holding something: `python holder.py PORT NAME [lock|read|write|permits]`.

Takes a watchdog holding (timeout=None) of a plain lock (the default), a read-write lock's read
or write side, or one permit of a semaphore, prints "held <fence>", then releases it when it
reads "release" on stdin and prints "released". Tests kill it with SIGKILL, too.
"""

import sys

import redis
import rlock

port, name = int(sys.argv[1]), sys.argv[2]
kind = sys.argv[3] if len(sys.argv) > 3 else "lock"
client = redis.Redis(port=port)
if kind == "lock":
    lock = client.lock(name, lock_class=rlock.Lock)
elif kind == "read":
    lock = rlock.ReadWriteLock(client, name).read_lock()
elif kind == "write":
    lock = rlock.ReadWriteLock(client, name).write_lock()
else:
    lock = rlock.Semaphore(client, name)
assert lock.acquire(blocking=False), "it was not free"
print("held", lock.fence, flush=True)
for line in sys.stdin:
    if line.strip() == "release":
        lock.release()
        print("released", flush=True)
