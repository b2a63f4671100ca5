//! Request ids where no holding remembers them: `RSEM.RELEASEMANY ... ID`, `ADDPERMITS ... ID`
//! and `SETPERMITS ... ID` of both semaphores, `RCSEM.DRAIN ... ID` and `RLATCH.SET ... ID`
//! count once and answer a retry as the first call;
//! a retried counting grant (`RCSEM.ACQUIRE ... ID <same id>`) propagates something, so a
//! `WAIT` pipelined after it confirms the grant only once the replica has it.

mod common;
use common::{signal, snapshot, sync_replica, Conn, Server, Value};
use std::time::Duration;

fn rsem_info(c: &mut Conn) -> Value {
    c.q("RSEM.INFO s")
}

fn holders(c: &mut Conn) -> Vec<String> {
    let info = rsem_info(c).items();
    let at = info
        .iter()
        .position(|v| v.text() == "holders")
        .expect("holders field");
    info[at + 1]
        .items()
        .iter()
        .map(|h| {
            let fields = h.items();
            let owner = fields.iter().position(|v| v.text() == "owner").unwrap();
            fields[owner + 1].text()
        })
        .collect()
}

fn available(c: &mut Conn) -> i64 {
    let info = rsem_info(c).items();
    let at = info.iter().position(|v| v.text() == "available").unwrap();
    info[at + 1].int()
}

#[test]
fn releasemany_with_an_id_releases_once_and_answers_a_retry_the_same() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RSEM.SETPERMITS s 5");
    c.q("RSEM.ACQUIRE s a PERMITS 2 PX 60000");
    c.q("RSEM.ACQUIRE s b PX 60000");
    let call = "RSEM.RELEASEMANY s ID r1 ALL a b";
    assert_eq!(c.q(call).int(), 2);
    assert_eq!((available(&mut c), holders(&mut c).len()), (5, 0));
    // `a` holds again; the retry releases nothing (without its id, `b` is not held).
    c.q("RSEM.ACQUIRE s a PX 60000");
    assert_eq!(c.q(call).int(), 2, "the first call's answer");
    assert_eq!(
        (available(&mut c), holders(&mut c)),
        (4, vec!["a".to_string()])
    );
    assert_eq!(c.q("RSEM.RELEASEMANY s ALL a b").err(), "ERR not held: b");
    assert_eq!(available(&mut c), 4, "an error changes nothing");
    // An owner named ID comes after the mode; the id option before it.
    c.q("RSEM.ACQUIRE s ID PX 60000");
    assert_eq!(c.q("RSEM.RELEASEMANY s ID r2 ANY ID nobody").int(), 1);
    assert_eq!(holders(&mut c), vec!["a".to_string()]);
    assert_eq!(c.q("RSEM.RELEASEMANY s ID r2 ANY ID nobody").int(), 1);
    // An error is not remembered: it changed nothing, and the retry runs anew.
    assert_eq!(
        c.q("RSEM.RELEASEMANY s ID r3 ALL x").err(),
        "ERR not held: x"
    );
    c.q("RSEM.ACQUIRE s x PX 60000");
    assert_eq!(c.q("RSEM.RELEASEMANY s ID r3 ALL x").int(), 1);
    assert_eq!(holders(&mut c), vec!["a".to_string()]);
}

