"""A grant told by message whose confirming RENEW finds it gone is not held (CONTRACT.md C4.2,
issue 47's finding 9). The waiter, in a process of its own, is stopped (SIGSTOP) while it
waits; the holder releases, so the server grants the lock to the waiter by message, under the
waiter's short lease, which nobody renews until the waiter confirms it; the lease ends, another
process takes the lock; woken (SIGCONT), the waiter reads its grant late and confirms it with
RENEW (with WATCHDOG for a watchdog holding), which answers 0. Its acquire must not answer True
(it did, beside the other holder: two holders; for a fixed lease the RENEW was not even sent
when no replica was counted or confirmation was off, finding 10): it asks again for what is
left of its wait, and gets the lock once the other releases it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis
import rlock

from support import holding_process, lock_info, wait_until, waiters

WAITER = Path(__file__).with_name("waiter.py")

#: The waiter's lease (watchdog or fixed): the grant ends this long after it was made, unconfirmed.
GRANT_LEASE_S = 0.5


def process_state(process: subprocess.Popen) -> str:
    """The process's state letter from /proc (T: stopped)."""
    stat = Path(f"/proc/{process.pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0]


@contextlib.contextmanager
def stopped(process: subprocess.Popen):
    os.kill(process.pid, signal.SIGSTOP)
    try:
        wait_until(lambda: process_state(process) == "T", "the waiter to stop")
        yield
    finally:
        os.kill(process.pid, signal.SIGCONT)


@pytest.mark.parametrize("kind", ["blocking", "asyncio"])
@pytest.mark.parametrize(
    "holding",
    [
        ["watchdog"],
        # A fixed lease, no replica to wait for: the RENEW was skipped as if answered 1 (issue
        # 47's finding 10, found by the Cluster's partition-long run): acquired True, two holders.
        ["lease", "auto"],
        ["lease", "off"],
    ],
    ids="-".join,
)
def test_a_grant_whose_confirming_renew_answers_0_is_not_held(redis_server, admin, kind, holding):
    port = redis_server.port
    holder = rlock.Lock(redis.Redis(port=port), "k")
    assert holder.acquire(blocking=False)
    with subprocess.Popen(
        [sys.executable, str(WAITER), str(port), "k", kind, str(GRANT_LEASE_S), *holding],
        stdout=subprocess.PIPE, text=True,
    ) as waiter, contextlib.ExitStack() as others:
        try:
            wait_until(lambda: waiters(admin, "k") == 1, "the waiter to queue", timeout=30)
            with stopped(waiter):
                holder.release()
                granted = lock_info(admin, "k")
                assert granted is not None and granted["owner"] != holder._owner().decode(), "granted to the waiter"
                wait_until(lambda: lock_info(admin, "k") is None, "the unconfirmed grant's lease to end", timeout=10)
                other = others.enter_context(holding_process(port, "k"))
            # Woken, the waiter reads its grant and confirms it: RENEW answers 0. Not held, it
            # asks again (its 30 s wait goes on), and queues behind the other holder.
            try:
                wait_until(lambda: waiters(admin, "k") == 1, "the waiter to queue again", timeout=10)
            except AssertionError:
                said = waiter.stdout.readline().strip()
                raise AssertionError(f"the waiter did not ask again; it said {said!r} beside the other holder") from None
            assert lock_info(admin, "k")["token"] == other.fence, "the other holding is left alone"
            other.stdin.write("release\n")
            other.stdin.flush()
            assert other.stdout.readline().split() == ["released"]
            acquired, held, fence = waiter.stdout.readline().split()
            assert (acquired, held) == ("acquired", "True")
            assert int(fence) > other.fence
            assert waiter.stdout.readline().split() == ["owned", "True"]
            assert waiter.wait(timeout=30) == 0
        finally:
            waiter.kill()
