"""The test servers are never mistaken for another suite's: a port another process took between
the free-port pick and the bind gets a new one, or (a port asked for) a clear failure, and a
foreign server answering PING on the port is never taken for ours."""

from __future__ import annotations

import socket

import pytest

import servers
import topologies  # noqa: F401  (puts the harness on sys.path)
import process as harness_process
import topology as harness_topology
from resp import Resp, free_port


@pytest.fixture
def foreign(tmp_path):
    """A redis-server of another suite, as far as the fixtures know: no module, its own pid."""
    config = tmp_path / "foreign.conf"
    config.write_text("")
    server = servers.RedisServer(tmp_path, config_file=config)
    yield server
    server.stop()


def taken_first(port: int, pick):
    """A free-port picker that hands out `port` once (as if another process took it after the
    pick), then picks as `pick` does."""
    ports = iter([port])
    return lambda: next(ports, None) or pick()


def answering_pid(port: int) -> int:
    with Resp("127.0.0.1", port, 2.0) as conn:
        text = conn.call("INFO", "server")
    return int(dict(line.split(":", 1) for line in text.splitlines() if ":" in line)["process_id"])


def test_server_fixture_moves_off_a_port_another_server_holds(tmp_path, foreign, monkeypatch):
    monkeypatch.setattr(servers, "free_port", taken_first(foreign.port, servers.free_port))
    ours = servers.RedisServer(tmp_path)
    try:
        assert ours.port != foreign.port
        assert answering_pid(ours.port) == ours.process.pid
        assert "Address already in use" in (tmp_path / f"redis-{foreign.port}.log").read_text()
        assert foreign.process.poll() is None
    finally:
        ours.stop()


def test_server_fixture_gives_up_clearly_when_every_pick_is_taken(tmp_path, foreign, monkeypatch):
    monkeypatch.setattr(servers, "free_port", lambda: foreign.port)
    with pytest.raises(servers.PortTaken, match=f"port {foreign.port} is held by another process"):
        servers.RedisServer(tmp_path)
    assert foreign.process.poll() is None


def test_harness_process_on_a_given_port_fails_clearly_never_ready_on_the_foreign_one(tmp_path, foreign):
    node = harness_process.Process(tmp_path / "node", foreign.port, [])
    try:
        with pytest.raises(harness_process.PortTaken, match=f"port {foreign.port}.*held by another process"):
            node.wait_ready()
    finally:
        node.kill()
    assert answering_pid(foreign.port) == foreign.process.pid


def test_harness_cluster_node_whose_bus_port_is_taken_fails_clearly(tmp_path):
    port = free_port()
    with socket.socket() as bus:
        bus.bind(("127.0.0.1", port + 10000))
        bus.listen()
        node = harness_process.Process(tmp_path / "node", port, ["--cluster-enabled", "yes"])
        try:
            with pytest.raises(harness_process.PortTaken, match=f"bus port {port + 10000}"):
                node.wait_ready()
        finally:
            node.kill()


def test_harness_topology_moves_a_node_off_a_taken_port(tmp_path, foreign, monkeypatch):
    monkeypatch.setattr(harness_topology, "free_port",
                        taken_first(foreign.port, harness_topology.free_port))
    topology = harness_topology.Topology.start("standalone", workdir=tmp_path / "topology")
    try:
        [node] = topology.nodes
        assert node.port != foreign.port
        assert answering_pid(node.port) == node.process.pid
    finally:
        topology.stop()
    assert foreign.process.poll() is None
