//! A waiting acquire retried with the same request id while its first call still waits (a
//! client's retry after a partition or a half-open connection, docs/clients.md step 9) takes
//! over the first call's queue entry: it keeps its place, the answer goes to the retry, the
//! first call (if blocked) ends with `RETRIED`, and the grant is given once. Before, the retry
//! queued a second entry, and the owner was granted a second holding it never asked for.

mod common;
use common::{wait_until, Conn, Pending, Server, Value};
use std::time::Duration;

const RETRIED: &str = "RETRIED this request was taken over by a retry";

/// `line` sent on a new connection, which the server then holds blocked (`blocked` clients in
/// all, counted by the caller).
fn blocked(server: &Server, line: &str, blocked: i64) -> Pending {
    let pending = Pending::send(server, line);
    server.wait_blocked(blocked);
    pending
}

/// A count of an `INFO` reply (`info` the command); 0 for a free key (its `INFO` is nil).
fn count(c: &mut Conn, info: &str, field: &str) -> i64 {
    let reply = c.q(info);
    if reply.is_nil() {
        return 0;
    }
    reply.field(field).int()
}

/// `call` blocked on a new connection (the `others` clients blocked before it stay so), then
/// sent again from another: the first ends with `RETRIED`, and the retry, blocked in its
/// place, is returned.
fn blocked_and_retried(server: &Server, call: &str, others: i64) -> Pending {
    let first = blocked(server, call, others + 1);
    let retry = Pending::send(server, call);
    assert_eq!(first.reply().err(), RETRIED, "the first call ends");
    server.wait_blocked(others + 1);
    retry
}

fn waiters(c: &mut Conn, info: &str) -> i64 {
    count(c, info, "waiters")
}

fn waiting_writers(c: &mut Conn) -> i64 {
    count(c, "RWLOCK.INFO w", "waiting_writers")
}

fn semaphore_waiters(c: &mut Conn) -> usize {
    c.q("RSEM.INFO s").field("waiters").items().len()
}

/// A RESP3 connection subscribed to its own grant channel: a `NOTIFY` call's receiver.
fn receiver(server: &Server) -> Conn {
    let mut r = server.conn();
    r.q("HELLO 3");
    let channel = r.q("RLOCK.CHANNEL").text();
    r.cmd(&["SUBSCRIBE", &channel]);
    r
}

/// The next grant message's payload on receiver `r` (`granted lock <token> <len> <key> <owner>`).
fn message(r: &mut Conn) -> String {
    r.set_read_timeout(Some(Duration::from_secs(10)));
    let v = r.read().expect("a message within 10 s");
    let items = v.items();
    assert_eq!(items[0].text(), "message", "{v:?}");
    items[2].text()
}

/// The brief's reproduction, for the plain lock: a holds k; b's call is blocked, then c queues;
/// b's call is sent again with its id from a new connection (the first still blocked).
#[test]
fn a_blocked_acquire_retried_with_its_id_keeps_one_place_and_is_granted_once() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k a PX 60000");
    let call = "RLOCK.ACQUIRE k b PX 60000 WAIT 0 ID abc";
    let first = blocked(&server, call, 1);
    let other = blocked(&server, "RLOCK.ACQUIRE k c PX 60000 WAIT 0", 2);
    let retry = Pending::send(&server, call);
    assert_eq!(first.reply().err(), RETRIED, "the first call ends");
    server.wait_blocked(2);
    assert_eq!(
        waiters(&mut c, "RLOCK.INFO k"),
        2,
        "one entry for b, one for c"
    );
    // b kept its place ahead of c.
    c.q("RLOCK.RELEASE k a");
    let token = retry.reply().int();
    assert_eq!(c.q("RLOCK.INFO k").field("owner").text(), "b");
    assert_eq!(c.q("RLOCK.INFO k").field("holds").int(), 1);
    assert_eq!(waiters(&mut c, "RLOCK.INFO k"), 1, "only c waits");
    // b's one release frees it for c, not for a second b.
    assert_eq!(c.q("RLOCK.RELEASE k b").int(), 0, "b's one release");
    assert!(other.reply().int() > token);
    assert_eq!(c.q("RLOCK.INFO k").field("owner").text(), "c");
    assert_eq!(waiters(&mut c, "RLOCK.INFO k"), 0);
    server.assert_no_crash();
}

