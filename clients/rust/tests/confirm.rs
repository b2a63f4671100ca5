//! Confirmation by the replicas (docs/availability.md), on a primary with one replica (the
//! shared harness): what is confirmed, what an unconfirmed acquisition leaves (nothing), and
//! the server behaviour the protocol rests on, checked on the server under test
//! (`REDIS_SERVER`). One topology for the file; its tests run one at a time.

// Each test holds `serial()` across its awaits on purpose: one at a time on the topology, and
// each test has a runtime of its own, so nothing else waits on that lock in it.
#![allow(clippy::await_holding_lock)]

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod support;

use redis::Value;
use rlock_client::{Confirm, CountDownLatch, Error, Lock, MultiLock, Servers};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};
use support::failover::{lock_info, unconfirmed_while_replica_stopped, wait_for};
use support::topology::{Node, Topology};

fn topology() -> &'static Topology {
    static TOPOLOGY: OnceLock<Topology> = OnceLock::new();
    TOPOLOGY.get_or_init(|| Topology::start("replicated"))
}

/// The tests stop the replica: one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn replica_stopped() -> Stopped {
    let replica = topology().replicas()[0].clone();
    topology().pause(&replica);
    Stopped(replica)
}

/// Resumes the replica on drop (also when the test fails).
struct Stopped(Node);

impl Drop for Stopped {
    fn drop(&mut self) {
        topology().resume(&self.0);
    }
}

