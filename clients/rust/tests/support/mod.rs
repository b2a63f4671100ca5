//! What the client tests add to the module's fixture (`tests/common`, included by each test
//! file): the module path, a `redis::Client` per server, a look at a lock, and a TCP proxy
//! that breaks connections on cue.
#![allow(dead_code)]

pub mod failover;
pub mod holder;
pub mod proxy;
pub mod topology;

use crate::common::{Server, ServerBuilder, Value};
use std::path::PathBuf;
use std::sync::Once;

/// The fixture finds the module through `RLOCK_MODULE`, or else builds it relative to the
/// crate under test, which here is the client. Point it at the workspace's module instead.
pub fn use_workspace_module() {
    static SET: Once = Once::new();
    SET.call_once(|| {
        if std::env::var_os("RLOCK_MODULE").is_some() {
            return;
        }
        let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let module = workspace.join("target/release/librlock.so");
        assert!(
            module.exists(),
            "{} is missing: run `make build` at the workspace root, or clients/rust/test.sh",
            module.display()
        );
        // Set once, before any server starts and so before anything reads it.
        std::env::set_var("RLOCK_MODULE", module);
    });
}

/// A fresh server with the module.
pub fn server() -> Server {
    builder().start()
}

/// A server builder for one with settings.
pub fn builder() -> ServerBuilder {
    use_workspace_module();
    Server::builder()
}

pub fn client(server: &Server) -> redis::Client {
    client_at(server.port)
}

pub fn client_at(port: u16) -> redis::Client {
    redis::Client::open(format!("redis://127.0.0.1:{port}/")).expect("client")
}

/// `RLOCK.INFO key` as (owner, holds, watchdog client id), or `None` when not locked.
pub fn lock_info(server: &Server, key: &str) -> Option<(String, i64, Option<i64>)> {
    let info = server.conn().cmd(&["RLOCK.INFO", key]);
    if info.is_nil() {
        return None;
    }
    let watchdog = match info.field("watchdog") {
        Value::Nil => None,
        id => Some(id.int()),
    };
    Some((
        info.field("owner").text(),
        info.field("holds").int(),
        watchdog,
    ))
}

/// The number of waiters in the lock's queue (`RLOCK.INFO`'s `waiters`; 0 when not locked).
pub fn waiters(server: &Server, key: &str) -> i64 {
    let info = server.conn().cmd(&["RLOCK.INFO", key]);
    if info.is_nil() {
        return 0;
    }
    info.field("waiters").int()
}

/// Waits (up to 10 s) until the lock's queue holds exactly `n` waiters.
pub fn wait_waiters(server: &Server, key: &str, n: i64) {
    crate::common::wait_until(&format!("{n} waiters at {key}"), || {
        waiters(server, key) == n
    });
}

/// The lock's hold count, or `None` when not locked.
pub fn holds(server: &Server, key: &str) -> Option<i64> {
    lock_info(server, key).map(|(_, holds, _)| holds)
}

/// The `CLIENT ID` of the connection the lock's watchdog is bound to.
pub fn bound_to(server: &Server, key: &str) -> Option<i64> {
    lock_info(server, key).and_then(|(_, _, watchdog)| watchdog)
}

/// Kills the connection with this `CLIENT ID`.
pub fn kill_client(server: &Server, id: i64) {
    server
        .conn()
        .cmd(&["CLIENT", "KILL", "ID", &id.to_string()]);
}

/// `RWLOCK.INFO key`'s holders as (owner, mode, holds), in the server's order (empty when
/// free).
pub fn rw_holders(server: &Server, key: &str) -> Vec<(String, String, i64)> {
    let info = server.conn().cmd(&["RWLOCK.INFO", key]);
    if info.is_nil() {
        return Vec::new();
    }
    info.field("holders")
        .items()
        .iter()
        .map(|h| {
            (
                h.field("owner").text(),
                h.field("mode").text(),
                h.field("holds").int(),
            )
        })
        .collect()
}

/// `RWLOCK.INFO key`'s (`waiting_readers`, `waiting_writers`); (0, 0) when free.
pub fn rw_waiting(server: &Server, key: &str) -> (i64, i64) {
    let info = server.conn().cmd(&["RWLOCK.INFO", key]);
    if info.is_nil() {
        return (0, 0);
    }
    (
        info.field("waiting_readers").int(),
        info.field("waiting_writers").int(),
    )
}

/// What `RSEM.INFO` shows of a semaphore.
#[derive(Debug, PartialEq, Eq)]
pub struct SemInfo {
    pub available: i64,
    /// (owner, permits), in the server's order.
    pub holders: Vec<(String, i64)>,
    /// The permits each waiter asks for, in queue order.
    pub waiters: Vec<i64>,
}

/// `RSEM.INFO key`, or `None` when the semaphore does not exist.
pub fn sem_info(server: &Server, key: &str) -> Option<SemInfo> {
    let info = server.conn().cmd(&["RSEM.INFO", key]);
    if info.is_nil() {
        return None;
    }
    let holders = info
        .field("holders")
        .items()
        .iter()
        .map(|h| (h.field("owner").text(), h.field("permits").int()))
        .collect();
    let waiters = info
        .field("waiters")
        .items()
        .iter()
        .map(Value::int)
        .collect();
    Some(SemInfo {
        available: info.field("available").int(),
        holders,
        waiters,
    })
}

/// Waiters of every lock on the server that wait by message (`INFO rlock`).
pub fn notified_waiters(server: &Server) -> i64 {
    let count = server.info_field("rlock", "rlock_notified_waiters");
    count.trim().parse().expect("a count")
}

/// Calls the server answered from its request-id memory (`INFO rlock`).
pub fn retries_answered(server: &Server) -> i64 {
    let count = server.info_field("rlock", "rlock_retries_answered");
    count.trim().parse().expect("a count")
}

/// Awaits an acquire that the server must refuse at once (within 10 ms, the bound)
/// with `Error::Deadlock`; returns the cycle it names.
pub async fn refused_at_once<T: std::fmt::Debug>(
    acquire: impl std::future::Future<Output = Result<T, rlock_client::Error>>,
) -> String {
    let started = std::time::Instant::now();
    let refused = acquire.await;
    let took = started.elapsed();
    let Err(rlock_client::Error::Deadlock(cycle)) = refused else {
        panic!("expected a deadlock, got {refused:?}");
    };
    // "At once": far below the waits these tests ask for (5 s), with room for a loaded machine.
    assert!(
        took < std::time::Duration::from_millis(1000),
        "refused after {took:?}"
    );
    cycle
}
