"""`make deb`: the package is built with the right files and fields; as root, it installs with
dpkg, Debian's own redis.conf including the snippet loads the module, and removal leaves Redis
able to start without it (the include line is turned off; turned on again on reinstall)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, RedisServer, need

SNIPPET = Path("/etc/redis/rlock.conf")
MODULE = Path("/usr/lib/redis/modules/librlock.so")
REDIS_CONF = Path("/etc/redis/redis.conf")
INCLUDE = f"include {SNIPPET}"
VERSION = re.search(r'^version = "(.+)"$', (REPO / "Cargo.toml").read_text(), re.M).group(1)


def run(*command) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def package() -> Path:
    need("dpkg-deb", "dpkg")
    return REPO / run("make", "-C", str(REPO), "--no-print-directory", "deb").strip().splitlines()[-1]


def test_the_package_holds_the_module_snippet_docs_and_metrics(package):
    arch = run("dpkg", "--print-architecture").strip()
    assert package.name == f"rlock_{VERSION}_{arch}.deb"
    files = {line.split()[-1].lstrip(".") for line in run("dpkg-deb", "-c", str(package)).splitlines()}
    for path in (MODULE, SNIPPET, "/usr/share/doc/rlock/README.md", "/usr/share/doc/rlock/operations.md",
                 "/usr/share/rlock/rlock-metrics.lua", "/usr/share/rlock/rlock-alerts.yml"):
        assert str(path) in files, f"{path} missing from {sorted(files)}"
    assert run("dpkg-deb", "-f", str(package), "Package").strip() == "rlock"
    assert run("dpkg-deb", "-f", str(package), "Version").strip() == VERSION
    assert "redis-server (>= 5:7.0)" in run("dpkg-deb", "-f", str(package), "Depends")
    control = Path(run("mktemp", "-d").strip())
    run("dpkg-deb", "-e", str(package), str(control))
    assert (control / "conffiles").read_text().split() == [str(SNIPPET)]


def dpkg_status() -> str:
    return subprocess.run(["dpkg", "-s", "rlock"], capture_output=True, text=True).stdout


@pytest.fixture
def installed(package):
    if os.geteuid() != 0:
        pytest.skip("installing the package needs root (the CI machine runs the tests as root)")
    if not REDIS_CONF.exists():
        pytest.skip(f"{REDIS_CONF} is missing: Debian's redis-server package is not installed")
    if "Status: install ok installed" in dpkg_status():
        pytest.skip("rlock is already installed on this machine: not touching it")
    conf_before = REDIS_CONF.read_text()
    run("dpkg", "-i", str(package))
    try:
        yield package
    finally:
        subprocess.run(["dpkg", "--purge", "rlock"], capture_output=True)
        REDIS_CONF.write_text(conf_before)


def debian_server(directory: Path) -> RedisServer:
    """redis-server on Debian's own redis.conf (port, dir, log and daemonizing overridden)."""
    directory.mkdir(exist_ok=True)
    return RedisServer(directory, config_file=REDIS_CONF)


def test_installed_it_loads_and_removes_cleanly(installed, tmp_path):
    assert "Status: install ok installed" in dpkg_status()
    REDIS_CONF.write_text(REDIS_CONF.read_text() + f"\n{INCLUDE}\n")
    server = debian_server(tmp_path / "before")
    try:
        client = server.client()
        assert client.execute_command("RLOCK.ACQUIRE", "k", "o1", "PX", 10000) > 0
        (module,) = [m for m in client.execute_command("MODULE", "LIST") if m["name"] == "rlock"]
        assert module["path"] == str(MODULE)
        major, minor, patch = map(int, VERSION.split("-")[0].split("."))
        assert module["ver"] == major * 10000 + minor * 100 + patch
        assert client.execute_command("INFO", "rlock")["rlock_version"] == VERSION

        run("dpkg", "-r", "rlock")
        assert not MODULE.exists()
        assert "Status: deinstall ok config-files" in dpkg_status()
        assert SNIPPET.exists()  # a conffile: kept until purge
        assert f"# rlock removed: {INCLUDE}" in REDIS_CONF.read_text()
        assert client.execute_command("RLOCK.INFO", "k")["owner"] == "o1"  # the running server goes on
    finally:
        server.stop()

    after = debian_server(tmp_path / "after")  # starts, without the module
    try:
        names = [m["name"] for m in after.client().execute_command("MODULE", "LIST")]
        assert "rlock" not in names
    finally:
        after.stop()

    run("dpkg", "-i", str(installed))
    assert f"\n{INCLUDE}\n" in REDIS_CONF.read_text()  # turned on again
    run("dpkg", "--purge", "rlock")
    assert not SNIPPET.exists()
    assert "Status" not in dpkg_status() or "not-installed" in dpkg_status()