#[test]
fn bad_ids_and_arguments_are_refused_and_change_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RSEM.SETPERMITS s 3");
    c.q("RSEM.ACQUIRE s a PX 60000");
    c.q("RCSEM.SETPERMITS c 3");
    c.q("RLATCH.SET l 2");
    let before = snapshot(&mut c);
    let long = "i".repeat(65);
    let refused = [
        (format!("RSEM.RELEASEMANY s ID {long} ALL a"), "ERR"),
        (
            "RSEM.RELEASEMANY s ID r ALL".to_string(),
            "ERR wrong number",
        ),
        (
            "RSEM.RELEASEMANY s ID r SOME a".to_string(),
            "ERR mode must be ALL or ANY",
        ),
        ("RSEM.ADDPERMITS s 1 ID".to_string(), "ERR"),
        ("RSEM.ADDPERMITS s 1 PERMITS 2".to_string(), "ERR"),
        ("RSEM.SETPERMITS s 1 ID a ID b".to_string(), "ERR"),
        ("RCSEM.ADDPERMITS c 1 FOO x".to_string(), "ERR"),
        (format!("RCSEM.ADDPERMITS c 1 ID {long}"), "ERR"),
        ("RCSEM.SETPERMITS c 1 ID".to_string(), "ERR"),
        ("RCSEM.DRAIN c ID".to_string(), "ERR"),
        ("RCSEM.DRAIN c PERMITS 1".to_string(), "ERR"),
        (format!("RCSEM.DRAIN c ID {long}"), "ERR"),
        ("RLATCH.SET n 2 ID".to_string(), "ERR ID needs a value"),
        ("RLATCH.SET n 2 x".to_string(), "ERR unknown option 'x'"),
        ("RLATCH.SET n 2 ID a ID b".to_string(), "ERR"),
        ("RLATCH.SET n 0 ID s-1".to_string(), "ERR count must be"),
        (format!("RLATCH.SET n 2 ID {long}"), "ERR"),
        ("RLATCH.SET l 9 PX 5".to_string(), "ERR unknown option 'PX'"),
    ];
    for (call, error) in &refused {
        let reply = c.q(call);
        assert!(reply.err().starts_with(error), "{call}: {reply:?}");
    }
    assert_eq!(snapshot(&mut c), before);
}

/// `ADDPERMITS key n ID id` and `SETPERMITS key n ID id`, then their retries, on a semaphore
/// whose count `count` reads.
fn permits_counted_once(c: &mut Conn, family: &str, count: fn(&mut Conn) -> i64) {
    assert_eq!(c.q(&format!("{family}.SETPERMITS s 2 ID set-1")).int(), 1);
    assert_eq!(
        c.q(&format!("{family}.SETPERMITS s 2 ID set-1")).int(),
        1,
        "the retry of the call that set them"
    );
    assert_eq!(c.q(&format!("{family}.SETPERMITS s 2")).int(), 0);
    let add = format!("{family}.ADDPERMITS s 3 ID add-1");
    assert_eq!(c.q(&add).int(), 5);
    assert_eq!(c.q(&add).int(), 5, "added once");
    assert_eq!(count(c), 5);
    assert_eq!(c.q(&format!("{family}.ADDPERMITS s -1 ID add-2")).int(), 4);
    assert_eq!(c.q(&add).int(), 5, "the first answer, after another call");
    assert_eq!(count(c), 4);
    assert_eq!(
        c.q(&format!("{family}.ADDPERMITS s 1")).int(),
        5,
        "without an id"
    );
    assert_eq!(
        c.q(&format!("{family}.ADDPERMITS s 1")).int(),
        6,
        "counts each time"
    );
    assert_eq!(
        c.q(&format!("{family}.ADDPERMITS t 3 ID add-1")).int(),
        3,
        "the same id on another key is another call"
    );
}

#[test]
fn addpermits_and_setpermits_with_an_id_count_once() {
    let server = Server::start();
    let mut c = server.conn();
    permits_counted_once(&mut c, "RSEM", available);
    c.q("FLUSHALL");
    permits_counted_once(&mut c, "RCSEM", |c| c.q("RCSEM.AVAILABLE s").int());
    let remembered = server.info_field("rlock", "rlock_remembered_releases");
    assert!(remembered.parse::<i64>().unwrap() >= 4, "{remembered}");
}

