//! Request ids: a call retried after its reply was lost answers as the first one did and
//! never counts twice.

mod common;
use common::{wait_until, Conn, Pending, Server};

/// Sends a call and drops the connection without reading the reply, as a client whose
/// connection broke would; returns once the server has applied it (`applied`).
fn send_and_lose_reply(server: &Server, line: &str, mut applied: impl FnMut(&mut Conn) -> bool) {
    let mut lost = server.conn();
    lost.send(&line.split_whitespace().collect::<Vec<_>>())
        .expect("send");
    drop(lost);
    let mut c = server.conn();
    wait_until("the lost call to be applied", || applied(&mut c));
}

fn holds(c: &mut Conn, key: &str) -> i64 {
    let info = c.cmd(&["RLOCK.INFO", key]);
    if info.is_nil() {
        0
    } else {
        info.field("holds").int()
    }
}

#[test]
fn a_retried_acquire_whose_reply_was_lost_does_not_reenter() {
    let server = Server::start();
    send_and_lose_reply(&server, "RLOCK.ACQUIRE k a ID req-1", |c| {
        holds(c, "k") == 1
    });
    let mut c = server.conn();
    let token = c.q("RLOCK.INFO k").field("token").int();
    assert_eq!(
        c.q("RLOCK.ACQUIRE k a ID req-1").int(),
        token,
        "the first call's token"
    );
    assert_eq!(holds(&mut c, "k"), 1, "one release frees it");
    assert_eq!(c.q("RLOCK.RELEASE k a").int(), 0);
    assert_eq!(server.stat("retries_answered"), 1);
}

#[test]
fn a_retried_release_whose_reply_was_lost_does_not_count_twice() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k a");
    c.q("RLOCK.ACQUIRE k a");
    send_and_lose_reply(&server, "RLOCK.RELEASE k a ID rel-1", |c| {
        holds(c, "k") == 1
    });
    assert_eq!(
        c.q("RLOCK.RELEASE k a ID rel-1").int(),
        1,
        "the first call's reply"
    );
    assert_eq!(
        holds(&mut c, "k"),
        1,
        "the nested holder still holds the lock"
    );
}

#[test]
fn a_retried_full_release_answers_zero_and_leaves_the_next_holder_alone() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k a");
    send_and_lose_reply(&server, "RLOCK.RELEASE k a ID rel-2", |c| {
        c.q("EXISTS k").int() == 0
    });
    let token = c.q("RLOCK.ACQUIRE k b").int();
    assert_eq!(c.q("RLOCK.RELEASE k a ID rel-2").int(), 0);
    let info = c.q("RLOCK.INFO k");
    assert_eq!(info.field("owner").text(), "b");
    assert_eq!(info.field("token").int(), token);
    // The same owner taking the lock again is a new holding that the old retry cannot touch.
    c.q("RLOCK.RELEASE k b");
    c.q("RLOCK.ACQUIRE k a");
    assert_eq!(c.q("RLOCK.RELEASE k a ID rel-2").int(), 0);
    assert_eq!(holds(&mut c, "k"), 1);
}

#[test]
fn an_acquire_retried_after_its_holding_ended_is_a_new_call() {
    let server = Server::start();
    let mut c = server.conn();
    let first = c.q("RLOCK.ACQUIRE k a ID x").int();
    c.q("RLOCK.RELEASE k a");
    let second = c.q("RLOCK.ACQUIRE k a ID x").int();
    assert!(second > first, "never the old, dead token");
    c.q("RLOCK.FORCERELEASE k");
    c.q("RLOCK.ACQUIRE k a PX 50 ID y");
    wait_until("the lease to end", || c.q("EXISTS k").int() == 0);
    assert!(c.q("RLOCK.ACQUIRE k a ID y").int() > second);
    assert_eq!(holds(&mut c, "k"), 1);
}

#[test]
fn different_ids_are_different_calls() {
    let server = Server::start();
    let mut c = server.conn();
    let token = c.q("RLOCK.ACQUIRE k a ID a").int();
    assert_eq!(c.q("RLOCK.ACQUIRE k a ID b").int(), token);
    assert_eq!(holds(&mut c, "k"), 2, "a re-entry");
    assert_eq!(c.q("RLOCK.ACQUIRE k a ID a").int(), token);
    assert_eq!(holds(&mut c, "k"), 2, "a retry");
    assert_eq!(c.q("RLOCK.RELEASE k a ID r1").int(), 1);
    assert_eq!(c.q("RLOCK.RELEASE k a ID r2").int(), 0);
    // Calls without an id keep no memory at all.
    c.q("RLOCK.ACQUIRE plain a");
    c.q("RLOCK.ACQUIRE plain a");
    assert_eq!(c.q("HLEN plain").int(), 2, "owner and token only");
}

#[test]
fn a_waiter_granted_with_an_id_gets_the_same_token_on_retry() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k holder");
    let waiter = Pending::send(&server, "RLOCK.ACQUIRE k a WAIT 0 ID w-1");
    server.wait_blocked(1);
    c.q("RLOCK.RELEASE k holder");
    let token = waiter.reply().int();
    assert_eq!(c.q("RLOCK.ACQUIRE k a ID w-1").int(), token);
    assert_eq!(holds(&mut c, "k"), 1);
}

#[test]
fn request_ids_survive_a_failover() {
    let master = Server::builder().master();
    let replica = Server::builder().replica_of(&master);
    let mut m = master.conn();
    let token = m.q("RLOCK.ACQUIRE k a ID acq").int();
    m.q("RLOCK.ACQUIRE k a ID acq2");
    m.q("RLOCK.RELEASE k a ID rel");
    common::sync_replica(&mut m);
    let mut r = replica.conn();
    r.q("REPLICAOF NO ONE");
    assert_eq!(r.q("RLOCK.ACQUIRE k a ID acq").int(), token);
    assert_eq!(r.q("RLOCK.RELEASE k a ID rel").int(), 1);
    assert_eq!(holds(&mut r, "k"), 1);
}
