"""The Python worker: the same loop as the Go worker (worker_go.go), through the Python
helper's public API (rlock.Lock on a Sentinel master_for() client), with the same flags and
the same history lines (time: time.monotonic_ns(), CLOCK_MONOTONIC like the Go worker's)."""

import argparse
import json
import logging
import os
import random
import sys
import time

import redis
import redis.cluster
import redis.exceptions
import redis.sentinel
import rlock

MASTER_NAME = "rlock"

# The resource's own token check (the same script as the Go worker's fencedWrite).
FENCED_WRITE = """local max = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[1]) < max then return 0 end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[1], ARGV[1])
return 1"""


def parse_args(argv):
    p = argparse.ArgumentParser()
    p.add_argument("-process", type=int, required=True)
    p.add_argument("-out", required=True)
    servers = p.add_mutually_exclusive_group(required=True)
    servers.add_argument("-sentinels")
    servers.add_argument("-cluster", help="host:port,... of Redis Cluster nodes (instead of -sentinels)")
    p.add_argument("-resource", required=True)
    p.add_argument("-key", default="jepsen")
    p.add_argument("-lock", default="rlock", choices=["rlock"])
    p.add_argument("-confirm", default="auto")
    p.add_argument("-lease", default="2s")
    p.add_argument("-hold", default="300ms")
    p.add_argument("-duration", default="20s")
    return p.parse_args(argv)


def seconds(text):
    """Go's duration syntax, as the test passes it: 2s, 300ms, 1.5s."""
    for suffix, scale in (("ms", 0.001), ("s", 1.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    raise ValueError(f"not a duration: {text!r}")


def addresses(text):
    return [(h.rsplit(":", 1)[0], int(h.rsplit(":", 1)[1])) for h in text.split(",")]


def lock_client(args):
    """The client a service would pass the helper: a Sentinel master_for() client, or a
    RedisCluster."""
    if args.cluster:
        nodes = [redis.cluster.ClusterNode(host, port) for host, port in addresses(args.cluster)]
        return redis.cluster.RedisCluster(startup_nodes=nodes, socket_timeout=1.0, socket_connect_timeout=1.0)
    sentinel = redis.sentinel.Sentinel(addresses(args.sentinels), socket_timeout=1.0, socket_connect_timeout=1.0)
    return sentinel.master_for(MASTER_NAME, socket_timeout=1.0, socket_connect_timeout=1.0)


def confirm_setting(text):
    if text == "auto":
        return "auto"
    if text == "off":
        return False
    return rlock.Confirm(replicas=int(text), timeout=1.0)


class Recorder:
    def __init__(self, path, process):
        self.fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
        self.process = process

    def record(self, **event):
        event["process"] = self.process
        event.setdefault("time", time.monotonic_ns())
        os.write(self.fd, (json.dumps(event) + "\n").encode())


def main(argv):
    args = parse_args(argv)
    # The helper's warnings (an undo that failed, a confirmation that failed) into the worker's log.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    lease, hold = seconds(args.lease), seconds(args.hold)
    rec = Recorder(args.out, args.process)
    primary = lock_client(args)
    host, port = args.resource.rsplit(":", 1)
    resource = redis.Redis(host=host, port=int(port), socket_timeout=1.0, socket_connect_timeout=1.0)
    fenced = resource.register_script(FENCED_WRITE)

    lock = rlock.Lock(primary, args.key, timeout=lease, blocking_timeout=lease,
                      confirm=confirm_setting(args.confirm),
                      on_lost=lambda l: rec.record(session=0, type="note", f="lost"))
    end = time.monotonic() + seconds(args.duration)
    session = 0
    while time.monotonic() < end:
        session += 1
        rec.record(session=session, type="invoke", f="acquire", lease_ms=int(lease * 1000))
        try:
            granted = lock.acquire()
        except rlock.NotConfirmedError as e:
            rec.record(session=session, type="fail", f="acquire", error=f"not granted: {e}")
            # What the primary holds right after the helper gave the acquisition back: a note
            # for whoever reads the history (the checks ignore notes).
            try:
                state = primary.execute_command("RLOCK.INFO", args.key)
                rec.record(session=session, type="note", f="info-after-undo", error=repr(state))
            except Exception as info_error:
                rec.record(session=session, type="note", f="info-after-undo", error=repr(info_error))
            continue
        except Exception as e:
            # NOREPLICAS (min-replicas-to-write) is refused before it runs: nothing taken.
            # Anything else (a timeout, a broken connection): the outcome is unknown.
            outcome = "fail" if "NOREPLICAS" in f"{e} {e!r}" else "info"
            rec.record(session=session, type=outcome, f="acquire", error=f"{e!r}: {e}")
            time.sleep(random.random() * 0.1)
            continue
        if not granted:
            rec.record(session=session, type="fail", f="acquire", error="not granted")
            continue
        token = lock.fence
        rec.record(session=session, type="ok", f="acquire", token=token)

        time.sleep(random.random() * hold)
        for target in ("fenced", "plain"):
            rec.record(session=session, type="invoke", f="write", target=target, token=token)
            try:
                if target == "fenced":
                    accepted = fenced(keys=[target, target + ":max-token"], args=[token]) == 1
                else:
                    accepted = bool(resource.set(target, token))
                rec.record(session=session, type="ok" if accepted else "fail", f="write", target=target)
            except Exception as e:
                rec.record(session=session, type="info", f="write", target=target, error=repr(e))
        for target in ("fenced", "plain"):
            rec.record(session=session, type="invoke", f="read", target=target)
            try:
                value = resource.get(target)
                rec.record(session=session, type="ok", f="read", target=target, value=int(value) if value else 0)
            except Exception as e:
                rec.record(session=session, type="info", f="read", target=target, error=repr(e))

        rec.record(session=session, type="invoke", f="release")
        try:
            lock.release()
            rec.record(session=session, type="ok", f="release")
        except redis.exceptions.LockNotOwnedError as e:
            rec.record(session=session, type="fail", f="release", error=f"not held: {e}")
        except Exception as e:
            rec.record(session=session, type="info", f="release", error=repr(e))


if __name__ == "__main__":
    main(sys.argv[1:])
