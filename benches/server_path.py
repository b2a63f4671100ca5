#!/usr/bin/env python3
"""The server's share of an uncontended acquire+release pair, per module build.

    python3 benches/server_path.py [--pairs N] [--rounds R] MODULE.so [MODULE.so ...]

For each round and each module (interleaved, so that the machine's load falls on all alike) a
fresh redis-server on a free port in a temp dir runs N pairs of `RLOCK.ACQUIRE key owner PX
30000 WAIT 1000 NOTIFY <id>` + `RLOCK.RELEASE key owner` from one connection, in three ways:
`self` (a RESP3 connection subscribed to its own channel, as the RESP3 helpers do), `other` (a
RESP2 connection naming a second, subscribed connection, as the RESP2 helpers do) and `plain`
(no `NOTIFY`). It prints `INFO commandstats` usec_per_call of each command, median [min .. max]
over the rounds, and the calls of `PUBSUB` the module made (RedisModule_Call counts there).
Plain sockets, no client library: the client's own cost is the same for every module.
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


def start(module, workdir):
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", workdir, "--loadmodule", os.path.abspath(module)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
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


def run(port, mode, pairs):
    conn = Conn(port)
    if mode == "self":
        conn.call("HELLO", "3")
        conn.call("SUBSCRIBE", conn.call("RLOCK.CHANNEL"))
        notify = ["NOTIFY"]
    elif mode == "other":
        listener = Conn(port)
        listener_id = listener.call("CLIENT", "ID")
        listener.call("SUBSCRIBE", listener.call("RLOCK.CHANNEL"))
        notify = ["NOTIFY", listener_id]
    else:
        notify = []
    acquire = encode("RLOCK.ACQUIRE", "k", "o", "PX", 30000, *(["WAIT", 1000] + notify if notify else []))
    release = encode("RLOCK.RELEASE", "k", "o")
    admin = Conn(port)
    for _ in range(100):  # warm up
        conn.sock.sendall(acquire), conn.read(), conn.sock.sendall(release), conn.read()
    admin.call("CONFIG", "RESETSTAT")
    began = time.monotonic()
    for _ in range(pairs):
        conn.sock.sendall(acquire)
        token = conn.read()
        conn.sock.sendall(release)
        if not isinstance(token, int) or conn.read() != 0:
            raise RuntimeError(f"pair failed: {token!r}")
    elapsed = time.monotonic() - began
    stats = commandstats(admin)
    us = lambda name: float(stats.get(name, {}).get("usec_per_call", "nan"))
    calls = lambda name: int(stats.get(name, {}).get("calls", 0))
    return {
        "acquire": us("rlock.acquire"),
        "release": us("rlock.release"),
        "pairs/s": pairs / elapsed,
        "pubsub": calls("pubsub|numsub"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--modes", default="self,other,plain")
    parser.add_argument("modules", nargs="+")
    args = parser.parse_args()
    modes = args.modes.split(",")
    results = {(m, mode): [] for m in args.modules for mode in modes}
    print(f"load average at start: {os.getloadavg()}", flush=True)
    for round_ in range(args.rounds):
        for module in args.modules:
            with tempfile.TemporaryDirectory() as workdir:
                server, port = start(module, workdir)
                try:
                    for mode in modes:
                        results[(module, mode)].append(run(port, mode, args.pairs))
                finally:
                    server.terminate()
                    server.wait()
        print(f"round {round_ + 1} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    print(f"load average at end: {os.getloadavg()}")
    print("| module | NOTIFY | ACQUIRE µs | RELEASE µs | pairs/s | PUBSUB calls/pair |")
    print("|---|---|---|---|---|---|")
    for (module, mode), rows in results.items():
        cell = lambda f, key: "{} [{} .. {}]".format(
            *(f.format(v) for v in (statistics.median(r[key] for r in rows),
                                    min(r[key] for r in rows), max(r[key] for r in rows))))
        pubsub = statistics.median(r["pubsub"] for r in rows) / args.pairs
        print(f"| {module} | {mode} | {cell('{:.2f}', 'acquire')} | {cell('{:.2f}', 'release')} "
              f"| {cell('{:,.0f}', 'pairs/s')} | {pubsub:.2f} |")


if __name__ == "__main__":
    main()
