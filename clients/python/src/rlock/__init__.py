"""rlock: Redis locks on the rlock module's commands, for redis-py.

    import redis, rlock
    r = redis.Redis()
    with r.lock("order:42", lock_class=rlock.Lock) as lock:   # RLOCK: reentrant, fair, fenced
        ...  # lock.fence is this holding's fencing token

    rw = rlock.ReadWriteLock(r, "catalog")                     # RWLOCK
    with rw.read_lock(): ...
    sem = rlock.Semaphore(r, "gpus"); sem.try_set_permits(4)   # RSEM
    with sem: ...
    latch = rlock.CountDownLatch(r, "batch"); latch.try_set_count(3)   # RLATCH
    latch.wait(timeout=60)
    election = rlock.Election(r, "scheduler", "10.0.0.7:8080")    # RLOCK.LEADER, keyspace events
    term = election.campaign()                                  # election.observe(), resign()

rlock.asyncio has the same names for redis.asyncio.
"""

from ._base import DeadlockError, WrongTypeError
from ._confirm import Confirm, NotConfirmedError
from ._connections import CrossSlotError
from .election import Election, Leader, NoKeyspaceEvents, Observer
from .latch import CountDownLatch
from .lock import Lock, close_idle_connections, configure
from .multilock import MultiLock
from .rwlock import ReadWriteLock
from .semaphore import Semaphore

__all__ = [
    "Confirm", "CountDownLatch", "CrossSlotError", "DeadlockError", "Election", "Leader", "Lock", "MultiLock", "NoKeyspaceEvents",
    "NotConfirmedError", "Observer", "ReadWriteLock", "Semaphore", "WrongTypeError", "close_idle_connections",
    "configure",
]
__version__ = "0.1.0"
