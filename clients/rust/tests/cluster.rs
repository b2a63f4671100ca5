//! On Redis Cluster (the shared harness: three primaries with a replica each), through the
//! public API: every type on keys of different slots, a `MultiLock` with a hash tag and the
//! clear error without, an election observed across the nodes; then a confirmed holder and
//! two waiters, and an observer, across `CLUSTER FAILOVER`, and the holder and waiters across a
//! kill -9 of the primary and the promotion of its replica. One topology for the file.

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod support;

use rlock_client::{CountDownLatch, Election, Error, Lock, MultiLock, RwLock, Semaphore, Servers};
use std::time::Duration;
use support::failover::holder_and_waiters_across;
use support::topology::Topology;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_type_on_the_cluster_and_across_cluster_failover() {
    let topology = Topology::start("cluster");
    let servers = || Servers::cluster(topology.nodes().iter().map(|(node, _)| node.client()));
    let s = servers();

    // Keys of different slots, so of different primaries.
    let lock = Lock::new(&s, "c:lock").wait(Duration::from_secs(5));
    let held = lock.acquire().await.expect("lock");
    let other = Lock::new(&s, "c:lock");
    assert!(matches!(other.acquire().await, Err(Error::NotAcquired)));
    let mut set = redis::cmd("SET");
    set.arg("{c:lock}:data").arg("x");
    let () = held
        .guarded(&set)
        .await
        .expect("a guarded write in the lock's slot");
    held.release().await.expect("release");

    let doc = RwLock::new(&s, "c:rw");
    let (reader, other_reader) = (
        doc.read().await.unwrap(),
        RwLock::new(&s, "c:rw").read().await,
    );
    assert!(matches!(
        RwLock::new(&s, "c:rw").write().await,
        Err(Error::NotAcquired)
    ));
    reader.release().await.unwrap();
    other_reader.unwrap().release().await.unwrap();

    let pool = Semaphore::new(&s, "c:sem").wait(Duration::from_secs(5));
    pool.try_set_permits(2).await.unwrap();
    let permits = pool.acquire_many(2).await.unwrap();
    assert_eq!(pool.available_permits().await.unwrap(), 0);
    permits.release().await.unwrap();

    let latch = CountDownLatch::new(&s, "c:latch");
    latch.try_set_count(1).await.unwrap();
    let waiting = tokio::spawn({
        let latch = CountDownLatch::new(servers(), "c:latch");
        async move { latch.wait_for(Duration::from_secs(10)).await }
    });
    latch.count_down().await.unwrap();
    assert!(
        waiting.await.unwrap().unwrap(),
        "the latch opened for its waiter"
    );

    let tagged = MultiLock::new(&s, ["{order}:1", "{order}:2"]);
    let both = tagged.try_lock().await.expect("keys of one slot");
    assert_eq!(both.tokens().len(), 2);
    both.unlock().await.unwrap();
    let untagged = MultiLock::new(&s, ["order:1", "order:2"]);
    match untagged.try_lock().await {
        Err(Error::CrossSlot(text)) => assert!(text.contains("hash tag"), "{text}"),
        other => panic!("expected CrossSlot, got {other:?}"),
    }

    // An election: the leader, an observer, a follower that takes over on resign.
    set_keyspace_events(&topology);
    let leader = Election::new(&s, "c:election", "leader");
    let term = leader.campaign().await.unwrap();
    let mut observer = Election::new(servers(), "c:election", "watcher").observe();
    let seen = observer.next().await.unwrap().unwrap().expect("a leader");
    assert_eq!((seen.owner.as_str(), seen.term), ("leader", Some(term)));

    // Across CLUSTER FAILOVER of the key's primary: a holder and two waiters...
    let key = "c:failover";
    let primary = || topology.primary_for(key);
    holder_and_waiters_across(servers, key, primary, || {
        topology.failover(Some(key));
    })
    .await;

    // ... and the observer of an election whose primary fails over while nobody leads (so
    // no binding is dropped there: the old primary, now a replica, publishes nothing) follows
    // to the new primary by itself.
    leader.resign().await.unwrap();
    let nobody = observer.next().await.unwrap().unwrap();
    assert_eq!(nobody, None);
    topology.failover(Some("c:election"));
    let follower = Election::new(servers(), "c:election", "follower");
    let next = follower.campaign().await.expect("the follower leads");
    assert!(next > term);
    // The observer checks its node's role every second: well within 3 s.
    let led = std::time::Instant::now();
    let seen = tokio::time::timeout(Duration::from_secs(3), async {
        loop {
            match observer.next().await.unwrap().unwrap() {
                Some(leader) if leader.owner == "follower" => return leader,
                _ => {}
            }
        }
    })
    .await
    .expect("the observer saw the new leader on the new primary");
    eprintln!(
        "the observer saw the new leader {:?} after it led",
        led.elapsed()
    );
    assert_eq!(seen.term, Some(next));
    follower.resign().await.unwrap();

    // Across a kill -9 of the key's primary and the promotion of its replica.
    let key = "c:kill";
    holder_and_waiters_across(
        servers,
        key,
        || topology.primary_for(key),
        || {
            topology.kill(&topology.primary_for(key));
            topology.await_promotion(Some(key));
        },
    )
    .await;
}

/// Module keyspace events on every node (an observer listens on the key's primary). Only
/// class `d`: a replica publishes no module events of its own, so an observer left on a node
/// that turned replica would see nothing.
fn set_keyspace_events(topology: &Topology) {
    for (node, _) in topology.nodes() {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("notify-keyspace-events")
            .arg("Kd")
            .query(&mut node.conn())
            .expect("CONFIG SET");
    }
}
