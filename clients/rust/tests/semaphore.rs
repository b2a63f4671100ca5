//! `Semaphore` against real redis-server processes with the module loaded: permits that add
//! up per owner, the FIFO queue seen from the client (a large request is not passed by
//! smaller ones), retried calls, cancelled waits, hold caps.

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod support;

use rlock_client::{Error, Semaphore};
use std::time::Duration;
use support::proxy::Proxy;
use support::{client, client_at, retries_answered, sem_info, server, SemInfo};

const SECOND: Duration = Duration::from_secs(1);

fn available(redis: &common::Server, key: &str) -> i64 {
    sem_info(redis, key).map_or(0, |info| info.available)
}

fn waiters(redis: &common::Server, key: &str) -> Vec<i64> {
    sem_info(redis, key).map_or(Vec::new(), |info| info.waiters)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_are_counted_set_once_and_added() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);

    let pool = Semaphore::new(&client, "pool");
    assert_eq!(
        pool.available_permits().await?,
        0,
        "no semaphore, no permits"
    );
    assert!(matches!(pool.acquire().await, Err(Error::NotAcquired)));
    assert!(pool.try_set_permits(3).await?);
    assert!(!pool.try_set_permits(10).await?, "set only once");
    let permit = pool.acquire_many(2).await?;
    assert_eq!(permit.permits(), 2);
    assert_eq!(pool.available_permits().await?, 1);

    // Another owner gets the one left, not two; the same owner's permits add up.
    let other = Semaphore::new(&client, "pool");
    assert!(matches!(
        other.acquire_many(2).await,
        Err(Error::NotAcquired)
    ));
    let one = other.acquire().await?;
    assert!(one.token() > permit.token(), "a token per grant");
    let mut info = sem_info(&redis, "pool").expect("exists");
    info.holders.sort();
    let mut want = vec![
        (pool.owner().to_string(), 2),
        (other.owner().to_string(), 1),
    ];
    want.sort();
    assert_eq!(
        info,
        SemInfo {
            available: 0,
            holders: want,
            waiters: vec![],
        }
    );
    assert_eq!(pool.add_permits(2).await?, 2);
    let more = pool.acquire_many(2).await?;
    assert_eq!(holders_of(&redis, "pool", pool.owner()), 4);
    for guard in [permit, one, more] {
        guard.release().await?;
    }
    assert_eq!(pool.available_permits().await?, 5);
    assert!(sem_info(&redis, "pool").expect("exists").holders.is_empty());
    assert_eq!(pool.add_permits(-5).await?, 0);
    Ok(())
}

