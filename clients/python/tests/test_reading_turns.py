"""The blocking client's subscriber is read in turns (rlock/subscriber.py): by a waiting thread,
which so reads its own grant, or by the reader thread while nobody waits. A subscriber that
closes while a waiting thread reads it must send that wait again through a new one
(CONTRACT.md C9.2), as when the reader thread read it."""

from __future__ import annotations

import threading

import redis

import rlock
from rlock.subscriber import READER
from support import lock_info, subscribers, wait_until, waiters


def test_a_subscriber_that_closes_while_a_waiting_thread_reads_it_sends_the_wait_again(admin, redis_server):
    client = redis.Redis(port=redis_server.port)
    lock = rlock.Lock(client, "k", blocking_timeout=30)
    assert admin.execute_command("RLOCK.ACQUIRE", "k", "holder", "PX", 60000)
    outcome, done = [], threading.Event()

    def wait_and_hold():
        outcome.append(lock.acquire())
        outcome.append(lock_info(admin, "k")["holds"])
        done.wait(10)
        lock.release()

    waiting = threading.Thread(target=wait_and_hold)
    waiting.start()
    wait_until(lambda: waiters(admin, "k") == 1, "the waiter to queue")
    subscriber = lock._session.subscriber()
    wait_until(lambda: subscriber._asleep, "the waiting thread to sleep")
    # The reader thread hands its turn to the waiting thread asleep after its next message.
    admin.publish(subscriber.channel, "timeout lock 0 1 x nobody")
    wait_until(lambda: subscriber._turn not in (None, READER), "the waiting thread to read")
    [killed] = subscribers(admin)
    admin.client_kill_filter(_id=killed)
    wait_until(lambda: waiters(admin, "k") == 1 and subscribers(admin) - {killed}, "the wait to queue again")
    assert waiting.is_alive() and not outcome
    assert admin.execute_command("RLOCK.RELEASE", "k", "holder") == 0
    wait_until(lambda: len(outcome) == 2, "the grant")
    assert outcome == [True, 1]
    done.set()
    waiting.join(10)
    assert lock_info(admin, "k") is None
    rlock.close_idle_connections(client)  # its subscriber too: later tests count the server's
    client.close()
    wait_until(lambda: not subscribers(admin), "the subscriber to close")
