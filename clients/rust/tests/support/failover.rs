//! What the Sentinel and Cluster tests share: a fenced resource that refuses two holders, the
//! lock's state as the primary shows it (as admin), and the scenario of a holder and two
//! waiters across a failover, driven through the public API only.

use super::topology::Node;
use redis::Value;
use rlock_client::{Error, Lock, Servers};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A resource that checks fencing tokens: it refuses a token lower than the highest it saw,
/// and fails the test if two holders are ever inside at once.
#[derive(Default)]
pub struct Fence {
    highest: Mutex<u64>,
    inside: AtomicUsize,
}

impl Fence {
    /// A holder with `token` starts writing; false when the token is stale.
    pub fn enter(&self, token: u64) -> bool {
        let mut highest = self.highest.lock().unwrap();
        if token < *highest {
            return false;
        }
        *highest = token;
        let before = self.inside.fetch_add(1, Ordering::SeqCst);
        assert_eq!(before, 0, "the resource accepted two holders at once");
        true
    }

    pub fn leave(&self) {
        self.inside.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A field of an `RLOCK.INFO`-shaped reply (RESP2: names and values alternate).
pub fn field(info: &Value, name: &str) -> Value {
    let Value::Array(items) = info else {
        return Value::Nil;
    };
    items
        .chunks(2)
        .find(|pair| matches!(&pair[0], Value::BulkString(bytes) if bytes == name.as_bytes()))
        .map_or(Value::Nil, |pair| pair[1].clone())
}

/// `RLOCK.INFO key` on `node`: nil when free.
pub fn lock_info(node: &Node, key: &str) -> Value {
    redis::cmd("RLOCK.INFO")
        .arg(key)
        .query(&mut node.conn())
        .unwrap_or(Value::Nil)
}

pub fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        _ => None,
    }
}

pub fn text(value: &Value) -> Option<String> {
    redis::from_redis_value(value.clone()).ok()
}

/// Polls `cond` every 10 ms for up to `limit` (blocking this worker thread: the topology and
/// admin calls are synchronous).
pub fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    tokio::task::block_in_place(|| {
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    });
}

/// A holder (confirmed by the replica) and two waiters (each on servers of its own, so on a
/// `NOTIFY` connection of its own), then `disrupt` (a failover, or a kill and promotion);
/// `primary` names the key's primary as the topology says now. The holder keeps the lock on
/// the new primary (re-bound) or is told it lost it; the waiters re-join and are served after
/// it, one at a time, with rising tokens; the fence never sees two holders.
pub async fn holder_and_waiters_across(
    servers: impl Fn() -> Servers,
    key: &str,
    primary: impl Fn() -> Node,
    disrupt: impl FnOnce(),
) {
    let fence = Arc::new(Fence::default());
    let holder = Lock::new(servers(), key);
    let held = holder
        .acquire()
        .await
        .expect("the holder acquires, confirmed");
    assert!(fence.enter(held.token()));
    let mut waiters = Vec::new();
    for _ in 0..2 {
        let (servers, key, fence) = (servers(), key.to_string(), fence.clone());
        waiters.push(tokio::spawn(async move {
            let lock = Lock::new(&servers, key).wait(Duration::from_secs(60));
            let guard = lock.acquire().await.expect("a waiter is served");
            assert!(fence.enter(guard.token()), "a waiter's token is stale");
            tokio::time::sleep(Duration::from_millis(20)).await;
            fence.leave();
            let token = guard.token();
            guard.release().await.expect("the waiter releases");
            token
        }));
    }
    let primary = &primary;
    let queued = |n: i64| move || int(&field(&lock_info(&primary(), key), "waiters")) == Some(n);
    wait_for("two waiters queued", Duration::from_secs(10), queued(2));

    tokio::task::block_in_place(disrupt);

    // The new primary has the confirmed holding; the holder re-binds it there (or says lost).
    let limit = Duration::from_secs(20);
    wait_for("the holder re-bound or told lost", limit, || {
        let info = lock_info(&primary(), key);
        held.is_lost() || int(&field(&info, "watchdog")).is_some()
    });
    let info = lock_info(&primary(), key);
    let kept = !held.is_lost();
    if kept {
        assert_eq!(
            text(&field(&info, "owner")).as_deref(),
            Some(holder.owner())
        );
    }
    wait_for("the waiters re-joined", limit, queued(2));
    fence.leave();
    let first = held.token();
    match held.release().await {
        Ok(()) => assert!(kept),
        Err(Error::Lost) => assert!(!kept, "a kept holding was lost at release"),
        Err(other) => panic!("release: {other}"),
    }
    let mut tokens = Vec::new();
    for waiter in waiters {
        tokens.push(waiter.await.expect("the waiter's task"));
    }
    tokens.sort();
    eprintln!("{key}: holder {first} kept: {kept}; waiters then {tokens:?}");
    assert!(tokens[0] > first, "tokens rise: {first} then {tokens:?}");
    assert!(tokens[1] > tokens[0]);
    wait_for("the lock free", limit, || {
        lock_info(&primary(), key) == Value::Nil
    });
}

/// With the only replica stopped, an acquisition is not reported held: it fails with
/// `NotConfirmed` after about the confirmation timeout (1 s), and leaves nothing held.
pub async fn unconfirmed_while_replica_stopped(servers: &Servers, key: &str, primary: &Node) {
    let lock = Lock::new(servers, key);
    let started = Instant::now();
    let refused = lock.acquire().await;
    let took = started.elapsed();
    match refused {
        Err(Error::NotConfirmed {
            confirmed: 0,
            required: 1,
            undone: true,
            ..
        }) => {}
        other => panic!("expected NotConfirmed, got {other:?}"),
    }
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(4),
        "failed after {took:?}"
    );
    assert_eq!(lock_info(primary, key), Value::Nil, "left held");
}