/// The permits `owner` holds at `key`.
fn holders_of(redis: &common::Server, key: &str, owner: &str) -> i64 {
    sem_info(redis, key)
        .into_iter()
        .flat_map(|info| info.holders)
        .find(|(holder, _)| holder == owner)
        .map_or(0, |(_, permits)| permits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retried_acquires_and_releases_count_once() -> Result<(), Error> {
    let redis = server();
    let proxy = Proxy::start(redis.port).await;
    let client = client_at(proxy.port);
    // Without the watchdog: with it, the dropped connection would end the first grant (its
    // binding), and the retry would be a new grant rather than an answer by id.
    let sem = Semaphore::new(&client, "s").watchdog(false);
    assert!(sem.try_set_permits(5).await?);

    proxy.drop_reply_to("RSEM.ACQUIRE");
    let two = sem.acquire_many(2).await?;
    assert_eq!(retries_answered(&redis), 1, "the second send was a retry");
    assert_eq!(holders_of(&redis, "s", sem.owner()), 2);
    assert_eq!(available(&redis, "s"), 3);

    let one = sem.acquire().await?;
    proxy.drop_reply_to("RSEM.RELEASE");
    two.release().await?;
    assert_eq!(retries_answered(&redis), 2);
    assert_eq!(
        holders_of(&redis, "s", sem.owner()),
        1,
        "two given back once"
    );
    assert_eq!(available(&redis, "s"), 4);
    one.release().await?;
    assert_eq!(available(&redis, "s"), 5);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retried_set_and_add_permits_count_once() -> Result<(), Error> {
    let redis = server();
    let proxy = Proxy::start(redis.port).await;
    let client = client_at(proxy.port);
    let sem = Semaphore::new(&client, "s");

    proxy.drop_reply_to("RSEM.SETPERMITS");
    assert!(
        sem.try_set_permits(3).await?,
        "the retry of the call that set them"
    );
    assert_eq!(retries_answered(&redis), 1, "the second send was a retry");
    proxy.drop_reply_to("RSEM.ADDPERMITS");
    assert_eq!(sem.add_permits(2).await?, 5);
    proxy.drop_reply_to("RSEM.ADDPERMITS");
    assert_eq!(sem.add_permits(-1).await?, 4);
    assert_eq!(retries_answered(&redis), 3);
    assert_eq!(available(&redis, "s"), 4, "each added once");
    assert!(!sem.try_set_permits(9).await?, "set already");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_wait_for_permits_leaves_the_queue() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let holder = Semaphore::new(&client, "s").watchdog(false);
    assert!(holder.try_set_permits(2).await?);
    let held = holder.acquire_many(2).await?;

    let first = Semaphore::new(&client, "s").wait_forever();
    let first_wait = tokio::spawn(async move { first.acquire_many(2).await.map(drop) });
    common::wait_until("two queued", || waiters(&redis, "s") == [2]);
    let second = Semaphore::new(&client, "s").wait(30 * SECOND);
    let second_owner = second.owner().to_string();
    let second_wait = tokio::spawn(async move {
        let permit = second.acquire().await?;
        Ok::<_, Error>((permit, second))
    });
    common::wait_until("one queued", || waiters(&redis, "s") == [2, 1]);

    first_wait.abort();
    common::wait_until("the first left", || waiters(&redis, "s") == [1]);
    held.release().await?;
    let (permit, _second) = tokio::time::timeout(5 * SECOND, second_wait)
        .await
        .expect("granted")
        .expect("task")?;
    let info = sem_info(&redis, "s").expect("exists");
    assert_eq!(info.holders, vec![(second_owner, 1)]);
    assert_eq!((info.available, info.waiters.len()), (1, 0));
    permit.release().await?;
    assert_eq!(available(&redis, "s"), 2);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_cap_ends_the_permits_and_the_guard_says_so() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let admin = Semaphore::new(&client, "s");
    assert!(admin.try_set_permits(4).await?);
    // On the handle's own watchdog connection (the cap is known to the client) and on the
    // shared waiting connection (the server's `lost` message says so).
    for sem in [
        Semaphore::new(&client, "s").max_hold(Duration::from_millis(400)),
        Semaphore::new(&client, "s")
            .max_hold(Duration::from_millis(400))
            .wait(SECOND),
    ] {
        let first = sem.acquire().await?;
        // A further grant continues the holding: the cap still counts from the first.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let second = sem.acquire().await?;
        assert_eq!(holders_of(&redis, "s", sem.owner()), 2);
        // About 200 ms after the second grant; counted from it, the cap would end at 400.
        tokio::time::timeout(Duration::from_millis(300), second.lost())
            .await
            .expect("the cap of the first grant ends both");
        tokio::time::timeout(SECOND, first.lost())
            .await
            .expect("the first is lost too");
        common::wait_until("the permits back", || available(&redis, "s") == 4);
        assert!(matches!(second.release().await, Err(Error::Lost)));
        assert!(matches!(first.release().await, Err(Error::Lost)));
        assert_eq!(available(&redis, "s"), 4);
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_that_races_the_grant_gives_every_permit_back() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let holder = Semaphore::new(&client, "s").watchdog(false);
    assert!(holder.try_set_permits(3).await?);
    for watchdog in [false, true] {
        for _round in 0..15 {
            let held = holder.acquire_many(3).await?;
            let waiter = Semaphore::new(&client, "s")
                .wait(30 * SECOND)
                .watchdog(watchdog);
            let task = tokio::spawn(async move { waiter.acquire_many(2).await.map(drop) });
            common::wait_until("two queued", || waiters(&redis, "s") == [2]);
            // Whichever comes first, the grant or the cancel: all three permits come back.
            let (release, ()) = tokio::join!(held.release(), async { task.abort() });
            release?;
            common::wait_until("every permit back", || {
                sem_info(&redis, "s").is_some_and(|info| {
                    info.available == 3 && info.holders.is_empty() && info.waiters.is_empty()
                })
            });
        }
    }
    Ok(())
}
