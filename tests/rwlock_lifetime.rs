//! The read-write lock's lifetime: WATCHDOG per holding (each reader bound to its own
//! connection), request ids, hold caps.

mod common;
use common::{wait_until, Conn, Pending, Server};
use std::thread;
use std::time::{Duration, Instant};

fn holders(c: &mut Conn, key: &str) -> Vec<common::Value> {
    let info = c.cmd(&["RWLOCK.INFO", key]);
    if info.is_nil() {
        return vec![];
    }
    info.field("holders").items()
}

fn holder(c: &mut Conn, key: &str, owner: &str) -> Option<common::Value> {
    holders(c, key)
        .into_iter()
        .find(|h| h.field("owner").text() == owner)
}

#[test]
fn each_reader_lives_with_its_own_connection() {
    let server = Server::start();
    let (mut r1, mut r2) = (server.conn(), server.conn());
    r1.q("RWLOCK.ACQUIRE k r1 READ PX 300 WATCHDOG");
    r2.q("RWLOCK.ACQUIRE k r2 READ PX 300 WATCHDOG");
    let writer = Pending::send(&server, "RWLOCK.ACQUIRE k w WRITE PX 5000 WAIT 10000").reply_when();
    server.wait_blocked(1);
    thread::sleep(Duration::from_millis(1000));
    let mut c = server.conn();
    let r2_id = r2.q("CLIENT ID").int();
    assert_eq!(
        holders(&mut c, "k").len(),
        2,
        "both readers renewed past their lease"
    );
    assert_eq!(
        holder(&mut c, "k", "r2")
            .expect("a holder")
            .field("watchdog")
            .int(),
        r2_id
    );
    r1.q("QUIT");
    wait_until("r1's holding to end", || {
        holder(&mut c, "k", "r1").is_none()
    });
    assert!(holder(&mut c, "k", "r2").is_some(), "r2 still reads");
    assert_eq!(server.blocked_clients(), 1, "the writer still waits for r2");
    let closed = Instant::now();
    r2.q("QUIT");
    let (token, granted) = writer.join().expect("writer");
    assert!(token.int() > 0);
    let delay = granted - closed;
    assert!(
        delay < Duration::from_millis(50),
        "{delay:?} (generous bound)"
    );
    assert_eq!(server.stat("watchdog_releases"), 2);
}

#[test]
fn a_downgraded_writer_keeps_its_watchdog_as_a_reader() {
    let server = Server::start();
    let mut holder_conn = server.conn();
    holder_conn.q("RWLOCK.ACQUIRE k a WRITE PX 300 WATCHDOG");
    holder_conn.q("RWLOCK.ACQUIRE k a READ PX 300");
    assert_eq!(holder_conn.q("RWLOCK.RELEASE k a WRITE").int(), 0);
    thread::sleep(Duration::from_millis(900));
    let mut c = server.conn();
    let reader = holder(&mut c, "k", "a").expect("still reading");
    assert_eq!(reader.field("mode").text(), "read");
    assert!(!reader.field("watchdog").is_nil());
    holder_conn.q("QUIT");
    wait_until("the lock to be free", || c.q("EXISTS k").int() == 0);
}

