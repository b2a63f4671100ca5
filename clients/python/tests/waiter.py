"""A waiter in a process of its own:
`python waiter.py PORT NAME blocking|asyncio LEASE_S [watchdog|lease [CONFIRM]]`.

Waits (up to 30 s, by message) for a holding of a plain lock whose lease is LEASE_S (a watchdog
holding, the default, or a fixed lease; CONFIRM is the lock's confirm= setting, default auto),
with the blocking or the asyncio client, then prints "acquired True <fence>" or
"acquired False", then "owned True|False" (what the client believes after), and exits. Tests
stop it with SIGSTOP while it waits, so that its grant's message is read late.
"""

import asyncio
import sys

import redis
import redis.asyncio
import rlock
import rlock.asyncio

WAIT_S = 30

port, name, kind, lease = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
holding = sys.argv[5] if len(sys.argv) > 5 else "watchdog"
confirm = sys.argv[6] if len(sys.argv) > 6 else "auto"
options = {"watchdog_lease" if holding == "watchdog" else "timeout": lease, "confirm": confirm}


def report(acquired: bool, fence, owned: bool) -> None:
    print("acquired", acquired, *([fence] if acquired else []), flush=True)
    print("owned", owned, flush=True)


if kind == "blocking":
    lock = rlock.Lock(redis.Redis(port=port), name, **options)
    acquired = lock.acquire(blocking_timeout=WAIT_S)
    report(acquired, lock.fence, lock.owned())
else:

    async def wait() -> None:
        lock = rlock.asyncio.Lock(redis.asyncio.Redis(port=port), name, **options)
        acquired = await lock.acquire(blocking_timeout=WAIT_S)
        report(acquired, lock.fence, await lock.owned())

    asyncio.run(wait())