#[test]
fn a_drain_with_an_id_takes_once_and_answers_a_retry_the_same() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RCSEM.SETPERMITS s 4");
    let drain = "RCSEM.DRAIN s ID d-1";
    assert_eq!(c.q(drain).int(), 4);
    c.q("RCSEM.ADDPERMITS s 2");
    assert_eq!(c.q(drain).int(), 4, "the first call's answer");
    assert_eq!(c.q("RCSEM.AVAILABLE s").int(), 2, "the retry took nothing");
    assert_eq!(c.q("RCSEM.DRAIN s ID d-2").int(), 2, "another id drains");
    c.q("RCSEM.ADDPERMITS s -3");
    assert_eq!(c.q("RCSEM.DRAIN s").int(), -3, "without an id, below 0");
    assert_eq!(
        c.q("RCSEM.DRAIN s ID d-1").int(),
        4,
        "still the first answer"
    );
    assert_eq!(
        c.q("RCSEM.DRAIN t ID d-1").int(),
        0,
        "another key is another call"
    );
    c.q("RCSEM.ADDPERMITS t 1");
    assert_eq!(
        c.q("RCSEM.DRAIN t ID d-1").int(),
        0,
        "remembered although it took nothing"
    );
    assert_eq!(c.q("RCSEM.AVAILABLE t").int(), 1);
}

#[test]
fn a_latch_set_with_an_id_sets_once_and_answers_a_retry_1() {
    let server = Server::start();
    let mut c = server.conn();
    let set = "RLATCH.SET l 3 ID s-1";
    assert_eq!(c.q(set).int(), 1);
    assert_eq!(c.q(set).int(), 1, "the retry of the call that set it");
    assert_eq!(
        c.q("RLATCH.SET l 3 ID s-2").int(),
        0,
        "another id: already set"
    );
    assert_eq!(c.q("RLATCH.SET l 3").int(), 0, "without an id");
    c.q("RLATCH.COUNTDOWN l");
    assert_eq!(c.q(set).int(), 1);
    assert_eq!(c.q("RLATCH.COUNT l").int(), 2, "the retry set nothing");
    c.q("RLATCH.COUNTDOWN l");
    c.q("RLATCH.COUNTDOWN l");
    assert_eq!(c.q("EXISTS l").int(), 0, "open");
    assert_eq!(c.q(set).int(), 1, "still the first answer");
    assert_eq!(c.q("EXISTS l").int(), 0, "an open latch is not set again");
    assert_eq!(c.q("RLATCH.SET l 3 ID s-2").int(), 0, "remembered 0 too");
    assert_eq!(c.q("EXISTS l").int(), 0);
    assert_eq!(
        c.q("RLATCH.SET m 4 ID s-1").int(),
        1,
        "another key is another call"
    );
    assert_eq!(c.q("RLATCH.COUNT m").int(), 4);
    // An error is not remembered: it changed nothing, and the retry runs anew.
    c.q("HSET h f v");
    assert!(c.q("RLATCH.SET h 2 ID s-3").err().starts_with("WRONGTYPE"));
    c.q("DEL h");
    assert_eq!(c.q("RLATCH.SET h 2 ID s-3").int(), 1);
    assert_eq!(c.q("RLATCH.COUNT h").int(), 2);
}

/// Sends `SIGCONT` when dropped, so a failed assertion leaves no stopped server behind.
struct Stopped(u32);

impl Stopped {
    fn new(server: &Server) -> Stopped {
        signal(server.pid(), "STOP");
        Stopped(server.pid())
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        signal(self.0, "CONT");
    }
}

/// The replies of `first` and `WAIT 1 <ms>`, sent in one pipeline.
fn with_wait(c: &mut Conn, first: &str, ms: u64) -> (Value, i64) {
    c.send(&first.split_whitespace().collect::<Vec<_>>())
        .unwrap();
    c.send(&["WAIT", "1", &ms.to_string()]).unwrap();
    (c.read().unwrap(), c.read().unwrap().int())
}

/// A master and its one replica, in sync.
fn replicated() -> (Server, Server) {
    let master = Server::builder().master();
    let replica = Server::builder().replica_of(&master);
    (master, replica)
}