#[test]
fn retried_read_write_calls_do_not_count_twice() {
    let server = Server::start();
    let mut lost = server.conn();
    lost.send(&["RWLOCK.ACQUIRE", "k", "a", "READ", "ID", "acq-1"])
        .expect("send");
    drop(lost);
    let mut c = server.conn();
    wait_until("the lost acquire to apply", || {
        holder(&mut c, "k", "a").is_some()
    });
    let token = holder(&mut c, "k", "a")
        .expect("a holder")
        .field("token")
        .int();
    assert_eq!(c.q("RWLOCK.ACQUIRE k a READ ID acq-1").int(), token);
    assert_eq!(
        holder(&mut c, "k", "a")
            .expect("a holder")
            .field("holds")
            .int(),
        1
    );
    c.q("RWLOCK.ACQUIRE k a READ ID acq-2");
    assert_eq!(c.q("RWLOCK.RELEASE k a READ ID rel-1").int(), 1);
    assert_eq!(
        c.q("RWLOCK.RELEASE k a READ ID rel-1").int(),
        1,
        "answered, not applied"
    );
    assert_eq!(
        holder(&mut c, "k", "a")
            .expect("a holder")
            .field("holds")
            .int(),
        1
    );
    assert_eq!(c.q("RWLOCK.RELEASE k a READ ID rel-2").int(), 0);
    c.q("RWLOCK.ACQUIRE k b READ");
    assert_eq!(
        c.q("RWLOCK.RELEASE k a READ ID rel-2").int(),
        0,
        "a full release, retried"
    );
    assert!(
        holder(&mut c, "k", "b").is_some(),
        "another reader is untouched"
    );
    assert_eq!(server.stat("retries_answered"), 3);
}

#[test]
fn a_capped_reader_ends_on_time_and_the_writer_gets_the_lock() {
    let server = Server::start();
    let mut reader = server.conn();
    let granted = Instant::now();
    reader.q("RWLOCK.ACQUIRE k r READ PX 300 WATCHDOG MAXHOLD 1000");
    let writer = Pending::send(&server, "RWLOCK.ACQUIRE k w WRITE WAIT 10000").reply_when();
    server.wait_blocked(1);
    let mut pings = server.conn();
    while server.blocked_clients() == 1 && granted.elapsed() < Duration::from_secs(5) {
        pings.q("PING");
        reader.q("PING");
        thread::sleep(Duration::from_millis(20));
    }
    let (token, at) = writer.join().expect("writer");
    assert!(token.int() > 0);
    let ended = at - granted;
    // The cap is the server's grant time in whole ms + 1000: up to 1 ms before this clock's.
    assert!(ended >= Duration::from_millis(998), "{ended:?}");
    assert!(
        ended < Duration::from_millis(1300),
        "{ended:?} (generous bound)"
    );
}

#[test]
fn a_replica_without_the_module_matches_after_read_write_lifetimes() {
    let master = Server::builder().master();
    let replica = Server::builder().without_module().replica_of(&master);
    let mut c = master.conn();
    let mut reader = master.conn();
    reader.q("RWLOCK.ACQUIRE k r READ PX 3000 WATCHDOG ID x1");
    reader.q("RWLOCK.ACQUIRE k r READ PX 3000 ID x2");
    reader.q("RWLOCK.RELEASE k r READ ID x3");
    c.q("RWLOCK.ACQUIRE k s READ PX 60000 MAXHOLD 30000");
    let mut closing = master.conn();
    closing.q("RWLOCK.ACQUIRE gone w WRITE PX 30000 WATCHDOG");
    closing.q("QUIT");
    wait_until("the closed writer's lock to go", || {
        c.q("EXISTS gone").int() == 0
    });
    wait_until("a watchdog renewal", || {
        master.stat("watchdog_renewals") > 0
    });
    let (expected, replicated) = common::paused_snapshots(&mut c, &replica);
    assert!(
        expected.len() >= 2,
        "the lock and its timeout keys: {expected:?}"
    );
    assert_eq!(replicated, expected);
}

