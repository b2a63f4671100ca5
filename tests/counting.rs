//! Counting semaphores (RCSEM.*): Redisson's `RSemaphore`, permits that belong to nobody once
//! taken: any client releases, a release beyond what was taken adds permits, no leases. Grants
//! in FIFO order without barging, NOTIFY, timeouts, cancel, drain, retries that count once,
//! Redisson's scripts on the same counter, replication without the module.

mod common;
use common::redisson::semaphore as redisson;
use common::{snapshot, wait_until, Conn, Pending, Server, Value};
use std::time::{Duration, Instant};

fn available(c: &mut Conn) -> i64 {
    c.q("RCSEM.AVAILABLE s").int()
}

#[test]
fn permits_belong_to_nobody_once_taken() {
    let server = Server::start();
    let mut c = server.conn();
    assert!(c.q("RCSEM.ACQUIRE s").is_nil(), "never set: no permits");
    assert_eq!(available(&mut c), 0);
    assert_eq!(c.q("RCSEM.SETPERMITS s 3").int(), 1);
    assert_eq!(c.q("RCSEM.SETPERMITS s 9").int(), 0, "only when never set");
    assert_eq!(
        c.q("RCSEM.ACQUIRE s PERMITS 2").int(),
        2,
        "the permits taken"
    );
    assert_eq!(c.q("RCSEM.ACQUIRE s").int(), 1);
    assert!(c.q("RCSEM.ACQUIRE s").is_nil(), "exhausted");
    // Another connection releases what this one took, and more: the count grows past 3.
    let mut other = server.conn();
    assert_eq!(other.q("RCSEM.RELEASE s PERMITS 5").int(), 5);
    assert_eq!(other.q("RCSEM.RELEASE s").int(), 6);
    assert_eq!(c.q("GET s").text(), "6", "Redisson's layout: a plain count");
    assert_eq!(c.q("RCSEM.ADDPERMITS s -8").int(), -2, "reducePermits");
    assert!(c.q("RCSEM.ACQUIRE s").is_nil());
    assert_eq!(c.q("RCSEM.DRAIN s").int(), -2, "below 0: drained back to 0");
    assert_eq!(available(&mut c), 0);
    assert_eq!(c.q("RCSEM.ADDPERMITS s 4").int(), 4);
    assert_eq!(c.q("RCSEM.DRAIN s").int(), 4, "takes all there is");
    assert_eq!(c.q("RCSEM.DRAIN s").int(), 0);
    assert_eq!(c.q("RCSEM.DRAIN never-set").int(), 0);
    assert_eq!(c.q("EXISTS never-set").int(), 0, "nothing written");
    assert_eq!(c.q("TYPE s").text(), "string");
    assert_eq!(c.q("KEYS *").items().len(), 1, "no key beside the count");
}

#[test]
fn waiters_are_served_in_order_and_nobody_barges() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RCSEM.SETPERMITS s 0");
    let big = Pending::send(&server, "RCSEM.ACQUIRE s PERMITS 3 WAIT 5000");
    server.wait_blocked(1);
    let small = Pending::send(&server, "RCSEM.ACQUIRE s WAIT 5000");
    server.wait_blocked(2);
    assert_eq!(c.q("RCSEM.RELEASE s PERMITS 2").int(), 2, "3 do not fit");
    assert!(c.q("RCSEM.ACQUIRE s").is_nil(), "a newcomer does not barge");
    assert_eq!(server.blocked_clients(), 2, "the small one waits behind");
    assert_eq!(c.q("RCSEM.RELEASE s PERMITS 2").int(), 0, "3 + 1 taken");
    assert_eq!(big.reply().int(), 3);
    assert_eq!(small.reply().int(), 1);
    assert_eq!(server.blocked_clients(), 0);
    // Permits set after the waiter came, and added ones, serve it too.
    let first = Pending::send(&server, "RCSEM.ACQUIRE fresh PERMITS 2 WAIT 5000");
    server.wait_blocked(1);
    assert_eq!(c.q("RCSEM.SETPERMITS fresh 1").int(), 1);
    assert_eq!(server.blocked_clients(), 1);
    assert_eq!(c.q("RCSEM.ADDPERMITS fresh 1").int(), 0);
    assert_eq!(first.reply().int(), 2);
}

#[test]
fn a_wait_times_out_and_leaves_the_queue() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RCSEM.SETPERMITS s 0");
    let started = Instant::now();
    assert!(c.q("RCSEM.ACQUIRE s WAIT 100").is_nil());
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(95), "{waited:?}");
    assert!(waited < Duration::from_millis(1000), "{waited:?}");
    // Its departure let the one behind it in: a 2-permit head timed out over 1 free permit.
    let head = Pending::send(&server, "RCSEM.ACQUIRE s PERMITS 2 WAIT 150");
    server.wait_blocked(1);
    let behind = Pending::send(&server, "RCSEM.ACQUIRE s WAIT 5000");
    server.wait_blocked(2);
    c.q("RCSEM.RELEASE s");
    assert!(head.reply().is_nil());
    assert_eq!(behind.reply().int(), 1, "served when the head left");
    assert_eq!(available(&mut c), 0);
}