fn servers() -> (Servers, Node) {
    let primary = topology().primary();
    (Servers::single(&primary.client()), primary)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_immediate_acquisition_is_not_held_unconfirmed() {
    let _one = serial();
    let (servers, primary) = servers();
    let _stopped = replica_stopped();
    unconfirmed_while_replica_stopped(&servers, "confirm:now", &primary).await;
    let multi = MultiLock::new(&servers, ["{m}:1", "{m}:2"]);
    assert!(matches!(
        multi.try_lock().await,
        Err(Error::NotConfirmed { undone: true, .. })
    ));
    assert_eq!(lock_info(&primary, "{m}:1"), Value::Nil);
}

/// A grant by message is written by the releasing connection: the waiter confirms it with its
/// own `RENEW` pipelined with `WAIT`, which must count (it propagates on every server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_by_message_is_not_held_unconfirmed() {
    let _one = serial();
    let (servers, primary) = servers();
    let key = "confirm:notify";
    for watchdog in [true, false] {
        let holder = Lock::new(&servers, key).acquire().await.expect("confirmed");
        let waiting = tokio::spawn({
            let lock = Lock::new(&servers, key)
                .wait(Duration::from_secs(10))
                .watchdog(watchdog);
            async move { lock.acquire().await.map(|guard| guard.token()) }
        });
        let queued = || lock_info(&primary, key) != Value::Nil && waiters(&primary, key) == 1;
        wait_for("the waiter queued", Duration::from_secs(10), queued);
        let _stopped = replica_stopped();
        let released = holder.release().await;
        assert!(
            matches!(released, Err(Error::NotConfirmed { undone: false, .. })),
            "a release not confirmed says so (it stands): {released:?}"
        );
        let granted = waiting.await.unwrap();
        assert!(
            matches!(
                granted,
                Err(Error::NotConfirmed {
                    undone: true,
                    confirmed: 0,
                    required: 1,
                    ..
                })
            ),
            "watchdog {watchdog}: {granted:?}"
        );
        assert_eq!(lock_info(&primary, key), Value::Nil, "left held");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_off_warn_only_and_more_replicas_than_there_are() {
    let _one = serial();
    let (servers, primary) = servers();
    let lock = Lock::new(&servers, "confirm:three")
        .confirm(Confirm::replicas(3).timeout(Duration::from_millis(100)));
    let started = Instant::now();
    assert!(matches!(
        lock.acquire().await,
        Err(Error::NotConfirmed {
            confirmed: 1,
            required: 3,
            ..
        })
    ));
    assert!(started.elapsed() >= Duration::from_millis(90));
    assert_eq!(lock_info(&primary, "confirm:three"), Value::Nil);

    let _stopped = replica_stopped();
    for confirm in [Confirm::off(), Confirm::auto().warn_only()] {
        let lock = Lock::new(&servers, "confirm:kept").confirm(confirm.clone());
        let held = lock
            .acquire()
            .await
            .unwrap_or_else(|e| panic!("{confirm:?}: {e}"));
        assert_ne!(lock_info(&primary, "confirm:kept"), Value::Nil);
        held.release().await.expect("released");
    }
    let latch = CountDownLatch::new(&servers, "confirm:latch");
    let set = latch.try_set_count(1).await;
    assert!(
        matches!(set, Err(Error::NotConfirmed { undone: false, .. })),
        "{set:?}"
    );
    assert_eq!(latch.count().await.unwrap(), 1, "the write stands");
}

/// `Confirm::aof` is `WAITAOF`, which Redis 7.0 lacks: a configuration error, nothing held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aof_confirmation_needs_waitaof() {
    let _one = serial();
    let (servers, primary) = servers();
    let mut conn = primary.conn();
    let waitaof: Value = redis::cmd("COMMAND")
        .arg("INFO")
        .arg("WAITAOF")
        .query(&mut conn)
        .unwrap();
    let lock = Lock::new(&servers, "confirm:aof").confirm(Confirm::auto().aof());
    let taken = lock.acquire().await;
    match waitaof {
        Value::Array(items) if items.iter().all(|item| *item == Value::Nil) => {
            let Err(Error::Redis(err)) = taken else {
                panic!("{taken:?}")
            };
            assert!(err.to_string().contains("WAITAOF"), "{err}");
        }
        // The harness runs without appendonly: the primary's own fsync count is 0.
        _ => assert!(taken.is_err(), "{taken:?}"),
    }
    assert_eq!(lock_info(&primary, "confirm:aof"), Value::Nil);
}

/// The server behaviour the protocol rests on, with plain commands: a blocked acquire
/// pipelined with `WAIT` counts the grant made when it is unblocked (Redis 7.0 sets the
/// client's offset after every command, 7.2+ when a module unblocks it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_acquire_pipelined_with_wait_counts_its_grant() {
    let _one = serial();
    let (_, primary) = servers();
    let key = "confirm:blocked";
    let mut holder = primary.conn();
    let _: i64 = redis::cmd("RLOCK.ACQUIRE")
        .arg(key)
        .arg("h")
        .query(&mut holder)
        .unwrap();
    let waiter = std::thread::spawn({
        let primary = primary.clone();
        move || {
            let mut pipe = redis::pipe();
            pipe.cmd("RLOCK.ACQUIRE")
                .arg(key)
                .arg("w")
                .arg("WAIT")
                .arg(10_000);
            pipe.cmd("WAIT").arg(1).arg(500);
            let (token, acked): (Option<i64>, i64) = pipe.query(&mut primary.conn()).unwrap();
            (token, acked)
        }
    });
    wait_for("the blocked waiter", Duration::from_secs(10), || {
        waiters(&primary, key) == 1
    });
    let _stopped = replica_stopped();
    let _: i64 = redis::cmd("RLOCK.RELEASE")
        .arg(key)
        .arg("h")
        .query(&mut holder)
        .unwrap();
    let (token, acked) = tokio::task::block_in_place(|| waiter.join().unwrap());
    assert!(token.is_some(), "granted");
    assert_eq!(
        acked, 0,
        "WAIT counted a grant the stopped replica never saw"
    );
    let _: Option<i64> = redis::cmd("RLOCK.FORCERELEASE")
        .arg(key)
        .query(&mut holder)
        .unwrap();
}

fn waiters(node: &Node, key: &str) -> i64 {
    let info = lock_info(node, key);
    support::failover::int(&support::failover::field(&info, "waiters")).unwrap_or(0)
}
