"""Real redis-server processes with the rlock module loaded, one per test session (and fresh ones
for tests that change the server's role or configuration)."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import time
from pathlib import Path

import redis

REPO = Path(__file__).resolve().parents[3]
MODULE = Path(os.environ.get("RLOCK_MODULE", REPO / "target/release/librlock.so"))
SERVER = os.environ.get("REDIS_SERVER", "redis-server")
START_DEADLINE_S = 10.0
# Starts on a new free port when another process took the last one first (suites run side by side).
START_ATTEMPTS = 5


class PortTaken(RuntimeError):
    """redis-server exited because another process holds its port."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    def __init__(self, directory: Path, module_args: tuple = (), config_file: Path = None):
        """With `config_file`, the server starts from it (which loads the module, or not)."""
        if config_file is None and not MODULE.is_file():
            raise RuntimeError(f"{MODULE} is missing: build it with `make build` (or set RLOCK_MODULE)")
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                self._start_on(free_port(), directory, module_args, config_file)
                return
            except PortTaken:
                if attempt == START_ATTEMPTS:
                    raise

    def _start_on(self, port: int, directory: Path, module_args: tuple, config_file: Path) -> None:
        self.port = port
        self.log = directory / f"redis-{self.port}.log"
        loading = ["--loadmodule", str(MODULE), *map(str, module_args)] if config_file is None else []
        command = [
            SERVER, *([str(config_file)] if config_file else []),
            "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(directory),
            "--save", "", "--appendonly", "no", "--logfile", str(self.log),
            "--daemonize", "no", "--pidfile", str(directory / f"redis-{self.port}.pid"),
            *loading,
        ]
        try:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        except FileNotFoundError:
            raise RuntimeError(f"{SERVER} not found: install redis-server (or set REDIS_SERVER)") from None
        self._wait_ready(command)

    def _wait_ready(self, command) -> None:
        """Until our server answers. Ours is the one whose INFO names our child's pid: a suite
        running beside may have a server of its own on the port, answering PING."""
        deadline = time.monotonic() + START_DEADLINE_S
        probe = redis.Redis(port=self.port, socket_timeout=1)
        try:
            while True:
                try:
                    if probe.info("server").get("process_id") == self.process.pid:
                        return
                except redis.ConnectionError:
                    pass
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    if "Address already in use" in self.log_text():
                        raise PortTaken(f"port {self.port} is held by another process:\n{self.log_text()}")
                    raise RuntimeError(
                        f"redis-server did not start: {shlex.join(command)}\n{self.log_text()}")
                time.sleep(0.01)
        finally:
            probe.close()

    def log_text(self) -> str:
        return self.log.read_text() if self.log.exists() else "(no log)"

    def client(self, **kwargs) -> redis.Redis:
        return redis.Redis(port=self.port, decode_responses=True, **kwargs)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