fn subscribed(server: &Server) -> (Conn, i64) {
    let mut listener = server.conn();
    let id = listener.q("CLIENT ID").int();
    let channel = listener.q("RLOCK.CHANNEL").text();
    listener.cmd(&["SUBSCRIBE", &channel]);
    (listener, id)
}

fn message(listener: &mut Conn) -> String {
    listener.set_read_timeout(Some(Duration::from_secs(5)));
    let Value::Bulk(text) = &listener.read().expect("a message").items()[2] else {
        panic!("not a message")
    };
    String::from_utf8_lossy(text).into_owned()
}

#[test]
fn a_notify_waiter_is_told_by_message_and_cancelled_by_its_request_id() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RCSEM.SETPERMITS s 0");
    let (mut listener, id) = subscribed(&server);
    let wait = format!("RCSEM.ACQUIRE s PERMITS 2 WAIT 5000 NOTIFY {id} ID req-1");
    assert_eq!(c.q(&wait), Value::Simple("WAITING".into()));
    assert_eq!(
        c.q(&wait),
        Value::Simple("WAITING".into()),
        "a retry keeps its place"
    );
    c.q("RCSEM.RELEASE s PERMITS 2");
    assert_eq!(message(&mut listener), "granted counting 2 1 s req-1");
    assert_eq!(
        c.q(&wait).int(),
        2,
        "a retry after the grant is answered, not counted"
    );
    assert_eq!(available(&mut c), 0);
    // RLOCK.CANCEL by request id takes exactly that wait out.
    let other = format!("RCSEM.ACQUIRE s WAIT 5000 NOTIFY {id} ID req-2");
    c.q(&other);
    c.q(&format!("RCSEM.ACQUIRE s WAIT 5000 NOTIFY {id} ID req-3"));
    assert_eq!(c.q("RLOCK.CANCEL s req-2").int(), 1);
    c.q("RCSEM.RELEASE s");
    assert_eq!(message(&mut listener), "granted counting 1 1 s req-3");
    c.q(&format!("RCSEM.ACQUIRE s WAIT 50 NOTIFY {id} ID req-4"));
    assert_eq!(message(&mut listener), "timeout counting - 1 s req-4");
    // A blocked waiter without an id leaves with CLIENT UNBLOCK, or with its connection.
    let blocked = Pending::send(&server, "RCSEM.ACQUIRE s WAIT 5000");
    server.wait_blocked(1);
    let client = c.q("CLIENT LIST TYPE normal").text();
    let line = client
        .lines()
        .find(|l| l.contains("cmd=rcsem.acquire"))
        .expect("blocked");
    let blocked_id = line.split(' ').next().unwrap().trim_start_matches("id=");
    c.q(&format!("CLIENT UNBLOCK {blocked_id}"));
    assert!(blocked.reply().is_nil());
    assert_eq!(c.q("RCSEM.RELEASE s").int(), 1, "nobody waits any more");
}

#[test]
fn retried_calls_with_an_id_count_once() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RCSEM.SETPERMITS s 3");
    assert_eq!(c.q("RCSEM.ACQUIRE s PERMITS 2 ID a").int(), 2);
    assert_eq!(c.q("RCSEM.ACQUIRE s PERMITS 2 ID a").int(), 2);
    assert_eq!(available(&mut c), 1, "taken once");
    assert_eq!(c.q("RCSEM.RELEASE s PERMITS 2 ID r").int(), 3);
    assert_eq!(c.q("RCSEM.RELEASE s PERMITS 2 ID r").int(), 3);
    assert_eq!(available(&mut c), 3, "added once");
    assert_eq!(c.q("RCSEM.RELEASE s PERMITS 2 ID r2").int(), 5);
}

#[test]
fn redisson_clients_share_the_semaphore() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RCSEM.SETPERMITS s 2");
    assert!(
        redisson::try_acquire(&mut c, "s", 2),
        "Redisson takes from the count"
    );
    let waiter = Pending::send(&server, "RCSEM.ACQUIRE s WAIT 5000");
    server.wait_blocked(1);
    // Redisson's release (INCRBY + publish) serves the RCSEM queue at once.
    redisson::release(&mut c, "s", 1);
    assert_eq!(waiter.reply().int(), 1);
    assert_eq!(available(&mut c), 0);
    // An RCSEM release publishes the new count where Redisson's waiters listen.
    let mut sub = server.conn();
    sub.cmd(&["SUBSCRIBE", &redisson::channel("s")]);
    assert_eq!(c.q("RCSEM.RELEASE s PERMITS 2").int(), 2);
    assert_eq!(sub.read().expect("count").items()[2].text(), "2");
    assert!(redisson::try_acquire(&mut c, "s", 2));
    assert!(!redisson::try_acquire(&mut c, "s", 1));
}

