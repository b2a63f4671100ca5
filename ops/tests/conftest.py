"""Fixtures for the operators' tests: real redis-server processes with the module (the Python
client's fixture), the real exporter, and the tools, skipped with a reason when missing."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

OPS = Path(__file__).resolve().parents[1]
REPO = OPS.parent
sys.path.insert(0, str(REPO / "clients/python/tests"))

from servers import RedisServer, free_port  # noqa: E402

EXPORTER = "prometheus-redis-exporter"
START_DEADLINE_S = 10.0


def need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is missing: apt-get install {package} (.ci/run does)")
    return path


@pytest.fixture
def server(tmp_path):
    server = RedisServer(tmp_path)
    yield server
    server.stop()


class Exporter:
    def __init__(self, redis_port: int, script: Path, log: Path):
        self.port = free_port()
        self.log = log
        command = [
            need(EXPORTER, "prometheus-redis-exporter"),
            "-redis.addr", f"redis://127.0.0.1:{redis_port}",
            "-script", str(script),
            "-web.listen-address", f"127.0.0.1:{self.port}",
        ]
        with open(log, "wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_DEADLINE_S
        while True:
            try:
                self.scrape()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the exporter did not answer:\n{log.read_text()}") from None
                time.sleep(0.05)

    def scrape(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as reply:
            return reply.read().decode()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


@pytest.fixture
def exporter(server, tmp_path):
    exporter = Exporter(server.port, OPS / "rlock-metrics.lua", tmp_path / "exporter.log")
    yield exporter
    exporter.stop()