/// A reader whose lease ended leaves the hash (fields and timeout key) within ms with nobody
/// waiting, the TTL following the longest lease left; a RENEW that shortens the other
/// reader's lease does not keep it either.
#[test]
fn a_dead_reader_is_gone_soon_with_nobody_waiting() {
    let server = Server::start();
    let mut c = server.conn();
    let started = Instant::now();
    c.q("RWLOCK.ACQUIRE k a READ PX 300");
    c.q("RWLOCK.ACQUIRE k b READ PX 5000");
    let fields = |c: &mut Conn| {
        c.q("HKEYS k")
            .items()
            .iter()
            .map(|f| f.text())
            .collect::<Vec<_>>()
    };
    assert!(fields(&mut c).contains(&"a".to_string()));
    assert_eq!(c.q("EXISTS {k}:a:rwlock_timeout:1").int(), 1);
    wait_until("reader a's fields and timeout key are gone", || {
        !fields(&mut c).iter().any(|f| f == "a" || f.ends_with(":a"))
            && c.q("EXISTS {k}:a:rwlock_timeout:1").int() == 0
    });
    let gone_after = started.elapsed();
    assert!(
        gone_after < Duration::from_millis(300 + 100),
        "gone {gone_after:?} after the acquire (lease 300 ms)"
    );
    assert_eq!(holders(&mut c, "k").len(), 1);
    let ttl = c.q("PTTL k").int();
    assert!(
        ttl > 4000 && ttl <= 5000,
        "the TTL follows b's lease: {ttl}"
    );

    // b shortens its lease below c's: c's end is watched too, and the TTL follows c.
    c.q("RWLOCK.ACQUIRE k c READ PX 2000");
    c.q("RWLOCK.RENEW k b PX 200");
    wait_until("reader b is gone", || {
        holder(&mut c, "k", "b").is_none() && !fields(&mut c).contains(&"b".to_string())
    });
    let ttl = c.q("PTTL k").int();
    assert!(
        ttl > 1000 && ttl <= 2000,
        "the TTL follows c's lease: {ttl}"
    );
    server.assert_no_crash();
}

/// Leases add up as Redisson's scripts make them (one arithmetic for a mixed fleet): a read
/// re-entry's lease is its own hold's, a release drops the latest hold's, and a write re-entry
/// adds its lease to the time left. Read on PEXPIRETIME, not by sleeping.
#[test]
fn reentries_add_leases_as_redisson_does() {
    let server = Server::start();
    let mut c = server.conn();
    let expiry = |c: &mut Conn, key: &str| c.cmd(&["PEXPIRETIME", key]).int();

    c.q("RWLOCK.ACQUIRE r a READ PX 60000");
    let first = expiry(&mut c, "{r}:a:rwlock_timeout:1");
    c.q("RWLOCK.ACQUIRE r a READ PX 5000");
    assert_eq!(
        expiry(&mut c, "{r}:a:rwlock_timeout:1"),
        first,
        "the first hold keeps its lease"
    );
    let second = expiry(&mut c, "{r}:a:rwlock_timeout:2");
    assert!(
        second < first - 50_000,
        "the second hold has its own: {second} vs {first}"
    );
    assert_eq!(
        expiry(&mut c, "r"),
        first,
        "a re-entry never shortens the lock"
    );
    c.q("RWLOCK.ACQUIRE r a READ PX 90000");
    let third = expiry(&mut c, "{r}:a:rwlock_timeout:3");
    assert_eq!(
        expiry(&mut c, "r"),
        third,
        "the key lasts as long as the longest hold"
    );
    assert_eq!(c.q("RWLOCK.RELEASE r a READ").int(), 2);
    assert_eq!(c.q("EXISTS {r}:a:rwlock_timeout:3").int(), 0);
    assert_eq!(
        expiry(&mut c, "r"),
        first,
        "the released hold's lease goes with it"
    );

    c.q("RWLOCK.ACQUIRE w b WRITE PX 10000");
    let before = expiry(&mut c, "w");
    c.q("RWLOCK.ACQUIRE w b WRITE PX 1000");
    let after = expiry(&mut c, "w");
    assert!(
        (before + 1000..=before + 1100).contains(&after),
        "a write re-entry adds its lease to the time left: {before} -> {after}"
    );
    let ttl = holder(&mut c, "w", "b")
        .expect("the writer")
        .field("ttl")
        .int();
    assert!(ttl > 10_000, "INFO shows the added lease: {ttl}");
}
