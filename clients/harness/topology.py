#!/usr/bin/env python3
"""Production topologies of real servers on loopback, for every helper's tests: a standalone
server, a primary with a replica, the same under three sentinels, and a Cluster of three
primaries with a replica each. It starts them, reports their addresses, fails over, kills,
pauses and tears down.

Python tests import it (`Topology.start(kind, module=..., workdir=...)`); any other language
runs it as a child process, `python3 topology.py KIND [--module PATH] [--dir DIR]`, reads the
topology from its first line of JSON and sends one JSON command per line (see `serve`). EOF on
stdin tears everything down, so a test process that dies leaves no server behind.

Standard library only: it runs under the system python3 of any helper's test script.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from process import MODULE, PortTaken, Process, TopologyError, info, wait_for
from resp import RespError, free_port

MASTER_NAME = "rlock"
KINDS = ("standalone", "replicated", "sentinel", "cluster")
# Short enough that a killed primary is replaced within a few seconds, long enough that a
# loaded 2-core machine does not fail over by itself.
SENTINEL_DOWN_AFTER_MS = 1000
CLUSTER_NODE_TIMEOUT_MS = 1500
# Starts on a new free port when another process took the last one first (suites run side by side).
START_ATTEMPTS = 5


class Topology:
    def __init__(self, kind: str, workdir: Path, owns_workdir: bool, module: Path = MODULE):
        if kind not in KINDS:
            raise TopologyError(f"unknown topology {kind!r}: one of {', '.join(KINDS)}")
        if not module.is_file():
            raise TopologyError(f"{module} is missing: build it with `make build` (or set RLOCK_MODULE)")
        self.kind = kind
        self.module = module
        self.workdir = workdir
        self.owns_workdir = owns_workdir
        self.nodes: list[Process] = []
        self.sentinels: list[Process] = []
        atexit.register(self.stop)

    @classmethod
    def start(cls, kind: str, module=None, workdir=None) -> "Topology":
        module = MODULE if module is None else Path(module).resolve()
        owns = workdir is None
        directory = Path(workdir or tempfile.mkdtemp(prefix=f"rlock-{kind}-"))
        topology = cls(kind, directory, owns, module)
        try:
            getattr(topology, f"_start_{kind}")()
        except BaseException:
            sys.stderr.write(topology.logs())
            topology.stop()
            raise
        return topology

    # --- starting ---------------------------------------------------------------------------

    @staticmethod
    def _started(start) -> Process:
        """`start(port)` on a free port, ready; on another one when a process running beside
        took the port between `free_port` and the bind."""
        for attempt in range(1, START_ATTEMPTS + 1):
            process = start(free_port())
            try:
                process.wait_ready()
                return process
            except BaseException as error:
                process.kill()  # not yet in the topology, so `stop` would not
                if not isinstance(error, PortTaken) or attempt == START_ATTEMPTS:
                    raise

    def _node(self, *args: str) -> Process:
        node = self._started(lambda port: Process(self.workdir / f"node-{port}", port, list(args),
                                                  module=self.module))
        self.nodes.append(node)
        return node

    def _start_standalone(self):
        self._node()

    def _start_replicated(self):
        primary = self._node()
        self._node("--replicaof", "127.0.0.1", str(primary.port))
        self._await_replicas_in_sync(primary, 1)

    def _start_sentinel(self):
        self._start_replicated()
        primary = self.nodes[0]
        conf = [
            f"sentinel monitor {MASTER_NAME} 127.0.0.1 {primary.port} 2",
            f"sentinel down-after-milliseconds {MASTER_NAME} {SENTINEL_DOWN_AFTER_MS}",
            f"sentinel failover-timeout {MASTER_NAME} 3000",
            f"sentinel parallel-syncs {MASTER_NAME} 1",
        ]
        for _ in range(3):
            self.sentinels.append(self._started(
                lambda port: Process(self.workdir / f"sentinel-{port}", port, conf, sentinel=True)))
        self._await_sentinels_agree(primary.port, replicas=1)

    def _start_cluster(self):
        nodes = [self._node("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                            "--cluster-node-timeout", str(CLUSTER_NODE_TIMEOUT_MS))
                 for _ in range(6)]
        create = subprocess.run(
            ["redis-cli", "--cluster", "create", *(f"127.0.0.1:{n.port}" for n in nodes),
             "--cluster-replicas", "1", "--cluster-yes"],
            capture_output=True, text=True, timeout=60)
        if create.returncode != 0:
            raise TopologyError(f"redis-cli --cluster create failed:\n{create.stdout}\n{create.stderr}")
        self._await_cluster_agrees()

    # --- waiting for agreement --------------------------------------------------------------

    def _await_replicas_in_sync(self, primary: Process, count: int):
        def synced():
            replication = info(primary, "replication")
            if int(replication.get("connected_slaves", 0)) < count:
                return False
            offset = replication["master_repl_offset"]
            lines = [v for k, v in replication.items() if k.startswith("slave") and k[5:].isdigit()]
            return sum(1 for v in lines if "state=online" in v and f"offset={offset}" in v) >= count
        wait_for(f"{count} replica(s) of port {primary.port} in sync", synced, logs=self.logs)

    def _await_sentinels_agree(self, primary_port: int, replicas: int):
        def agree():
            for sentinel in self.sentinels:
                address = sentinel.call("SENTINEL", "get-master-addr-by-name", MASTER_NAME)
                if not address or int(address[1]) != primary_port:
                    return False
                known = sentinel.call("SENTINEL", "replicas", MASTER_NAME)
                up = [r for r in known if "s_down" not in dict(zip(r[::2], r[1::2]))["flags"]
                      and "disconnected" not in dict(zip(r[::2], r[1::2]))["flags"]]
                if len(up) < replicas or len(sentinel.call("SENTINEL", "sentinels", MASTER_NAME)) < 2:
                    return False
            return True
        wait_for(f"the sentinels to agree on primary {primary_port}", agree, logs=self.logs)

    def _live_nodes(self) -> list[Process]:
        return [n for n in self.nodes if n.alive() and not n.paused]

    def _await_cluster_agrees(self):
        """Every live node says the cluster is ok and reports the same slot owners, and every
        primary's replica (if alive) is in sync."""
        live = {n.port for n in self._live_nodes()}

        def agree():
            views = []
            for node in self._live_nodes():
                if "cluster_state:ok" not in node.call("CLUSTER", "INFO"):
                    return False
                views.append(sorted((s[0], s[1], s[2][1]) for s in node.call("CLUSTER", "SLOTS")))
                # A node still in handshake with another fails a manual failover by timeout.
                links = [line.split() for line in node.call("CLUSTER", "NODES").splitlines()]
                if any(int(fields[1].split(":")[1].split("@")[0]) in live and fields[7] != "connected"
                       for fields in links):
                    return False
            return views and all(v == views[0] for v in views) and len(views[0]) == 3
        wait_for("the cluster nodes to agree", agree, logs=self.logs)
        for node in self._live_nodes():
            if info(node, "replication")["role"] == "master":
                live_replicas = [r for r in self._live_nodes()
                                 if info(r, "replication").get("master_port") == str(node.port)]
                self._await_replicas_in_sync(node, len(live_replicas))

    # --- what the tests ask for -------------------------------------------------------------

    def describe(self) -> dict:
        view = {"kind": self.kind, "master_name": MASTER_NAME if self.sentinels else None,
                "sentinels": [s.address() for s in self.sentinels if s.alive()], "nodes": []}
        for node in self.nodes:
            entry = {**node.address(), "alive": node.alive(), "paused": node.paused}
            if node.alive() and not node.paused:
                replication = info(node, "replication")
                entry["role"] = "primary" if replication["role"] == "master" else "replica"
                if self.kind == "cluster":
                    entry.update(self._cluster_entry(node))
            view["nodes"].append(entry)
        if self.kind != "cluster":
            primaries = [n for n in view["nodes"] if n.get("role") == "primary"]
            view["primary"] = {k: primaries[0][k] for k in ("host", "port")} if primaries else None
            view["replicas"] = [{k: n[k] for k in ("host", "port")} for n in view["nodes"]
                                if n.get("role") == "replica"]
        return view

    def _cluster_entry(self, node: Process) -> dict:
        myself = next(line.split() for line in node.call("CLUSTER", "NODES").splitlines()
                      if "myself" in line.split()[2])
        slots = [[int(a), int(b or a)] for a, _, b in
                 (s.partition("-") for s in myself[8:] if not s.startswith("["))]
        return {"id": myself[0], "primary_id": None if myself[3] == "-" else myself[3], "slots": slots}

    def node(self, port: int) -> Process:
        for process in self.nodes + self.sentinels:
            if process.port == port:
                return process
        raise TopologyError(f"no server of this topology listens on port {port}")

    def primary_for(self, key: str | None) -> Process:
        """The primary of a standalone or sentinel topology, or of `key`'s slot in a cluster."""
        if self.kind != "cluster":
            return next(n for n in self._live_nodes() if info(n, "replication")["role"] == "master")
        slot = self._live_nodes()[0].call("CLUSTER", "KEYSLOT", key or "")
        for entry in self._live_nodes()[0].call("CLUSTER", "SLOTS"):
            if entry[0] <= slot <= entry[1]:
                return self.node(entry[2][1])
        raise TopologyError(f"no primary owns slot {slot}")

    def replica_of(self, primary: Process) -> Process:
        for node in self._live_nodes():
            if info(node, "replication").get("master_port") == str(primary.port):
                return node
        raise TopologyError(f"port {primary.port} has no live replica")

    def failover(self, key: str | None = None) -> dict:
        """A graceful failover: SENTINEL FAILOVER, or CLUSTER FAILOVER on the replica of the
        primary of `key`'s slot. Returns once everyone agrees on the new primary."""
        old = self.primary_for(key)
        if self.kind == "sentinel":
            replica = self.replica_of(old)
            self.sentinels[0].call("SENTINEL", "FAILOVER", MASTER_NAME)
            self._await_promoted(replica, old)
        elif self.kind == "cluster":
            replica = self.replica_of(old)
            # A manual failover gives up after 5 s when the machine is too loaded for the
            # handshake; asking again is what an operator would do.
            for attempt in range(3):
                replica.call("CLUSTER", "FAILOVER")
                try:
                    wait_for(f"port {replica.port} to take over",
                             lambda: info(replica, "replication")["role"] == "master", deadline_s=6)
                    break
                except TopologyError:
                    if attempt == 2:
                        raise TopologyError(f"CLUSTER FAILOVER on port {replica.port} did not happen\n{self.logs()}")
            self._await_cluster_agrees()
        else:
            raise TopologyError(f"a {self.kind} topology has no failover: use sentinel or cluster")
        return self.describe()

    def _await_promoted(self, replica: Process, old: Process):
        wait_for(f"port {replica.port} to be promoted", lambda: info(replica, "replication")["role"] == "master",
                 logs=self.logs)
        expected = 1 if old.alive() and not old.paused else 0
        if expected:
            # The sentinels demote the old primary only after it has reported itself primary
            # for 8 s (hard-wired in Sentinel); do at once what they would then send.
            if info(old, "replication")["role"] == "master":
                old.call("REPLICAOF", "127.0.0.1", replica.port)
                old.call("CLIENT", "KILL", "TYPE", "normal")
                old.call("CLIENT", "KILL", "TYPE", "pubsub")
            wait_for(f"port {old.port} to follow {replica.port}",
                     lambda: info(old, "replication").get("master_port") == str(replica.port)
                     and info(old, "replication").get("master_link_status") == "up", logs=self.logs)
            self._await_replicas_in_sync(replica, 1)
        self._await_sentinels_agree(replica.port, replicas=expected)

    def kill(self, port: int) -> dict:
        self.node(port).kill()
        return self.describe()

    def await_promotion(self, key: str | None = None) -> dict:
        """After the primary was killed: until a replica took over and everyone agrees."""
        if self.kind == "sentinel":
            killed = next(n for n in self.nodes if not n.alive())
            survivor = next(n for n in self._live_nodes())
            self._await_promoted(survivor, killed)
        elif self.kind == "cluster":
            dead = {n.port for n in self.nodes if not n.alive()}
            wait_for("a replica to take over the dead primary's slots",
                     lambda: not any(s[2][1] in dead for s in self._live_nodes()[0].call("CLUSTER", "SLOTS")),
                     logs=self.logs)
            self._await_cluster_agrees()
        else:
            raise TopologyError(f"a {self.kind} topology promotes nobody")
        return self.describe()

    def pause(self, port: int) -> dict:
        process = self.node(port)
        process.signal(signal.SIGSTOP)
        process.paused = True
        return self.describe()

    def resume(self, port: int) -> dict:
        process = self.node(port)
        process.signal(signal.SIGCONT)
        process.paused = False
        process.wait_ready()
        return self.describe()

    def logs(self) -> str:
        return "".join(f"\n--- {p.log} ---\n{p.log_text()}\n" for p in self.nodes + self.sentinels)

    def stop(self):
        for process in self.sentinels + self.nodes:
            if process.alive():
                process.kill()
        self.sentinels, self.nodes = [], []
        if self.owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


