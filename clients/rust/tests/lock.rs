//! `Lock` against real redis-server processes with the module loaded.

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod support;

use rlock_client::{Error, Lock};
use std::time::{Duration, Instant};
use support::proxy::Proxy;
use support::{bound_to, client, client_at, holds, lock_info, server};

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_lines_take_and_give_back_a_lock() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);

    let lock = Lock::new(&client, "orders:42");
    let guard = lock.acquire().await?;
    let (owner, count, watchdog) = lock_info(&redis, "orders:42").expect("held");
    assert_eq!((owner.as_str(), count), (lock.owner(), 1));
    assert!(watchdog.is_some(), "watchdog is on by default");
    assert!(guard.token() > 0);
    guard.release().await?;

    assert_eq!(lock_info(&redis, "orders:42"), None);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_keeps_a_lock_past_its_lease_and_idle_bound() -> Result<(), Error> {
    // The server stops renewing a binding whose connection was silent for 1.5 s: only the
    // client's PING (every 500 ms) keeps this lock past 1.5 s + 1 s + its 300 ms lease.
    let redis = support::builder()
        .module_args(&["watchdog-idle-ms", "1500"])
        .start();
    let client = client(&redis);
    let lock = Lock::new(&client, "k").lease(Duration::from_millis(300));
    let guard = lock.acquire().await?;

    tokio::time::sleep(4 * SECOND).await;
    assert_eq!(holds(&redis, "k"), Some(1));
    assert!(!guard.is_lost());
    guard.release().await?;

    // Without the watchdog the same lease simply ends.
    let plain = Lock::new(&client, "k")
        .lease(Duration::from_millis(300))
        .watchdog(false);
    let guard = plain.acquire().await?;
    tokio::time::timeout(SECOND, guard.lost())
        .await
        .expect("a plain lease reports its end");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(lock_info(&redis, "k"), None);
    assert!(matches!(guard.release().await, Err(Error::Lost)));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_retried_after_a_dropped_connection_counts_once() -> Result<(), Error> {
    let redis = server();
    let proxy = Proxy::start(redis.port).await;
    let client = client_at(proxy.port);
    let lock = Lock::new(&client, "k").watchdog(false);

    // The acquire reaches the server, its reply is lost with the connection, and the client
    // sends it again on a fresh connection: the same request id, so still one hold.
    proxy.drop_reply_to("RLOCK.ACQUIRE");
    let outer = lock.acquire().await?;
    assert_eq!(holds(&redis, "k"), Some(1));
    assert_eq!(retries_answered(&redis), 1, "the second send was a retry");

    let inner = lock.acquire().await?;
    assert_eq!(holds(&redis, "k"), Some(2));
    proxy.drop_reply_to("RLOCK.RELEASE");
    inner.release().await?;
    assert_eq!(
        holds(&redis, "k"),
        Some(1),
        "a retried release decrements once"
    );
    assert_eq!(retries_answered(&redis), 2);
    outer.release().await?;
    assert_eq!(lock_info(&redis, "k"), None);
    Ok(())
}

/// Calls the server answered from its request-id memory (`INFO rlock`).
fn retries_answered(redis: &common::Server) -> i64 {
    let count = redis.info_field("rlock", "rlock_retries_answered");
    count.trim().parse().expect("a count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watchdog_lock_re_binds_when_only_the_client_saw_its_connection_drop() -> Result<(), Error>
{
    let redis = server();
    let proxy = Proxy::start(redis.port).await;
    let client = client_at(proxy.port);
    let lock = Lock::new(&client, "k");
    let guard = lock.acquire().await?;
    let bound_before = bound_to(&redis, "k");

    // The client's end breaks, the server's stays open: the client re-binds from a new
    // connection, so closing the old one later ends nothing.
    let severed = Instant::now();
    proxy.sever_client_ends();
    common::wait_until("the binding moved", || {
        bound_to(&redis, "k").is_some_and(|bound| Some(bound) != bound_before)
    });
    // At once, on the drop notice: not at the next PING (every 10 s here).
    assert!(severed.elapsed() < SECOND, "{:?}", severed.elapsed());
    proxy.close_kept();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(holds(&redis, "k"), Some(1));
    assert!(!guard.is_lost());
    guard.release().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_guard_releases_in_the_background() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    for watchdog in [true, false] {
        let lock = Lock::new(&client, "k").watchdog(watchdog);
        drop(lock.acquire().await?);
        common::wait_until("the dropped guard's release", || {
            lock_info(&redis, "k").is_none()
        });
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_hold_caps_a_watchdog_lock() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let lock = Lock::new(&client, "k").max_hold(Duration::from_millis(500));
    let guard = lock.acquire().await?;
    tokio::time::timeout(SECOND, guard.lost())
        .await
        .expect("the cap ends the holding");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(lock_info(&redis, "k"), None);
    Ok(())
}

/// A lease that ends under a 1 s lock-delay grants the next waiter no sooner than 1 s after
/// it ended (nobody holds it meanwhile); the owner's own release skips the delay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_end_under_lock_delay_grants_the_next_waiter_a_delay_later() -> Result<(), Error> {
    const LEASE: Duration = Duration::from_millis(300);
    let redis = server();
    let client = client(&redis);
    let holder = Lock::new(&client, "k")
        .watchdog(false)
        .lease(LEASE)
        .lock_delay(SECOND);
    let waiter = Lock::new(&client, "k").wait(5 * SECOND);

    let sent = Instant::now();
    let held = holder.acquire().await?;
    let lease_end = sent + LEASE;
    let granted = waiter.acquire().await?;
    let after = lease_end.elapsed();
    assert!(after >= SECOND, "granted {after:?} after the lease ended");
    assert!(
        after < 3 * SECOND,
        "granted only {after:?} after the lease ended"
    );
    assert!(matches!(held.release().await, Err(Error::Lost)));
    granted.release().await?;

    // Released by its owner: the next waiter is granted at once.
    let held = holder.acquire().await?;
    let next = tokio::spawn(async move {
        let guard = waiter.acquire().await?;
        Ok::<_, Error>((Instant::now(), guard.release().await))
    });
    support::wait_waiters(&redis, "k", 1);
    let released = Instant::now();
    held.release().await?;
    let (granted_at, released_next) = next.await.expect("task")?;
    assert!(granted_at - released < SECOND / 2);
    released_next
}

/// A watchdog holder whose connection is cut for 300 ms (the server closes it, and new
/// connections are refused meanwhile): with a 1 s `rlock.watchdog-grace-ms` the client
/// re-binds once back and keeps its lock; without a grace the lock went at the close and the
/// guard is reported lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_cut_off_for_300_ms_keeps_its_lock_within_the_grace() -> Result<(), Error> {
    for grace_ms in [1000, 0] {
        let redis = server();
        redis.conn().cmd(&[
            "CONFIG",
            "SET",
            "rlock.watchdog-grace-ms",
            &grace_ms.to_string(),
        ]);
        let path = Proxy::start(redis.port).await;
        let lock = Lock::new(client_at(path.port), "k");
        let guard = lock.acquire().await?;
        let first_binding = bound_to(&redis, "k").expect("bound");

        path.refuse(true);
        support::kill_client(&redis, first_binding);
        tokio::time::sleep(Duration::from_millis(300)).await;
        path.refuse(false);

        if grace_ms > 0 {
            common::wait_until("re-bound from a new connection", || {
                bound_to(&redis, "k").is_some_and(|id| id != first_binding)
            });
            assert!(!guard.is_lost());
            assert_eq!(
                lock_info(&redis, "k").map(|(owner, ..)| owner).as_deref(),
                Some(lock.owner())
            );
            guard.release().await?;
        } else {
            tokio::time::timeout(5 * SECOND, guard.lost())
                .await
                .expect("reported lost");
            assert_eq!(lock_info(&redis, "k"), None);
            assert!(matches!(guard.release().await, Err(Error::Lost)));
        }
    }
    Ok(())
}

/// The watchdog connection a handle keeps between its holdings binds each of them as the one
/// opened for a single holding did: after pairs on it (the same connection each time), the
/// next holding is bound to it, and that connection closing ends the holding at once (no
/// grace) and reports it lost; a waiter of another handle gets the lock meanwhile, and the
/// handle's next acquire binds a fresh connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_watchdog_connection_still_ends_its_holding_when_it_closes() -> Result<(), Error> {
    let redis = server();
    redis
        .conn()
        .cmd(&["CONFIG", "SET", "rlock.watchdog-grace-ms", "0"]);
    let client = client(&redis);
    let lock = Lock::new(&client, "k");
    let first = lock.acquire().await?;
    let kept = bound_to(&redis, "k").expect("bound");
    first.release().await?;
    for _ in 0..3 {
        let again = lock.acquire().await?;
        assert_eq!(bound_to(&redis, "k"), Some(kept), "the same connection");
        again.release().await?;
    }
    let guard = lock.acquire().await?;
    assert_eq!(bound_to(&redis, "k"), Some(kept));
    let next = tokio::spawn({
        let waiter = Lock::new(&client, "k").wait(30 * SECOND);
        async move {
            let guard = waiter.acquire().await?;
            guard.release().await
        }
    });
    support::wait_waiters(&redis, "k", 1);

    support::kill_client(&redis, kept);
    next.await.expect("task")?;
    tokio::time::timeout(5 * SECOND, guard.lost())
        .await
        .expect("reported lost");
    assert!(matches!(guard.release().await, Err(Error::Lost)));

    let fresh = lock.acquire().await?;
    assert!(bound_to(&redis, "k").is_some_and(|id| id != kept));
    fresh.release().await?;
    Ok(())
}
