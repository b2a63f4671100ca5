//! Under Sentinel (the shared harness: a primary, one replica, three Sentinels), through the
//! public API: a confirmed holder and two waiters across `SENTINEL FAILOVER` and across a
//! kill -9 of the primary and its replacement; with the replica stopped, no acquisition is
//! reported held. One topology for the file.

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity, dead_code)] // the shared fixture, linted where it lives
mod common;
mod support;

use rlock_client::{Confirm, Lock, Servers};
use support::failover::{holder_and_waiters_across, lock_info, unconfirmed_while_replica_stopped};
use support::topology::Topology;

/// One topology, changed step by step: the stopped replica first (it needs the replica), then
/// a failover (the old primary comes back as the replica), then the kill (which leaves no
/// replica).
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

    // With the replica stopped, nothing is held unconfirmed; `Confirm::off` holds at once.
    let replica = topology.replicas()[0].clone();
    let lock = Lock::new(&servers(), "sentinel:stopped");
    lock.acquire()
        .await
        .expect("confirmed")
        .release()
        .await
        .unwrap();
    topology.pause(&replica);
    let primary = topology.primary();
    unconfirmed_while_replica_stopped(&servers(), "sentinel:stopped", &primary).await;
    let unconfirmed = Lock::new(&servers(), "sentinel:stopped").confirm(Confirm::off());
    let held = unconfirmed
        .acquire()
        .await
        .expect("held without confirmation");
    assert_ne!(lock_info(&primary, "sentinel:stopped"), redis::Value::Nil);
    held.release().await.unwrap();
    topology.resume(&replica);

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
