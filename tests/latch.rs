//! The count-down latch (RLATCH.*): set once, counted down, opening for every waiter at once;
//! retried countdowns count once; Redisson's latch scripts on the same key.

mod common;
use common::redisson::latch as redisson;
use common::{snapshot, Pending, Server};
use std::time::{Duration, Instant};

#[test]
fn a_latch_is_set_once_counts_down_and_opens() {
    let server = Server::start();
    let mut c = server.conn();
    assert_eq!(c.q("RLATCH.AWAIT l").int(), 1, "never set: open");
    assert_eq!(c.q("RLATCH.COUNTDOWN l").int(), 0, "unset: nothing written");
    assert_eq!(c.q("EXISTS l").int(), 0);
    assert_eq!(c.q("RLATCH.SET l 2").int(), 1);
    assert_eq!(c.q("RLATCH.SET l 9").int(), 0, "only when not set");
    assert_eq!(c.q("RLATCH.COUNT l").int(), 2);
    assert!(
        c.q("RLATCH.AWAIT l").is_nil(),
        "closed, no WAIT: nil at once"
    );
    let started = Instant::now();
    assert!(c.q("RLATCH.AWAIT l WAIT 200").is_nil());
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(c.q("RLATCH.COUNTDOWN l").int(), 1);
    assert_eq!(c.q("RLATCH.COUNTDOWN l").int(), 0);
    assert_eq!(c.q("EXISTS l").int(), 0, "deleted at 0, as Redisson does");
    assert_eq!(c.q("RLATCH.COUNT l").int(), 0);
    assert_eq!(c.q("RLATCH.AWAIT l").int(), 1);
}

#[test]
fn a_latch_opens_for_fifty_waiters_at_once() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLATCH.SET l 1");
    let waiters: Vec<Pending> = (0..50)
        .map(|_| Pending::send(&server, "RLATCH.AWAIT l WAIT 0"))
        .collect();
    server.wait_blocked(50);
    assert_eq!(c.q("RLATCH.COUNTDOWN l").int(), 0);
    for waiter in waiters {
        assert_eq!(waiter.reply().int(), 1);
    }
    assert_eq!(server.blocked_clients(), 0);
}

#[test]
fn a_retried_countdown_counts_once() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLATCH.SET l 3");
    let mut lost = server.conn();
    lost.send(&["RLATCH.COUNTDOWN", "l", "ID", "task-7"])
        .expect("send");
    drop(lost);
    common::wait_until("the lost countdown to apply", || {
        c.q("RLATCH.COUNT l").int() == 2
    });
    assert_eq!(
        c.q("RLATCH.COUNTDOWN l ID task-7").int(),
        2,
        "answered, not counted"
    );
    assert_eq!(c.q("RLATCH.COUNT l").int(), 2);
    assert_eq!(c.q("RLATCH.COUNTDOWN l ID task-8").int(), 1);
    assert_eq!(server.stat("retries_answered"), 1);
}

#[test]
fn redisson_and_rlatch_clients_share_a_latch_both_ways() {
    let server = Server::start();
    let mut c = server.conn();
    // Redisson sets and opens; RLATCH waiters wake.
    assert!(redisson::try_set_count(&mut c, "l", 1));
    assert_eq!(c.q("RLATCH.COUNT l").int(), 1);
    let waiter = Pending::send(&server, "RLATCH.AWAIT l WAIT 5000");
    server.wait_blocked(1);
    redisson::count_down(&mut c, "l");
    assert_eq!(waiter.reply().int(), 1);
    // RLATCH sets and opens; Redisson's awaiting clients hear the zero-count message.
    let mut sub = server.conn();
    sub.cmd(&["SUBSCRIBE", &redisson::channel("m")]);
    assert_eq!(c.q("RLATCH.SET m 1").int(), 1);
    assert_eq!(sub.read().expect("new count").items()[2].text(), "1");
    assert!(!redisson::try_set_count(&mut c, "m", 5), "already set");
    assert_eq!(c.q("RLATCH.COUNTDOWN m").int(), 0);
    assert_eq!(sub.read().expect("zero count").items()[2].text(), "0");
}

#[test]
fn bad_input_and_other_types_change_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLATCH.SET l 2");
    c.q("HSET h f v");
    c.q("SET s text");
    let before = snapshot(&mut c);
    for (line, expected) in [
        ("RLATCH.SET l", "ERR wrong number of arguments"),
        (
            "RLATCH.SET n 0",
            "ERR count must be an integer of at least 1",
        ),
        (
            "RLATCH.SET n x",
            "ERR count must be an integer of at least 1",
        ),
        ("RLATCH.COUNTDOWN l ID", "ERR ID needs a value"),
        ("RLATCH.COUNTDOWN l PX 5", "ERR unknown option 'PX'"),
        ("RLATCH.AWAIT l WAIT -1", "ERR WAIT must be between"),
        ("RLATCH.COUNT h", "WRONGTYPE"),
        ("RLATCH.COUNTDOWN h", "WRONGTYPE"),
        (
            "RLATCH.COUNTDOWN s",
            "ERR the value at this key is not a semaphore or latch count",
        ),
        ("RLOCK.ACQUIRE l owner", "WRONGTYPE"),
        ("RWLOCK.ACQUIRE l owner READ", "WRONGTYPE"),
    ] {
        let error = c.q(line).err();
        assert!(error.starts_with(expected), "{line}: {error}");
    }
    assert_eq!(snapshot(&mut c), before);
}

#[test]
fn a_replica_without_the_module_matches() {
    let master = Server::builder().master();
    let replica = Server::builder().without_module().replica_of(&master);
    let mut c = master.conn();
    c.q("RLATCH.SET a 3");
    c.q("RLATCH.COUNTDOWN a");
    c.q("RLATCH.SET b 1");
    c.q("RLATCH.COUNTDOWN b");
    common::sync_replica(&mut c);
    let expected = snapshot(&mut c);
    assert_eq!(expected.len(), 1);
    assert_eq!(snapshot(&mut replica.conn()), expected);
}
