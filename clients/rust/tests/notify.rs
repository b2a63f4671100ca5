//! Waiting acquires (`WAIT ms NOTIFY`, docs/notify.md) on the one RESP3 connection that the
//! waiting handles of a client share, against real redis-server processes with the module.
//! The tests synchronise on server state (`RLOCK.INFO`'s `waiters`, `CLIENT LIST`), never on
//! sleeps; the only sleeps let time pass where passing time is the point (a lease).

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod support;

use rlock_client::{Confirm, Error, Lock, LockGuard};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::proxy::Proxy;
use support::{bound_to, client, client_at, holds, lock_info, server, wait_waiters, waiters};
use tokio::task::JoinHandle;

const SECOND: Duration = Duration::from_secs(1);

/// A waiting acquire in a task of its own: it gives back the guard with its handle.
type Acquiring = JoinHandle<Result<(LockGuard, Lock), Error>>;

/// Takes `key` through a handle without watchdog or wait: the holding that waiters queue
/// behind. The handle comes back with the guard, to live as long as the test keeps it.
async fn hold(client: &redis::Client, key: &str) -> Result<(Lock, LockGuard), Error> {
    let holder = Lock::new(client, key).watchdog(false);
    let held = holder.acquire().await?;
    Ok((holder, held))
}

/// Starts `waiter.acquire()` in a task and returns once its key's queue holds `waiters`.
fn queue(redis: &common::Server, waiter: Lock, waiters: i64) -> Acquiring {
    let key = waiter.key().to_string();
    let task = tokio::spawn(async move {
        let guard = waiter.acquire().await?;
        Ok((guard, waiter))
    });
    wait_waiters(redis, &key, waiters);
    task
}

/// What a task ended with, which must come within 5 s (else `what` says what did not come).
async fn outcome<T>(task: JoinHandle<T>, what: &str) -> T {
    tokio::time::timeout(5 * SECOND, task)
        .await
        .expect(what)
        .expect("task")
}

/// Releases `held`, which the waiter of `task` queues behind, and returns what the waiter got.
async fn release_to(
    held: LockGuard,
    task: Acquiring,
    what: &str,
) -> Result<(LockGuard, Lock), Error> {
    held.release().await?;
    outcome(task, what).await
}

/// `CLIENT LIST` as (id, the rest of the line) per connection.
fn clients(redis: &common::Server) -> Vec<(i64, String)> {
    let list = redis.conn().cmd(&["CLIENT", "LIST"]).text();
    list.lines()
        .map(|line| {
            let id = line
                .split(' ')
                .find_map(|field| field.strip_prefix("id="))
                .and_then(|id| id.parse().ok())
                .expect("an id");
            (id, line.to_string())
        })
        .collect()
}

