"""One redis-server process of a topology (a data node with the module, or a sentinel), and
the polling wait the topology is built with. Standard library only, as topology.py."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from resp import Resp, RespError

REPO = Path(__file__).resolve().parents[2]
MODULE = Path(os.environ.get("RLOCK_MODULE", REPO / "target/release/librlock.so"))
SERVER = os.environ.get("REDIS_SERVER", "redis-server")
READY_S = 30.0


class TopologyError(RuntimeError):
    pass


class PortTaken(TopologyError):
    """The server exited because another process holds its port (or its cluster bus port)."""


def wait_for(what: str, check, deadline_s: float = READY_S, logs=None):
    """Polls `check` (a truthy value ends the wait) until the deadline, then fails with `what`
    and the servers' logs."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            value = check()
            if value:
                return value
        except (OSError, RespError):
            pass
        if time.monotonic() > deadline:
            raise TopologyError(f"timed out waiting for {what}" + (f"\n{logs()}" if logs else ""))
        time.sleep(0.02)


class Process:
    """One redis-server (data node or sentinel) of the topology."""

    def __init__(self, directory: Path, port: int, args: list[str], sentinel: bool = False,
                 module: Path = MODULE):
        self.port = port
        self.sentinel = sentinel
        self.directory = directory
        self.log = directory / "server.log"
        directory.mkdir(parents=True, exist_ok=True)
        if sentinel:
            conf = directory / "sentinel.conf"
            conf.write_text("\n".join(args) + "\n")
            command = [SERVER, str(conf), "--sentinel", "--port", str(port), "--bind", "127.0.0.1",
                       "--dir", str(directory), "--logfile", str(self.log), "--daemonize", "no"]
        else:
            command = [SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
                       "--save", "", "--appendonly", "no", "--logfile", str(self.log),
                       "--daemonize", "no", "--repl-diskless-sync", "yes",
                       "--repl-diskless-sync-delay", "0", "--loadmodule", str(module), *args]
        self.command = command
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        self.paused = False

    def conn(self, timeout: float = 2.0) -> Resp:
        return Resp("127.0.0.1", self.port, timeout)

    def call(self, *args):
        with self.conn() as c:
            return c.call(*args)

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_ready(self):
        """Until this process answers on its port. Ours is the server whose INFO names our child's
        pid: a suite running beside may have a server of its own on the port, answering PING."""
        def ours():
            if not self.alive():
                self.process.wait()
                if "Address already in use" in self.log_text():
                    raise PortTaken(f"port {self.port} (or its bus port {self.port + 10000}) is held by "
                                    f"another process:\n{self.log_text()}")
                raise TopologyError(f"{self.command[0]} on port {self.port} exited:\n{self.log_text()}")
            return info(self, "server").get("process_id") == str(self.process.pid)
        wait_for(f"port {self.port} to answer as pid {self.process.pid}", ours, logs=self.log_text)

    def signal(self, number: int):
        if self.alive():
            os.kill(self.process.pid, number)

    def kill(self):
        if self.paused:
            self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        self.process.wait()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else "(no log)"

    def address(self) -> dict:
        return {"host": "127.0.0.1", "port": self.port}


def info(process: Process, section: str) -> dict:
    text = process.call("INFO", section)
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
