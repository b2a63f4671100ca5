"""Another process holding a lock: `python holder.py PORT NAME`.

Takes a watchdog lock (rlock.Lock, timeout=None), prints "held <fence>", then releases it when
it reads "release" on stdin and prints "released". Tests kill it with SIGKILL, too.
"""

import sys

import redis
import rlock

port, name = int(sys.argv[1]), sys.argv[2]
lock = redis.Redis(port=port).lock(name, lock_class=rlock.Lock)
assert lock.acquire(blocking=False), "the lock was not free"
print("held", lock.fence, flush=True)
for line in sys.stdin:
    if line.strip() == "release":
        lock.release()
        print("released", flush=True)
