//! `Redlock` over several real redis-server processes with the module loaded.

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod support;

use common::Server;
use rlock_client::{Error, Redlock};
use std::time::{Duration, Instant};
use support::{client, lock_info, server};

/// Generous per-server timeouts: the test machine's two cores also run the servers.
fn redlock(servers: &[Server]) -> Redlock {
    let clients: Vec<redis::Client> = servers.iter().map(client).collect();
    Redlock::new(&clients, "orders:42")
        .lease(Duration::from_secs(10))
        .server_timeout(Duration::from_millis(500))
        .retry_count(2)
        .retry_delay(Duration::from_millis(50))
}

fn servers(n: usize) -> Vec<Server> {
    (0..n).map(|_| server()).collect()
}

fn held_on(servers: &[Server]) -> usize {
    servers
        .iter()
        .filter(|server| lock_info(server, "orders:42").is_some())
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_grant_release_and_exclude() -> Result<(), Error> {
    let servers = servers(3);
    let (first, second) = (redlock(&servers), redlock(&servers));

    let guard = first.acquire().await?;
    assert_eq!(held_on(&servers), 3);
    assert!(guard.tokens().iter().all(Option::is_some));
    assert!(guard.validity() > Duration::from_secs(9));
    assert!(matches!(first.acquire().await, Err(Error::AlreadyHeld)));
    assert!(matches!(
        second.acquire().await,
        Err(Error::NoQuorum {
            granted: 0,
            needed: 2
        })
    ));
    assert_eq!(
        held_on(&servers),
        3,
        "the loser's clean-up leaves the holder's lock"
    );

    guard.release().await?;
    assert_eq!(held_on(&servers), 0);
    second.acquire().await?.release().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_one_killed_still_lock() -> Result<(), Error> {
    let mut servers = servers(3);
    let lock = redlock(&servers);
    // Connect to all three first, so that the kill breaks an open connection too.
    lock.acquire().await?.release().await?;
    servers[1].kill();

    let guard = lock.acquire().await?;
    assert_eq!(guard.tokens()[1], None);
    assert!(guard.tokens()[0].is_some() && guard.tokens()[2].is_some());
    assert!(lock_info(&servers[0], "orders:42").is_some());
    guard.release().await?;
    assert!(lock_info(&servers[2], "orders:42").is_none());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_servers_lock_with_two_down_and_refuse_with_three_down() -> Result<(), Error> {
    let mut servers = servers(5);
    let lock = redlock(&servers);
    servers[0].kill();
    servers[3].kill();

    let guard = lock.acquire().await?;
    assert_eq!(guard.tokens().iter().flatten().count(), 3);
    guard.release().await?;

    servers[4].kill();
    let refused = lock.acquire().await;
    assert!(
        matches!(
            refused,
            Err(Error::NoQuorum {
                granted: 2,
                needed: 3
            })
        ),
        "{refused:?}"
    );
    for survivor in [&servers[1], &servers[2]] {
        assert_eq!(lock_info(survivor, "orders:42"), None, "nothing left held");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_redlock_guard_releases_everywhere() -> Result<(), Error> {
    let servers = servers(3);
    let lock = redlock(&servers);
    drop(lock.acquire().await?);
    common::wait_until("released on every server", || held_on(&servers) == 0);
    // The handle may acquire again once the background release is done.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match lock.acquire().await {
            Ok(guard) => return guard.release().await,
            Err(Error::AlreadyHeld) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await
            }
            Err(err) => return Err(err),
        }
    }
}
