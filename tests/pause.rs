//! Writes paused (`CLIENT PAUSE ... WRITE`, `FAILOVER`): a lease that ends under a waiter
//! meanwhile is handed over only once the pause is over, and the server never aborts.

mod common;
use common::{snapshot, wait_until, Conn, Pending, Server, Value};
use std::time::{Duration, Instant};

fn role(c: &mut Conn) -> String {
    c.q("ROLE").items()[0].text()
}

#[test]
fn a_lease_ending_during_client_pause_is_handed_over_after_it() {
    let master = Server::builder().master();
    let replica = Server::builder().without_module().replica_of(&master);
    let mut c = master.conn();
    c.q("RLOCK.ACQUIRE k dead PX 200");
    let waiter = Pending::send(&master, "RLOCK.ACQUIRE k next PX 5000 WAIT 10000").reply_when();
    master.wait_blocked(1);
    let paused_at = Instant::now();
    assert_eq!(c.q("CLIENT PAUSE 800 WRITE").text(), "OK");
    // A write sent during the pause is answered when the server ends the pause.
    let probe = Pending::send(&master, "SET probe 1").reply_when();
    // Read-only commands keep working and report what Redis reports: the key is expired.
    wait_until("the lease to end during the pause", || {
        c.q("RLOCK.INFO k").is_nil()
    });
    assert!(
        paused_at.elapsed() < Duration::from_millis(800),
        "the lease ended during the pause"
    );
    let (token, granted_at) = waiter.join().expect("waiter");
    let (_, unpaused_at) = probe.join().expect("probe");
    assert!(token.int() > 0, "{token:?}");
    assert!(
        granted_at >= paused_at + Duration::from_millis(750),
        "granted {:?} after the pause began: during the pause",
        granted_at - paused_at
    );
    let gap = granted_at.max(unpaused_at) - granted_at.min(unpaused_at);
    assert!(
        gap < Duration::from_millis(100),
        "granted {gap:?} from the pause end (generous bound)"
    );
    assert_eq!(c.q("RLOCK.INFO k").field("owner").text(), "next");
    common::sync_replica(&mut c);
    assert_eq!(snapshot(&mut replica.conn()), snapshot(&mut c));
    master.assert_no_crash();
}

/// `FAILOVER` pauses writes until the replica has everything; a stopped replica stretches
/// that pause across the lease end.
fn failover_with_stopped_replica(timeout: Option<u64>) -> (Server, Server, Value) {
    let master = Server::builder().master();
    let replica = Server::builder().replica_of(&master);
    let mut c = master.conn();
    c.q("RLOCK.ACQUIRE k dead PX 300");
    let waiter = Pending::send(&master, "RLOCK.ACQUIRE k next PX 5000 WAIT 20000").reply_when();
    master.wait_blocked(1);
    replica.signal("STOP");
    let mut failover = vec!["FAILOVER".to_string(), "TO".into(), "127.0.0.1".into()];
    failover.push(replica.port.to_string());
    if let Some(ms) = timeout {
        failover.extend(["TIMEOUT".to_string(), ms.to_string()]);
    }
    assert_eq!(c.cmd(&failover).text(), "OK");
    wait_until("the lease to end during the failover's pause", || {
        c.q("RLOCK.INFO k").is_nil()
    });
    if timeout.is_none() {
        replica.signal("CONT");
    }
    let (reply, _) = waiter.join().expect("waiter");
    replica.signal("CONT");
    master.assert_no_crash();
    replica.assert_no_crash();
    (master, replica, reply)
}

#[test]
fn a_failover_to_a_slow_replica_completes_without_a_crash() {
    let (master, replica, reply) = failover_with_stopped_replica(None);
    // The waiter's server turned replica: Redis unblocks it, and it retries on the new master.
    assert!(reply.err().starts_with("UNBLOCKED"), "{reply:?}");
    let (mut old, mut new) = (master.conn(), replica.conn());
    wait_until("the failover to complete", || {
        role(&mut old) == "slave" && role(&mut new) == "master"
    });
    assert!(new.q("RLOCK.ACQUIRE k next PX 5000").int() > 0);
    master.assert_no_crash();
}

#[test]
fn an_aborted_failover_hands_the_lock_over_once_writes_resume() {
    let (master, replica, reply) = failover_with_stopped_replica(Some(600));
    assert!(reply.int() > 0, "{reply:?}");
    let mut c = master.conn();
    assert_eq!(role(&mut c), "master");
    assert_eq!(c.q("RLOCK.INFO k").field("owner").text(), "next");
    common::sync_replica(&mut c);
    assert_eq!(snapshot(&mut replica.conn()), snapshot(&mut c));
}
