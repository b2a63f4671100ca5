//! Locks and fencing tokens across restarts, reloads, flushes and replica promotion.

mod common;
use common::{Pending, Server};

fn token_of(c: &mut common::Conn, key: &str) -> i64 {
    c.q(&format!("RLOCK.INFO {key}")).field("token").int()
}

#[test]
fn locks_survive_kill9_with_aof_and_tokens_keep_rising() {
    let mut server = Server::builder()
        .arg("appendonly", "yes")
        .arg("appendfsync", "always")
        .start();
    let mut c = server.conn();
    let a = c.q("RLOCK.ACQUIRE a alice PX 60000").int();
    c.q("RLOCK.ACQUIRE a alice PX 60000");
    let b = c.q("RLOCK.ACQUIRE b bob PX 60000").int();
    c.q("RLOCK.ACQUIRE short carol PX 50");
    server.kill9_and_restart();
    std::thread::sleep(std::time::Duration::from_millis(60));
    let mut c = server.conn();
    let info = c.q("RLOCK.INFO a");
    assert_eq!(info.field("owner").text(), "alice");
    assert_eq!(
        info.field("holds").int(),
        2,
        "hold counts are exact, nothing duplicated"
    );
    assert_eq!(info.field("token").int(), a);
    assert_eq!(token_of(&mut c, "b"), b);
    assert!(
        c.q("RLOCK.INFO short").is_nil(),
        "a lease that ran out is gone"
    );
    assert_eq!(c.q("RLOCK.RELEASE a alice").int(), 1);
    assert_eq!(c.q("RLOCK.RELEASE a alice").int(), 0);
    let next = c.q("RLOCK.ACQUIRE a dave").int();
    assert!(next > a && next > b, "{next} after {a} and {b}");
}

#[test]
fn locks_survive_kill9_after_save_with_rdb() {
    let mut server = Server::builder().arg("appendonly", "no").start();
    let mut c = server.conn();
    let token = c.q("RLOCK.ACQUIRE a alice PX 60000").int();
    c.q("RLOCK.ACQUIRE a alice PX 60000");
    assert_eq!(c.q("SAVE").text(), "OK");
    server.kill9_and_restart();
    let mut c = server.conn();
    assert_eq!(c.q("RLOCK.INFO a").field("holds").int(), 2);
    assert_eq!(token_of(&mut c, "a"), token);
    c.q("RLOCK.FORCERELEASE a");
    assert!(c.q("RLOCK.ACQUIRE a bob").int() > token);
}

#[test]
fn tokens_rise_across_debug_reload_and_flushall() {
    let server = Server::start();
    let mut c = server.conn();
    let first = c.q("RLOCK.ACQUIRE a alice").int();
    assert_eq!(c.q("DEBUG RELOAD").text(), "OK");
    assert_eq!(token_of(&mut c, "a"), first);
    c.q("RLOCK.RELEASE a alice");
    let second = c.q("RLOCK.ACQUIRE a bob").int();
    assert!(second > first);
    c.q("FLUSHALL");
    let third = c.q("RLOCK.ACQUIRE a carol").int();
    assert!(third > second);
}

#[test]
fn a_replica_with_the_module_stays_passive_and_takes_over_when_promoted() {
    let master = Server::builder().master();
    let replica = Server::builder().replica_of(&master);
    let mut r = replica.conn();
    let mut m = master.conn();
    let first = m.q("RLOCK.ACQUIRE k alice PX 60000").int();
    // A lease that runs out on the master with a waiter: the handoff happens there only.
    m.q("RLOCK.ACQUIRE e old PX 100");
    let waiter = Pending::send(&master, "RLOCK.ACQUIRE e new PX 60000 WAIT 5000");
    let handed = waiter.reply().int();
    assert!(handed > first);
    common::sync_replica(&mut m);

    assert!(r.q("RLOCK.ACQUIRE k bob").err().starts_with("READONLY"));
    assert_eq!(r.q("RLOCK.INFO k").field("owner").text(), "alice");
    assert_eq!(r.q("RLOCK.INFO e").field("owner").text(), "new");
    let replica_stats = replica.info("rlock");
    for counter in ["acquisitions", "handoffs", "expiry_wakeups", "waiters"] {
        assert!(
            replica_stats.contains(&format!("rlock_{counter}:0")),
            "{counter}: {replica_stats}"
        );
    }

    // Failover: the client waited for replication, then the replica is promoted.
    drop(master);
    assert_eq!(r.q("REPLICAOF NO ONE").text(), "OK");
    let waiter = Pending::send(&replica, "RLOCK.ACQUIRE k bob WAIT 5000");
    replica.wait_blocked(1);
    assert_eq!(r.q("RLOCK.RELEASE k alice").int(), 0);
    let after = waiter.reply().int();
    assert!(after > handed && after > first, "{after} after {handed}");
}