#[test]
fn a_retried_counting_grant_is_confirmed_only_once_the_replica_has_it() {
    let (master, replica) = replicated();
    let mut c = master.conn();
    c.q("RCSEM.SETPERMITS s 0");
    let mut listener = master.conn();
    let id = listener.q("CLIENT ID").int();
    let channel = listener.q("RLOCK.CHANNEL").text();
    listener.cmd(&["SUBSCRIBE", &channel]);
    let mut waiter = master.conn();
    let wait = format!("RCSEM.ACQUIRE s PERMITS 2 WAIT 0 NOTIFY {id} ID g-1");
    assert_eq!(waiter.q(&wait), Value::Simple("WAITING".into()));
    sync_replica(&mut c);
    let retry = "RCSEM.ACQUIRE s PERMITS 2 ID g-1";
    {
        let _stopped = Stopped::new(&replica);
        c.q("RCSEM.RELEASE s PERMITS 2");
        listener.set_read_timeout(Some(Duration::from_secs(5)));
        let message = listener.read().expect("the grant").items()[2].text();
        assert_eq!(message, "granted counting 2 1 s g-1");
        let (granted, acked) = with_wait(&mut waiter, retry, 300);
        assert_eq!(
            (granted.int(), acked),
            (2, 0),
            "the replica has not the grant"
        );
        assert_eq!(c.q("RCSEM.AVAILABLE s").int(), 0, "the retry took nothing");
    }
    let (granted, acked) = with_wait(&mut waiter, retry, 5000);
    assert_eq!((granted.int(), acked), (2, 1), "now it has");
    let mut r = replica.conn();
    assert_eq!(snapshot(&mut r), snapshot(&mut c), "a PING changed nothing");
    // A retried ADDPERMITS and RELEASEMANY propagate as well: with the replica stopped their
    // WAIT counts none.
    c.q("RSEM.ADDPERMITS p 1 ID a-1");
    c.q("RSEM.ACQUIRE p o PX 60000");
    c.q("RSEM.RELEASEMANY p ID m-1 ALL o");
    let mut fresh = master.conn();
    sync_replica(&mut c);
    let _stopped = Stopped::new(&replica);
    for retry in [
        "RSEM.ADDPERMITS p 1 ID a-1",
        "RSEM.RELEASEMANY p ID m-1 ALL o",
    ] {
        let (answer, acked) = with_wait(&mut fresh, retry, 200);
        assert_eq!((answer.int(), acked), (1, 0), "{retry}");
    }
}

#[test]
fn every_retry_answered_from_memory_is_confirmed_only_by_a_replica_that_has_it() {
    let (master, replica) = replicated();
    let mut c = master.conn();
    c.q("RSEM.SETPERMITS sem 3");
    c.q("RLATCH.SET latch 3");
    c.q("RCSEM.SETPERMITS counted 2");
    c.q("RLOCK.ACQUIRE nested o PX 60000");
    c.q("RLOCK.ACQUIRE gone o PX 60000");
    let calls = [
        "RLOCK.ACQUIRE lock o PX 60000 ID a-1",
        "RLOCK.ACQUIRE nested o PX 60000 ID a-2",
        "RLOCK.RELEASE nested o ID r-1",
        "RLOCK.RELEASE gone o ID r-2",
        "RLOCK.ACQUIREALL 2 {all}a {all}b o PX 60000 ID a-3",
        "RWLOCK.ACQUIRE rw o READ PX 60000 ID a-4",
        "RSEM.ACQUIRE sem o PERMITS 2 PX 60000 ID a-5",
        "RSEM.RELEASE sem o ID r-3",
        "RLATCH.COUNTDOWN latch ID c-1",
        "RCSEM.DRAIN counted ID d-1",
        "RLATCH.SET new-latch 2 ID s-1",
    ];
    let first: Vec<Value> = calls.iter().map(|call| c.q(call)).collect();
    sync_replica(&mut c);
    let before = snapshot(&mut c);
    let _stopped = Stopped::new(&replica);
    for (call, first) in calls.iter().zip(first) {
        // A client's retry after a lost reply comes on a new connection, with nothing written yet.
        let (again, acked) = with_wait(&mut master.conn(), call, 100);
        assert_eq!((again, acked), (first, 0), "{call}");
    }
    assert_eq!(snapshot(&mut c), before, "the retries changed nothing");
}
