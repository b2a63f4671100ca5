#!/usr/bin/env python3
"""The server's share of an uncontended acquire+release pair, per module build.

    python3 benches/server_path.py [--pairs N] [--rounds R] [--modes M,M] MODULE.so [MODULE.so ...]

For each round and each module (interleaved, so that the machine's load falls on all alike) a
fresh redis-server on a free port in a temp dir runs N pairs from one connection, in these
modes (`--modes`, a comma list; default all):

- `self`, `other`, `plain`: `RLOCK.ACQUIRE key owner PX 30000 WAIT 1000 [NOTIFY [id]]` +
  `RLOCK.RELEASE key owner`: `self` a RESP3 connection subscribed to its own channel, `other`
  a RESP2 connection naming a second, subscribed connection, `plain` no `NOTIFY`;
- `helper`, `helper-self`: the pair as the helpers send it by default (the Python helper's, read
  with MONITOR): `RLOCK.ACQUIRE key owner PX 30000 WATCHDOG WAIT 0 NOTIFY <id> ID <request id>`
  + `RLOCK.RELEASE key owner ID <request id>`, a new request id each call; `helper` names a
  second connection (RESP2), `helper-self` the caller (RESP3);
- `peer`: what the libraries the helpers replace send (redsync, redis-py's Lock,
  redis-semaphore, rslock): `SET key token NX PX 30000` + `EVALSHA` of a compare-and-delete;
- `redisson`: Redisson 4.7's `lock()`/`unlock()` scripts (`EVALSHA`, its lock hash, the unlock
  message on `redisson_lock__channel:{key}` and its unlock latch key).

It prints `INFO commandstats` usec_per_call of the pair's two commands and their sum, median
[min .. max] over the rounds (the sum per round), and with `--callgrind` the instructions of
the pair's commands (Redis's `call()` and all below it, the module's code included: unlike the
times, a count the machine's load does not move; valgrind's callgrind), and the calls of `PUBSUB` the module made
(RedisModule_Call counts there). In `EVALSHA` the script's own calls are inside its time. Plain
sockets, no client library: the client's own cost is the same for every module and mode.
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def encode(*words):
    out = [b"*%d\r\n" % len(words)]
    for w in words:
        w = w if isinstance(w, bytes) else str(w).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(w), w))
    return b"".join(out)


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.file = self.sock.makefile("rb")

    def call(self, *words):
        self.sock.sendall(encode(*words))
        return self.read()

    def read(self):
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2]
        if kind in (b"+", b"(", b","):
            return rest
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind in (b"$", b"="):
            n = int(rest)
            return None if n < 0 else self.file.read(n + 2)[:-2]
        if kind == b"_":
            return None
        if kind in (b"*", b">", b"~"):
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        if kind == b"%":
            return [self.read() for _ in range(2 * int(rest))]
        if kind == b"#":
            return rest == b"t"
        raise RuntimeError(f"unexpected reply {line!r}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(module, workdir, grind=False):
    port = free_port()
    # callgrind counts only inside Redis's `call()`: the commands, not the sockets.
    valgrind = ["valgrind", "--tool=callgrind", "--toggle-collect=call",
                f"--callgrind-out-file={workdir}/callgrind.out"] if grind else []
    server = subprocess.Popen(
        valgrind + ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--dir", workdir, "--loadmodule", os.path.abspath(module)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + (120 if grind else 10)
    while True:
        try:
            conn = Conn(port)
            if conn.call("PING") == b"PONG":
                return server, port
        except (OSError, RuntimeError):
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError(f"redis-server with {module} did not start")
            time.sleep(0.05)


def commandstats(conn):
    text = conn.call("INFO", "commandstats").decode()
    stats = {}
    for line in text.splitlines():
        if line.startswith("cmdstat_"):
            name, fields = line[len("cmdstat_"):].split(":", 1)
            stats[name] = dict(f.split("=") for f in fields.split(","))
    return stats


MODES = ["self", "other", "plain", "helper", "helper-self", "peer", "redisson"]
OWNER = "9071330f-8ee0-40cf-ab8a-1eb98a872cc4:1"  # as long as a helper's owner id
# The compare-and-delete the peers run (redis-py's Lock, redsync and the others alike).
PEER_RELEASE = ('if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) '
                'else return 0 end')
# Redisson 4.7's RedissonLock scripts, word for word (strings of its jar).
REDISSON_LOCK = (
    "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) "
    "then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; end; return redis.call('pttl', KEYS[1]);")
REDISSON_UNLOCK = (
    "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; "
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then "
    "redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); "
    "return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); "
    "redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; ")


def notify_words(port, mode):
    """The `NOTIFY` words of an RLOCK mode, with the connection that runs the pairs (and the
    listener, kept open while they run)."""
    conn = Conn(port)
    if mode in ("self", "helper-self"):
        conn.call("HELLO", "3")
        conn.call("SUBSCRIBE", conn.call("RLOCK.CHANNEL"))
        return conn, None, ["NOTIFY"]
    if mode in ("other", "helper"):
        listener = Conn(port)
        listener_id = listener.call("CLIENT", "ID")
        listener.call("SUBSCRIBE", listener.call("RLOCK.CHANNEL"))
        return conn, listener, ["NOTIFY", listener_id]
    return conn, None, []


def pair_maker(conn, mode, notify):
    """(the commands' names in commandstats, a function of the pair's number giving its two
    commands, the replies a pair must get)."""
    if mode == "peer":
        sha = conn.call("SCRIPT", "LOAD", PEER_RELEASE)
        return ("set", "evalsha"), lambda i: (
            encode("SET", "k", f"{OWNER}{i}", "NX", "PX", 30000),
            encode("EVALSHA", sha, 1, "k", f"{OWNER}{i}")), (b"OK", 1)
    if mode == "redisson":
        lock, unlock = (conn.call("SCRIPT", "LOAD", s) for s in (REDISSON_LOCK, REDISSON_UNLOCK))
        return ("evalsha", "evalsha"), lambda i: (
            encode("EVALSHA", lock, 1, "k", 30000, OWNER),
            encode("EVALSHA", unlock, 3, "k", "redisson_lock__channel:{k}",
                   f"redisson_unlock_latch:{{k}}:{i:032x}", 0, 30000, OWNER, "PUBLISH", 13500)), (None, 1)
    names = ("rlock.acquire", "rlock.release")
    if mode.startswith("helper"):
        run_id = os.urandom(8).hex()  # a request id is answered again within the retry window
        return names, lambda i: (
            encode("RLOCK.ACQUIRE", "k", OWNER, "PX", 30000, "WATCHDOG", "WAIT", 0, *notify,
                   "ID", f"{run_id}{2 * i:017x}"),
            encode("RLOCK.RELEASE", "k", OWNER, "ID", f"{run_id}{2 * i + 1:017x}")), (int, 0)
    acquire = encode("RLOCK.ACQUIRE", "k", OWNER, "PX", 30000, *(["WAIT", 1000] + notify if notify else []))
    release = encode("RLOCK.RELEASE", "k", OWNER)
    return names, lambda i: (acquire, release), (int, 0)


def instructions(pid, workdir, dumps):
    """Under callgrind: the instructions counted in `call()` since the last zeroing, dumped to
    a new file of `workdir` (the `dumps`-th). Zeroes them again."""
    subprocess.run(["callgrind_control", "-d", str(pid)], check=True, stdout=subprocess.DEVNULL)
    path = os.path.join(workdir, f"callgrind.out.{dumps}")
    with open(path) as f:
        for line in f:
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise RuntimeError(f"no summary in {path}")


def run(port, mode, pairs, grind=None):
    conn, _listener, notify = notify_words(port, mode)
    names, pair, (first_reply, second_reply) = pair_maker(conn, mode, notify)
    commands = [pair(i) for i in range(100 + pairs)]  # built before the clock
    admin = Conn(port)
    for first, second in commands[:100]:  # warm up
        conn.sock.sendall(first), conn.read(), conn.sock.sendall(second), conn.read()
    if grind:
        instructions(*grind)  # zeroes the count: only the pairs below are counted
    admin.call("CONFIG", "RESETSTAT")
    began = time.monotonic()
    for first, second in commands[100:]:
        conn.sock.sendall(first)
        got = conn.read()
        conn.sock.sendall(second)
        ok = isinstance(got, int) if first_reply is int else got == first_reply
        if not ok or conn.read() != second_reply:
            raise RuntimeError(f"{mode} pair failed: {got!r}")
    elapsed = time.monotonic() - began
    counted = instructions(grind[0], grind[1], grind[2] + 1) / pairs if grind else float("nan")
    stats = commandstats(admin)
    if names[0] == names[1]:  # both EVALSHA: their usec_per_call is the mean of the two
        us = 2 * float(stats.get(names[0], {}).get("usec_per_call", "nan"))
        split = (us / 2, us / 2)
    else:
        split = tuple(float(stats.get(n, {}).get("usec_per_call", "nan")) for n in names)
    return {
        "first": split[0],
        "second": split[1],
        "pair": sum(split),
        "names": names,
        "pairs/s": pairs / elapsed,
        "pubsub": int(stats.get("pubsub|numsub", {}).get("calls", 0)),
        "instructions": counted,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--callgrind", action="store_true",
                        help="run redis-server under valgrind's callgrind and count the instructions "
                             "of the pairs' commands (Redis's call(), module and all): the same on a "
                             "loaded machine as on a quiet one; times are then valgrind's, not to compare")
    parser.add_argument("modules", nargs="+")
    args = parser.parse_args()
    modes = args.modes.split(",")
    if unknown := set(modes) - set(MODES):
        parser.error(f"unknown mode(s) {', '.join(sorted(unknown))}: the modes are {', '.join(MODES)}")
    results = {(m, mode): [] for m in args.modules for mode in modes}
    print(f"load average at start: {os.getloadavg()}", flush=True)
    for round_ in range(args.rounds):
        for module in args.modules:
            with tempfile.TemporaryDirectory() as workdir:
                server, port = start(module, workdir, args.callgrind)
                try:
                    for n, mode in enumerate(modes):
                        grind = (server.pid, workdir, 2 * n + 1) if args.callgrind else None  # dumps count from 1
                        results[(module, mode)].append(run(port, mode, args.pairs, grind))
                finally:
                    server.terminate()
                    server.wait()
        print(f"round {round_ + 1} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    print(f"load average at end: {os.getloadavg()}")
    counted = "| instructions/pair (callgrind) " if args.callgrind else ""
    print(f"| module | mode | commands | first µs | second µs | pair µs {counted}| pairs/s | PUBSUB calls/pair |")
    print("|---" * (9 if args.callgrind else 8) + "|")
    for (module, mode), rows in results.items():
        cell = lambda f, key: "{} [{} .. {}]".format(
            *(f.format(v) for v in (statistics.median(r[key] for r in rows),
                                    min(r[key] for r in rows), max(r[key] for r in rows))))
        pubsub = statistics.median(r["pubsub"] for r in rows) / args.pairs
        names = " + ".join(rows[0]["names"])
        print(f"| {module} | {mode} | {names} | {cell('{:.2f}', 'first')} | {cell('{:.2f}', 'second')} "
              f"| {cell('{:.2f}', 'pair')} "
              + (f"| {cell('{:,.0f}', 'instructions')} " if args.callgrind else "")
              + f"| {cell('{:,.0f}', 'pairs/s')} "
              f"| {pubsub:.2f} |")


if __name__ == "__main__":
    main()
