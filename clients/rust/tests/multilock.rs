//! `MultiLock` (`RLOCK.ACQUIREALL` / `RLOCK.RELEASEALL`) against real redis-server processes
//! with the module loaded.

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod support;

use rlock_client::{Error, Lock, LockGuard, MultiLock};
use std::time::Duration;
use support::{
    bound_to, client, holds, lock_info, notified_waiters, refused_at_once, server, wait_waiters,
};

const WAIT: Duration = Duration::from_secs(5);

/// (owner, holds) of a lock, or `None` when free.
fn held_by(redis: &common::Server, key: &str) -> Option<(String, i64)> {
    lock_info(redis, key).map(|(owner, holds, _)| (owner, holds))
}

/// A server where another handle holds `b`, its client, that holding, and a multi-lock
/// handle on [`a`, `b`].
async fn b_held_elsewhere() -> Result<(common::Server, redis::Client, LockGuard, MultiLock), Error>
{
    let redis = server();
    let client = client(&redis);
    let other = Lock::new(&client, "b").acquire().await?;
    let both = MultiLock::new(&client, ["a", "b"]);
    Ok((redis, client, other, both))
}

/// Whether nobody holds any of `keys`.
fn all_free(redis: &common::Server, keys: &[&str]) -> bool {
    keys.iter().all(|key| held_by(redis, key).is_none())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_is_granted_every_key_when_the_other_holder_lets_go() -> Result<(), Error> {
    let (redis, _client, other, both) = b_held_elsewhere().await?;
    let owner = both.owner().to_string();

    let waiting = tokio::spawn(async move {
        let held = both.try_lock_for(WAIT).await?;
        Ok::<_, Error>((held.tokens(), held))
    });
    wait_waiters(&redis, "b", 1);
    assert_eq!(notified_waiters(&redis), 1, "it waits by NOTIFY");
    assert_eq!(held_by(&redis, "a"), None, "nothing taken while it waits");

    other.release().await?;
    let (tokens, held) = waiting.await.expect("task")?;
    assert_eq!(tokens.len(), 2);
    assert_eq!(held_by(&redis, "a"), Some((owner.clone(), 1)));
    assert_eq!(held_by(&redis, "b"), Some((owner, 1)));
    assert!(bound_to(&redis, "a").is_some() && bound_to(&redis, "b").is_some());
    assert!(!held.is_lost());

    held.unlock().await?;
    assert!(all_free(&redis, &["a", "b"]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_wait_leaves_every_queue() -> Result<(), Error> {
    let (redis, client, other, both) = b_held_elsewhere().await?;
    let gave_up = tokio::time::timeout(Duration::from_millis(200), both.lock()).await;
    assert!(gave_up.is_err(), "still waiting");
    common::wait_until("out of the queue", || notified_waiters(&redis) == 0);

    // A single-key waiter on `a` is not held back by a request that left.
    let a = Lock::new(&client, "a").acquire().await?;
    a.release().await?;
    other.release().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_owner_holds_is_re_entered() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let single = Lock::new(&client, "a");
    let outer = single.acquire().await?;
    let both = MultiLock::new(&client, ["a", "b"]).owner_id(single.owner());

    let held = both.lock().await?;
    assert_eq!(
        held.tokens()[0],
        outer.token(),
        "a re-entry keeps the token"
    );
    assert_eq!(holds(&redis, "a"), Some(2));
    held.unlock().await?;
    assert_eq!(holds(&redis, "a"), Some(1));
    assert_eq!(held_by(&redis, "b"), None);
    outer.release().await
}

/// T1 holds `a` and waits for [`b`, `c`]; T2 holds `b` and asks for `a`: refused at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nesting_against_a_multi_lock_gets_deadlock_at_once() -> Result<(), Error> {
    let redis = server();
    let (one, two) = (client(&redis), client(&redis));
    let one_a = Lock::new(&one, "a");
    let one_bc = MultiLock::new(&one, ["b", "c"]).owner_id(one_a.owner());
    let two_b = Lock::new(&two, "b");
    let two_a = Lock::new(&two, "a").wait(WAIT).owner_id(two_b.owner());

    let held_a = one_a.acquire().await?;
    let held_b = two_b.acquire().await?;
    let first = tokio::spawn(async move { one_bc.try_lock_for(WAIT).await.map(|g| g.tokens()) });
    wait_waiters(&redis, "b", 1);

    let cycle = refused_at_once(two_a.acquire()).await;
    assert!(
        cycle.contains(one_a.owner()) && cycle.contains(two_b.owner()),
        "{cycle}"
    );

    held_b.release().await?;
    let tokens = first.await.expect("task")?;
    assert_eq!(tokens.len(), 2);
    held_a.release().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_refusals_are_errors() {
    let redis = server();
    let client = client(&redis);
    let twice = MultiLock::new(&client, ["a", "a"]).try_lock().await;
    assert!(matches!(twice, Err(Error::Redis(_))), "{twice:?}");
    let none = MultiLock::new(&client, Vec::<String>::new())
        .try_lock()
        .await;
    assert!(matches!(none, Err(Error::Redis(_))), "{none:?}");
}