#[test]
fn both_semaphores_on_one_counter_hand_the_queue_to_each_other() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RSEM.SETPERMITS s 0");
    let owned = Pending::send(&server, "RSEM.ACQUIRE s a WAIT 5000");
    server.wait_blocked(1);
    let counting = Pending::send(&server, "RCSEM.ACQUIRE s WAIT 5000");
    server.wait_blocked(2);
    c.q("RCSEM.RELEASE s PERMITS 2");
    assert!(
        owned.reply().int() > 0,
        "the owned semaphore's head, served"
    );
    assert_eq!(counting.reply().int(), 1);
}

#[test]
fn bad_input_and_other_types_change_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RCSEM.SETPERMITS s 2");
    c.q("HSET h f v");
    c.q("SET text abc");
    c.q("SET big 9223372036854775807");
    let before = snapshot(&mut c);
    for (line, expected) in [
        ("RCSEM.ACQUIRE", "ERR wrong number of arguments"),
        ("RCSEM.ACQUIRE s PERMITS", "ERR PERMITS needs a value"),
        (
            "RCSEM.ACQUIRE s PERMITS 0",
            "ERR PERMITS must be an integer of at least 1",
        ),
        (
            "RCSEM.ACQUIRE s PERMITS x",
            "ERR PERMITS must be an integer of at least 1",
        ),
        ("RCSEM.ACQUIRE s PX 100", "ERR unknown option 'PX'"),
        ("RCSEM.ACQUIRE s WATCHDOG", "ERR unknown option 'WATCHDOG'"),
        ("RCSEM.ACQUIRE s NOTIFY", "ERR NOTIFY needs WAIT"),
        ("RCSEM.ACQUIRE s WAIT -1", "ERR WAIT must be between 0 and"),
        ("RCSEM.ACQUIRE s ID", "ERR ID needs a value"),
        (
            "RCSEM.RELEASE s PERMITS 0",
            "ERR PERMITS must be an integer of at least 1",
        ),
        (
            "RCSEM.RELEASE s PERMITS -1",
            "ERR PERMITS must be an integer of at least 1",
        ),
        ("RCSEM.RELEASE s WAIT 1", "ERR unknown option 'WAIT'"),
        (
            "RCSEM.RELEASE big",
            "ERR the available permits would overflow",
        ),
        (
            "RCSEM.ADDPERMITS big 1",
            "ERR the available permits would overflow",
        ),
        ("RCSEM.ADDPERMITS s x", "ERR permits must be an integer"),
        ("RCSEM.ADDPERMITS s", "ERR wrong number of arguments"),
        (
            "RCSEM.SETPERMITS n -1",
            "ERR permits must be an integer of at least 0",
        ),
        ("RCSEM.DRAIN s x", "ERR unknown option 'x'"),
        ("RCSEM.DRAIN", "ERR wrong number of arguments"),
        ("RCSEM.AVAILABLE h", "WRONGTYPE"),
        ("RCSEM.ACQUIRE h", "WRONGTYPE"),
        ("RCSEM.RELEASE h", "WRONGTYPE"),
        ("RCSEM.DRAIN h", "WRONGTYPE"),
        ("RCSEM.SETPERMITS h 1", "WRONGTYPE"),
        (
            "RCSEM.RELEASE text",
            "ERR the value at this key is not a semaphore or latch count",
        ),
        ("RLOCK.ACQUIRE s a", "WRONGTYPE"),
    ] {
        let error = c.q(line).err();
        assert!(error.starts_with(expected), "{line}: {error}");
    }
    assert_eq!(snapshot(&mut c), before);
}

#[test]
fn a_deleted_count_is_zero_permits_to_its_waiters() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RCSEM.SETPERMITS s 1");
    let waiter = Pending::send(&server, "RCSEM.ACQUIRE s PERMITS 2 WAIT 5000");
    server.wait_blocked(1);
    c.q("DEL s");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(server.blocked_clients(), 1, "nothing to take");
    assert_eq!(c.q("RCSEM.ADDPERMITS s 2").int(), 0);
    assert_eq!(waiter.reply().int(), 2);
}

#[test]
fn a_replica_without_the_module_matches() {
    let master = Server::builder().master();
    let replica = Server::builder().without_module().replica_of(&master);
    let mut c = master.conn();
    c.q("RCSEM.SETPERMITS s 1");
    let waiter = Pending::send(&master, "RCSEM.ACQUIRE s PERMITS 2 WAIT 5000");
    master.wait_blocked(1);
    c.q("RCSEM.RELEASE s PERMITS 4");
    assert_eq!(waiter.reply().int(), 2);
    c.q("RCSEM.ADDPERMITS s -1");
    c.q("RCSEM.ACQUIRE s ID x");
    c.q("RCSEM.DRAIN s");
    c.q("RCSEM.ADDPERMITS s 7");
    c.q("RCSEM.SETPERMITS t 5");
    wait_until("the count", || available(&mut c) == 7);
    common::sync_replica(&mut c);
    let expected = snapshot(&mut c);
    assert_eq!(expected.len(), 2, "{expected:?}");
    assert_eq!(snapshot(&mut replica.conn()), expected);
}