/// The ids of the connections subscribed to a channel: the notify connections.
fn subscribed(redis: &common::Server) -> Vec<i64> {
    clients(redis)
        .into_iter()
        .filter(|(_, line)| line.split(' ').any(|field| field == "sub=1"))
        .map(|(id, _)| id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_waits_share_one_connection_and_are_granted_in_order() -> Result<(), Error> {
    const KEYS: usize = 10;
    const PER_KEY: usize = 10;
    let redis = server();
    let client = client(&redis);
    let keys: Vec<String> = (0..KEYS).map(|k| format!("queue:{k}")).collect();

    let mut holders = Vec::new();
    for key in &keys {
        let holder = Lock::new(&client, key.as_str()).watchdog(false);
        let guard = holder.acquire().await?;
        holders.push((holder, guard));
    }
    let connections_before = clients(&redis).len();

    // Queue the waiters one at a time, so that the queue order is known: position p of each
    // key is queued after position p - 1 (watched in RLOCK.INFO).
    let grants = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for position in 0..PER_KEY {
        for key in &keys {
            let lock = Lock::new(&client, key.as_str()).wait(60 * SECOND);
            let (key, grants) = (key.clone(), grants.clone());
            tasks.push(tokio::spawn(async move {
                let guard = lock.acquire().await?;
                grants.lock().unwrap().push((key, position, guard.token()));
                guard.release().await
            }));
        }
        for key in &keys {
            wait_waiters(&redis, key, position as i64 + 1);
        }
    }

    // A hundred waits, and no connection blocked: one more connection, subscribed.
    assert_eq!(redis.blocked_clients(), 0);
    let notify_connections = subscribed(&redis);
    assert_eq!(notify_connections.len(), 1, "{:?}", clients(&redis));
    assert_eq!(clients(&redis).len(), connections_before + 1);

    // The shared connection runs other commands meanwhile: waiting handles on free keys hold
    // at once, re-enter and release over it.
    for round in 0..20 {
        let other = Lock::new(&client, format!("free:{round}")).wait(SECOND);
        let outer = other.acquire().await?;
        let inner = other.acquire().await?;
        assert_eq!(inner.token(), outer.token());
        assert_eq!(holds(&redis, &format!("free:{round}")), Some(2));
        inner.release().await?;
        outer.release().await?;
        assert_eq!(lock_info(&redis, &format!("free:{round}")), None);
    }
    assert_eq!(grants.lock().unwrap().len(), 0);
    assert_eq!(subscribed(&redis), notify_connections);

    // Release every holder: each queue drains in its order, one grant after the other.
    let first_tokens: Vec<u64> = holders.iter().map(|(_, guard)| guard.token()).collect();
    for (_, guard) in holders.drain(..) {
        guard.release().await?;
    }
    for task in tasks {
        task.await.expect("task")?;
    }
    let grants = grants.lock().unwrap().clone();
    assert_eq!(grants.len(), KEYS * PER_KEY);
    for (k, key) in keys.iter().enumerate() {
        let of_key: Vec<(usize, u64)> = grants
            .iter()
            .filter(|(granted, _, _)| granted == key)
            .map(|(_, position, token)| (*position, *token))
            .collect();
        let positions: Vec<usize> = of_key.iter().map(|(position, _)| *position).collect();
        assert_eq!(positions, (0..PER_KEY).collect::<Vec<_>>(), "FIFO at {key}");
        let mut last = first_tokens[k];
        for (_, token) in of_key {
            assert!(token > last, "tokens grow at {key}");
            last = token;
        }
        assert_eq!(lock_info(&redis, key), None);
    }
    // The last waiting handle is gone: so is the shared connection.
    common::wait_until("the shared connection closed", || {
        subscribed(&redis).is_empty()
    });
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_that_races_the_grant_leaves_nothing_held() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let holder = Lock::new(&client, "k").watchdog(false);
    for watchdog in [false, true] {
        for _round in 0..15 {
            let held = holder.acquire().await?;
            let waiter = Lock::new(&client, "k").wait(30 * SECOND).watchdog(watchdog);
            let task = tokio::spawn(async move { waiter.acquire().await.map(drop) });
            wait_waiters(&redis, "k", 1);
            // Whichever comes first, the grant or the cancel: nothing stays held or queued.
            let (release, ()) = tokio::join!(held.release(), async { task.abort() });
            release?;
            common::wait_until("the lock free again", || {
                lock_info(&redis, "k").is_none() && waiters(&redis, "k") == 0
            });
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watchdog_grant_is_confirmed_and_renewed_past_its_lease() -> Result<(), Error> {
    // The server stops renewing a binding whose connection was silent for 1.5 s: only the
    // client's PING (every 500 ms) on the shared connection keeps these locks past their
    // 300 ms lease, and a grant is renewed only once the client confirmed it.
    let redis = support::builder()
        .module_args(&["watchdog-idle-ms", "1500"])
        .start();
    let client = client(&redis);
    let (_holder, held) = hold(&client, "k").await?;

    let lease = Duration::from_millis(300);
    let waiter = Lock::new(&client, "k").wait(30 * SECOND).lease(lease);
    let task = queue(&redis, waiter, 1);
    let (granted, waiter) = release_to(held, task, "granted on release").await?;
    let shared = subscribed(&redis);
    assert_eq!(shared.len(), 1);
    assert_eq!(
        bound_to(&redis, "k"),
        Some(shared[0]),
        "bound to the shared connection"
    );

    // A waiting handle that holds at once: bound to the same connection.
    let at_once = Lock::new(&client, "free").wait(SECOND).lease(lease);
    let immediate = at_once.acquire().await?;
    assert_eq!(bound_to(&redis, "free"), Some(shared[0]));

    tokio::time::sleep(4 * SECOND).await;
    for key in ["k", "free"] {
        assert_eq!(holds(&redis, key), Some(1), "{key} renewed past its lease");
    }
    assert!(!granted.is_lost() && !immediate.is_lost());

    // A re-entry through the waiting handle keeps the holding and its binding.
    let again = waiter.acquire().await?;
    assert_eq!(again.token(), granted.token());
    assert_eq!(holds(&redis, "k"), Some(2));
    again.release().await?;
    granted.release().await?;
    immediate.release().await?;
    assert_eq!(lock_info(&redis, "k"), None);
    assert_eq!(lock_info(&redis, "free"), None);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_survives_its_connection_dropping() -> Result<(), Error> {
    let redis = server();
    let proxy = Proxy::start(redis.port).await;
    let (direct, proxied) = (client(&redis), client_at(proxy.port));
    let (_holder, held) = hold(&direct, "k").await?;

    let task = queue(&redis, Lock::new(&proxied, "k").wait(30 * SECOND), 1);
    let before = subscribed(&redis);
    assert_eq!(before.len(), 1);

    // The client's end breaks while the server's stays open: the client opens a new
    // connection, subscribes it, and sends the same acquire (same id) again.
    proxy.sever_client_ends();
    common::wait_until("a new subscribed connection", || {
        subscribed(&redis).iter().any(|id| !before.contains(id))
    });
    // Now the old connection closes on the server too: its queue entry, if still there,
    // goes with it, and the one from the new connection stays.
    proxy.close_kept();
    common::wait_until("the old connection gone", || {
        !clients(&redis).iter().any(|(id, _)| before.contains(id))
    });
    wait_waiters(&redis, "k", 1);

    let (guard, _waiter) = release_to(held, task, "granted after the reconnect").await?;
    assert_eq!(holds(&redis, "k"), Some(1));
    guard.release().await?;
    assert_eq!(lock_info(&redis, "k"), None);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_acquire_whose_reply_was_lost_is_retried_once() -> Result<(), Error> {
    let redis = server();
    let proxy = Proxy::start(redis.port).await;
    let (direct, proxied) = (client(&redis), client_at(proxy.port));
    let (_holder, held) = hold(&direct, "k").await?;

    // The acquire queues, its `WAITING` is lost with the connection (both ends close, so the
    // server drops the entry), and the client sends it again on a fresh connection.
    let waiter = Lock::new(&proxied, "k").wait(30 * SECOND);
    proxy.drop_reply_to("RLOCK.ACQUIRE");
    // Queued: the first send, or already the retry (the grant below must reach it either way:
    // an entry granted before its connection closed is answered to the retry by its id).
    let task = queue(&redis, waiter, 1);
    let (guard, _waiter) = release_to(held, task, "granted after the retry").await?;
    assert_eq!(holds(&redis, "k"), Some(1));
    guard.release().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_server_closes_the_shared_connection_holdings_are_lost_and_waits_queue_again(
) -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let (_holder, held) = hold(&client, "busy").await?;

    // A watchdog holding and a wait, both on the shared connection.
    let owner = Lock::new(&client, "mine").wait(SECOND);
    let mine = owner.acquire().await?;
    let task = queue(&redis, Lock::new(&client, "busy").wait(30 * SECOND), 1);
    let shared = subscribed(&redis);
    assert_eq!(shared.len(), 1);

    // The server ends the holding as the connection closes (re-binding finds nothing), and
    // drops the wait; the client queues it again from a new connection.
    support::kill_client(&redis, shared[0]);
    tokio::time::timeout(SECOND, mine.lost())
        .await
        .expect("the loss is reported at once");
    assert_eq!(lock_info(&redis, "mine"), None);
    common::wait_until("a new shared connection", || {
        subscribed(&redis).iter().any(|id| *id != shared[0])
    });
    wait_waiters(&redis, "busy", 1);
    let (guard, _waiter) = release_to(held, task, "granted after the reconnect").await?;
    assert!(matches!(mine.release().await, Err(Error::Lost)));
    guard.release().await?;
    assert_eq!(lock_info(&redis, "busy"), None);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_on_a_key_overwritten_by_another_type_fails_with_its_code() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let holder = Lock::new(&client, "k")
        .watchdog(false)
        .lease(Duration::from_millis(300));
    let held = holder.acquire().await?;
    let waiter = Lock::new(&client, "k").wait(30 * SECOND);
    let task = tokio::spawn(async move { waiter.acquire().await.map(drop) });
    wait_waiters(&redis, "k", 1);

    // The `failed` message (at the old lease end at the latest) ends the wait.
    redis.conn().cmd(&["SET", "k", "not a lock"]);
    let failed = outcome(task, "the wait ends").await;
    match failed {
        Err(Error::Redis(err)) => assert_eq!(err.code(), Some("WRONGTYPE"), "{err}"),
        other => panic!("expected WRONGTYPE, got {other:?}"),
    }
    drop(held);
    Ok(())
}

/// A lease grant told by message and read only after its lease ended (CONTRACT.md C4.2, issue
/// 47's finding 10): the proxy holds back what the server sends to the waiter (a paused
/// process, a late subscriber) while the server grants it the lock under a 500 ms lease; the
/// lease ends unconfirmed and another owner takes the lock. Read late, the grant must be
/// confirmed with RENEW, which answers 0: the waiter must not report the lock held beside the
/// other (with confirmation off it did: no RENEW was sent); it reports the loss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_grant_read_after_its_lease_ended_is_not_held() -> Result<(), Error> {
    for (what, confirm) in [("off", Confirm::off()), ("auto", Confirm::auto())] {
        let redis = server();
        let proxy = Proxy::start(redis.port).await;
        let (direct, proxied) = (client(&redis), client_at(proxy.port));
        let (_holder, held) = hold(&direct, "k").await?;
        let waiter = Lock::new(&proxied, "k")
            .watchdog(false)
            .lease(SECOND / 2)
            .wait(30 * SECOND)
            .confirm(confirm);
        let waiting = waiter.owner().to_string();
        let task = queue(&redis, waiter, 1);

        proxy.hold_replies(true);
        held.release().await?;
        common::wait_until("the grant to the waiter", || {
            lock_info(&redis, "k").is_some_and(|(owner, _, _)| owner == waiting)
        });
        common::wait_until("the unread grant's lease to end", || {
            lock_info(&redis, "k").is_none()
        });
        let (other, others) = hold(&direct, "k").await?;
        proxy.hold_replies(false);

        // Read now, the grant is found gone: not held, the waiter reports the loss.
        match outcome(task, "the waiter's answer").await {
            Err(Error::Lost) => {}
            Ok((guard, _)) => panic!(
                "confirm {what}: reported held (token {}) while the other holds the lock",
                guard.token()
            ),
            Err(other) => panic!("confirm {what}: {other:?}, not Error::Lost"),
        }
        let owner = lock_info(&redis, "k").map(|(owner, _, _)| owner);
        assert_eq!(
            owner.as_deref(),
            Some(other.owner()),
            "confirm {what}: the other's"
        );
        others.release().await?;
    }
    Ok(())
}