/// Not a retry: another owner with the same id, or the same owner with another id queue as before.
#[test]
fn the_same_id_from_another_owner_or_with_another_id_queues_apart() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k a PX 60000");
    let b = blocked(&server, "RLOCK.ACQUIRE k b PX 60000 WAIT 0 ID abc", 1);
    let d = blocked(&server, "RLOCK.ACQUIRE k d PX 60000 WAIT 0 ID abc", 2);
    let b2 = blocked(&server, "RLOCK.ACQUIRE k b PX 60000 WAIT 0 ID xyz", 3);
    assert_eq!(waiters(&mut c, "RLOCK.INFO k"), 3);
    c.q("RLOCK.RELEASE k a");
    assert!(b.reply().int() > 0);
    c.q("RLOCK.RELEASE k b");
    assert!(d.reply().int() > 0);
    c.q("RLOCK.RELEASE k d");
    assert!(b2.reply().int() > 0);
}

#[test]
fn a_blocked_acquireall_retried_takes_over_all_its_places() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE y a PX 60000");
    let call = "RLOCK.ACQUIREALL 2 x y b PX 60000 WAIT 0 ID abc";
    let retry = blocked_and_retried(&server, call, 0);
    assert_eq!(waiters(&mut c, "RLOCK.INFO y"), 1, "one place in y's queue");
    c.q("RLOCK.RELEASE y a");
    assert_eq!(retry.reply().items().len(), 2, "both tokens");
    assert_eq!(waiters(&mut c, "RLOCK.INFO y"), 0);
    c.q("RLOCK.RELEASEALL 2 x y b");
    assert!(c.q("RLOCK.INFO x").is_nil(), "no second grant");
    assert!(c.q("RLOCK.INFO y").is_nil(), "no second grant");
}

#[test]
fn blocked_rwlock_and_semaphore_acquires_retried_are_granted_once() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RWLOCK.ACQUIRE w a WRITE PX 60000");
    let call = "RWLOCK.ACQUIRE w b WRITE PX 60000 WAIT 0 ID abc";
    let retry = blocked_and_retried(&server, call, 0);
    assert_eq!(waiting_writers(&mut c), 1);
    c.q("RWLOCK.RELEASE w a WRITE");
    assert!(retry.reply().int() > 0);
    assert_eq!(c.q("RWLOCK.RELEASE w b WRITE").int(), 0);
    assert_eq!(waiting_writers(&mut c), 0);
    assert!(
        c.q("RWLOCK.ACQUIRE w z WRITE PX 60000").int() > 0,
        "w is free"
    );

    c.q("RSEM.SETPERMITS s 1");
    c.q("RSEM.ACQUIRE s a PX 60000");
    let call = "RSEM.ACQUIRE s b PX 60000 WAIT 0 ID abc";
    let retry = blocked_and_retried(&server, call, 0);
    assert_eq!(semaphore_waiters(&mut c), 1);
    c.q("RSEM.RELEASE s a");
    assert!(retry.reply().int() > 0);
    c.q("RSEM.RELEASE s b");
    assert_eq!(
        c.q("RSEM.INFO s").field("available").int(),
        1,
        "b holds nothing"
    );
}