def serve(topology: Topology, commands, out):
    """One JSON command a line in, one JSON answer a line out, until "stop" or EOF."""
    operations = {
        "describe": lambda c: topology.describe(),
        "failover": lambda c: topology.failover(c.get("key")),
        "kill": lambda c: topology.kill(int(c["port"])),
        "await_promotion": lambda c: topology.await_promotion(c.get("key")),
        "pause": lambda c: topology.pause(int(c["port"])),
        "resume": lambda c: topology.resume(int(c["port"])),
    }
    for line in commands:
        if not line.strip():
            continue
        try:
            command = json.loads(line)
            if command.get("op") == "stop":
                break
            operation = operations.get(command.get("op"))
            if operation is None:
                raise TopologyError(f"unknown op {command.get('op')!r}: one of {', '.join(operations)}, stop")
            answer = {"ok": True, "topology": operation(command)}
        except (TopologyError, RespError, OSError, KeyError, ValueError) as error:
            answer = {"ok": False, "error": str(error)}
        out.write(json.dumps(answer) + "\n")
        out.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--module", help="the module to load (default: RLOCK_MODULE or target/release/librlock.so)")
    parser.add_argument("--dir", help="where the servers keep their files and logs (default: a temp dir, removed)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        topology = Topology.start(args.kind, module=args.module, workdir=args.dir)
    except TopologyError as error:
        print(json.dumps({"ok": False, "error": str(error)}), flush=True)
        return 1
    try:
        print(json.dumps(topology.describe()), flush=True)
        serve(topology, sys.stdin, sys.stdout)
    finally:
        topology.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
