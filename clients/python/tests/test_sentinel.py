"""Through a Sentinel master_for() client (blocking and asyncio): a holder and its waiters
across SENTINEL FAILOVER, then across kill -9 of the primary and a promotion (the scenario is
in failover_scenario.py). One topology for the module: the kill comes last."""

from __future__ import annotations

import pytest
import rlock

import failover_scenario
import topologies


@pytest.fixture(scope="module")
def sentinel(tmp_path_factory):
    topology = topologies.prepare(topologies.start("sentinel", tmp_path_factory.mktemp("sentinel")))
    yield topology
    topology.stop()


async def test_across_sentinel_failover(sentinel):
    """The scenario, and an election: its leader leads on the new primary, and an observer
    that started before the failover sees its resignation there."""
    r = topologies.user_client(sentinel, asyncio_client=False)
    election = rlock.Election(r, "election", "leader")
    term = election.campaign(timeout=5)
    observer = rlock.Election(r, "election", "watcher").observe()
    assert observer.next(timeout=10) == ("leader", term)

    await failover_scenario.across(sentinel, sentinel.failover)

    assert election.is_leader and election.leader() == ("leader", term), "re-bound on the new primary"
    election.resign()
    assert observer.next(timeout=20) is None, "the observer follows the new primary"
    observer.close()
    r.close()


async def test_across_kill_of_the_primary_and_promotion(sentinel):
    def kill_and_promote():
        sentinel.kill(sentinel.describe()["primary"]["port"])
        sentinel.await_promotion()

    await failover_scenario.across(sentinel, kill_and_promote, keys=("killed:blocking", "killed:asyncio"))
