"""Through a Sentinel master_for() client (blocking and asyncio): a holder and its waiters
across SENTINEL FAILOVER, then across kill -9 of the primary and a promotion (the scenario is
in failover_scenario.py). One topology for the module: the kill comes last."""

from __future__ import annotations

import pytest

import failover_scenario
import topologies


@pytest.fixture(scope="module")
def sentinel(tmp_path_factory):
    topology = topologies.start("sentinel", tmp_path_factory.mktemp("sentinel"))
    yield topology
    topology.stop()


async def test_across_sentinel_failover(sentinel):
    await failover_scenario.across(sentinel, sentinel.failover)


async def test_across_kill_of_the_primary_and_promotion(sentinel):
    def kill_and_promote():
        sentinel.kill(sentinel.describe()["primary"]["port"])
        sentinel.await_promotion()

    await failover_scenario.across(sentinel, kill_and_promote, keys=("killed:blocking", "killed:asyncio"))
