//! A key the module's own write removes is told as the generic `del` keyspace event, on the
//! primary exactly as the replicated command tells it on a replica (Redisson's
//! `DeletedObjectListener` listens on `__keyevent@<db>__:del`), and not at all while the
//! generic class is off.

mod common;
use common::{wait_until, Conn, Server};
use std::time::Duration;

/// A connection listening to every key event of `server` (which tells them: `classes`).
fn listen(server: &Server, classes: &str) -> Conn {
    server
        .conn()
        .q(&format!("CONFIG SET notify-keyspace-events {classes}"));
    let mut events = server.conn();
    events.q("PSUBSCRIBE __keyevent@*__:*");
    events
}

/// The `(event, key)` pairs heard before the first event on `marker` (a plain `SET marker`,
/// written last: it is told the same everywhere).
fn heard_until(events: &mut Conn, marker: &str) -> Vec<(String, String)> {
    events.set_read_timeout(Some(Duration::from_secs(10)));
    let mut heard = Vec::new();
    loop {
        let message = events
            .read()
            .expect("a key event before the marker")
            .items();
        let (channel, key) = (message[2].text(), message[3].text());
        let event = channel.rsplit(':').next().unwrap_or_default().to_string();
        if key == marker {
            return heard;
        }
        heard.push((event, key));
    }
}

fn dels(heard: &[(String, String)]) -> Vec<&str> {
    let dels = heard.iter().filter(|(event, _)| event == "del");
    dels.map(|(_, key)| key.as_str()).collect()
}

/// Frees keys every way the module does: a lock released and one forced, a read-write lock's
/// last reader and its timeout key, a semaphore's last holder by release and by lease end, a
/// latch counted down (a `DEL` the module calls).
fn free_keys(c: &mut Conn) {
    c.q("RLOCK.ACQUIRE lock alice PX 60000");
    assert_eq!(c.q("RLOCK.RELEASE lock alice").int(), 0);
    c.q("RLOCK.ACQUIRE forced erin PX 60000");
    assert_eq!(c.q("RLOCK.FORCERELEASE forced").int(), 1);
    c.q("RLATCH.SET latch 1");
    c.q("RLATCH.COUNTDOWN latch");
    assert_eq!(c.q("EXISTS latch").int(), 0);
    c.q("RWLOCK.ACQUIRE rw bob READ PX 60000");
    c.q("RWLOCK.RELEASE rw bob READ");
    assert_eq!(c.q("EXISTS rw").int(), 0);
    c.q("RSEM.SETPERMITS sem 3");
    c.q("RSEM.ACQUIRE sem carol PERMITS 2 PX 60000");
    assert_eq!(c.q("RSEM.RELEASE sem carol PERMITS 2").int(), 0);
    c.q("RSEM.ACQUIRE sem dave PX 100");
    wait_until("the lease end to free the holders hash", || {
        c.q("EXISTS {sem}:rlock:holders").int() == 0
    });
}

/// What a primary and its replica (both telling `classes`) hear while `free_keys` runs.
fn heard_on_both(classes: &str) -> (Vec<(String, String)>, Vec<(String, String)>) {
    let master = Server::builder().master();
    let replica = Server::builder().replica_of(&master);
    let mut on_master = listen(&master, classes);
    let mut on_replica = listen(&replica, classes);
    let mut c = master.conn();
    free_keys(&mut c);
    c.q("SET marker 1");
    common::sync_replica(&mut c);
    master.assert_no_crash();
    (
        heard_until(&mut on_master, "marker"),
        heard_until(&mut on_replica, "marker"),
    )
}

#[test]
fn a_primary_and_its_replica_tell_the_same_dels() {
    let (master_heard, replica_heard) = heard_on_both("KEA");
    let read_timeout_key = replica_heard
        .iter()
        .find(|(event, key)| event == "del" && key.starts_with("{rw}"))
        .map(|(_, key)| key.clone())
        .expect("the replica hears its reader's timeout key go");
    let mut replica_dels = dels(&replica_heard);
    assert_eq!(
        dels(&master_heard),
        replica_dels,
        "{master_heard:?}\n{replica_heard:?}"
    );
    replica_dels.sort();
    let holders = "{sem}:rlock:holders";
    let mut expected = [
        "lock",
        "forced",
        "latch",
        &read_timeout_key,
        "rw",
        holders,
        holders,
    ];
    expected.sort();
    assert_eq!(replica_dels, expected, "replica: {replica_heard:?}");
}

#[test]
fn no_del_is_told_while_the_generic_class_is_off() {
    // Every class but the generic one, so the marker's `set` is heard.
    let (master_heard, replica_heard) = heard_on_both("KE$lshzxetd");
    // The events that are on do flow: the module's own on the primary, the replicated
    // `HDEL` (whose emptied key would be told `del` with the class on) on the replica.
    for (heard, told) in [(master_heard, "rsem.expired"), (replica_heard, "hdel")] {
        assert!(heard.iter().any(|(event, _)| event == told), "{heard:?}");
        assert_eq!(dels(&heard), Vec::<&str>::new(), "{heard:?}");
    }
}

#[test]
fn a_lock_whose_lease_ends_is_told_expired_by_redis() {
    let server = Server::start();
    let mut events = listen(&server, "KEA");
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE lock alice PX 50");
    wait_until("the lease to end", || c.q("EXISTS lock").int() == 0);
    c.q("SET marker 1");
    let heard = heard_until(&mut events, "marker");
    assert!(
        heard.contains(&("expired".into(), "lock".into())),
        "{heard:?}"
    );
    assert_eq!(dels(&heard), Vec::<&str>::new(), "{heard:?}");
}
