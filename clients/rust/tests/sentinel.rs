//! Under Sentinel (the shared harness: a primary, one replica, three Sentinels), through the
//! public API: a confirmed holder and two waiters across `SENTINEL FAILOVER` and across a
//! kill -9 of the primary and its replacement. One topology for the file.

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod support;

use rlock_client::Servers;
use support::failover::holder_and_waiters_across;
use support::topology::Topology;

/// One topology, changed step by step: a failover (the old primary comes back as the
/// replica), then the kill (which leaves no replica). (A stopped replica: tests/confirm.rs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_failovers_keep_exclusion() {
    let topology = Topology::start("sentinel");
    let servers = || {
        let sentinels = topology
            .sentinels()
            .iter()
            .map(|s| s.client())
            .collect::<Vec<_>>();
        Servers::sentinel("rlock", sentinels)
    };

    let key = "sentinel:failover";
    holder_and_waiters_across(
        servers,
        key,
        || topology.primary(),
        || {
            topology.failover(None);
        },
    )
    .await;

    let key = "sentinel:kill";
    holder_and_waiters_across(
        servers,
        key,
        || topology.primary(),
        || {
            topology.kill(&topology.primary());
            topology.await_promotion(None);
        },
    )
    .await;
}