/// A counting semaphore's waiter is known by its request id: its retry takes the one place, and
/// one permit released is taken once.
#[test]
fn a_blocked_counting_acquire_retried_takes_one_permit_once() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RCSEM.SETPERMITS s 1");
    assert_eq!(c.q("RCSEM.ACQUIRE s").int(), 1);
    let retry = blocked_and_retried(&server, "RCSEM.ACQUIRE s WAIT 0 ID abc", 0);
    c.q("RCSEM.RELEASE s PERMITS 2");
    assert_eq!(retry.reply().int(), 1);
    assert_eq!(
        c.q("RCSEM.AVAILABLE s").int(),
        1,
        "the retry took one of the two"
    );
    server.wait_blocked(0);
}

/// A blocked call retried as a `NOTIFY` call (and back) keeps its one place; the answer goes
/// to the latest call, by message or as its reply.
#[test]
fn a_wait_retried_between_blocked_and_notify_keeps_one_place() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k a PX 60000");
    let first = blocked(&server, "RLOCK.ACQUIRE k b PX 60000 WAIT 0 ID abc", 1);
    let mut r = receiver(&server);
    assert_eq!(
        r.q("RLOCK.ACQUIRE k b PX 60000 WAIT 0 NOTIFY ID abc"),
        Value::Simple("WAITING".into())
    );
    assert_eq!(first.reply().err(), RETRIED);
    server.wait_blocked(0);
    assert_eq!(waiters(&mut c, "RLOCK.INFO k"), 1);
    c.q("RLOCK.RELEASE k a");
    assert!(message(&mut r).starts_with("granted lock "));
    c.q("RLOCK.RELEASE k b");

    // Back: a NOTIFY wait retried as a blocked call gets the grant as its reply.
    c.q("RLOCK.ACQUIRE k a PX 60000");
    let mut r = receiver(&server);
    r.q("RLOCK.ACQUIRE k b PX 60000 WAIT 0 NOTIFY ID def");
    let retry = blocked(&server, "RLOCK.ACQUIRE k b PX 60000 WAIT 0 ID def", 1);
    assert_eq!(waiters(&mut c, "RLOCK.INFO k"), 1);
    c.q("RLOCK.RELEASE k a");
    assert!(retry.reply().int() > 0);
    assert_eq!(c.q("RLOCK.RELEASE k b").int(), 0);
    assert!(c.q("RLOCK.INFO k").is_nil(), "no second grant");
}

/// A retry's own `WAIT` counts: a NOTIFY retry of a blocked call waiting forever times out.
#[test]
fn a_retry_waits_as_long_as_it_says() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k a PX 60000");
    let first = blocked(&server, "RLOCK.ACQUIRE k b PX 60000 WAIT 0 ID abc", 1);
    let mut r = receiver(&server);
    r.q("RLOCK.ACQUIRE k b PX 60000 WAIT 200 NOTIFY ID abc");
    assert_eq!(first.reply().err(), RETRIED);
    assert!(message(&mut r).starts_with("timeout lock "));
    assert_eq!(waiters(&mut c, "RLOCK.INFO k"), 0);
}

/// A `WATCHDOG` wait retried from a new connection binds its grant to that connection: the
/// first call's connection, still open, no longer keeps it.
#[test]
fn a_retried_watchdog_wait_binds_to_the_retry_connection() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k a PX 60000");
    let call = "RLOCK.ACQUIRE k b WAIT 0 WATCHDOG ID abc";
    let mut first = blocked(&server, call, 1);
    let mut retry = Pending::send(&server, call);
    assert_eq!(first.conn.read().expect("its end").err(), RETRIED);
    server.wait_blocked(1);
    c.q("RLOCK.RELEASE k a");
    assert!(retry.conn.read().expect("the grant").int() > 0);
    assert_eq!(c.q("RLOCK.INFO k").field("owner").text(), "b");
    drop(retry);
    wait_until("b's holding to end with the retry's connection", || {
        c.q("RLOCK.INFO k").is_nil()
    });
    assert_eq!(
        first.conn.q("PING").text(),
        "PONG",
        "the first connection stayed open"
    );
}
