//! Writes reach replicas and the AOF as plain commands: servers WITHOUT the module end with
//! the same hashes, tokens and expiry times.

mod common;
use common::{snapshot, Conn, Pending, Server};

/// Acquire, re-entry, renew, partial and full release, handoff, expiry handoff, force release.
fn mixed_workload(server: &Server, c: &mut Conn) {
    c.q("RLOCK.ACQUIRE a alice PX 60000");
    c.q("RLOCK.ACQUIRE a alice PX 60000");
    c.q("RLOCK.RENEW a alice PX 90000");
    c.q("RLOCK.ACQUIRE b bob PX 60000");
    c.q("RLOCK.ACQUIRE b bob");
    c.q("RLOCK.RELEASE b bob");
    c.q("RLOCK.ACQUIRE gone carol");
    c.q("RLOCK.RELEASE gone carol");
    // Handoff on release.
    c.q("RLOCK.ACQUIRE h dave PX 60000");
    let w1 = Pending::send(server, "RLOCK.ACQUIRE h erin PX 70000 WAIT 10000");
    server.wait_blocked(1);
    let w2 = Pending::send(server, "RLOCK.ACQUIRE h frank PX 80000 WAIT 10000");
    server.wait_blocked(2);
    c.q("RLOCK.RELEASE h dave");
    assert!(w1.reply().int() > 0);
    // Handoff on force release.
    c.q("RLOCK.FORCERELEASE h");
    assert!(w2.reply().int() > 0);
    // Handoff when the holder's lease runs out.
    c.q("RLOCK.ACQUIRE x grace PX 50");
    let w3 = Pending::send(server, "RLOCK.ACQUIRE x heidi PX 60000 WAIT 10000");
    assert!(w3.reply().int() > 0);
    c.q("RLOCK.ACQUIRE f ivan");
    c.q("RLOCK.FORCERELEASE f");
}

#[test]
fn a_replica_without_the_module_matches_the_master() {
    let master = Server::builder().master();
    let replica = Server::builder().without_module().replica_of(&master);
    let mut r = replica.conn();
    let mut c = master.conn();
    mixed_workload(&master, &mut c);
    common::sync_replica(&mut c);
    let expected = snapshot(&mut c);
    assert_eq!(expected.len(), 4, "a, b, h, x: {expected:?}");
    assert_eq!(snapshot(&mut r), expected);
    assert_eq!(r.q("HGET x heidi").text(), "1");
}

#[test]
fn an_aof_reload_without_the_module_matches() {
    let master = Server::builder()
        .arg("appendonly", "yes")
        .arg("appendfsync", "always")
        .start();
    let mut c = master.conn();
    mixed_workload(&master, &mut c);
    let expected = snapshot(&mut c);
    let reader = Server::builder()
        .without_module()
        .arg("appendonly", "yes")
        .files_from(&master.dir)
        .start();
    assert_eq!(snapshot(&mut reader.conn()), expected);
}

/// Watchdog renewals, a watchdog release on close, a capped holding, retried calls, a token-
/// guarded force release. Returns the watchdog holder's connection: closing it releases `w`.
fn lifetime_workload(server: &Server, c: &mut Conn) -> Conn {
    let mut holder = server.conn();
    holder.q("RLOCK.ACQUIRE w alice PX 3000 WATCHDOG");
    let mut closing = server.conn();
    closing.q("RLOCK.ACQUIRE gone bob PX 30000 WATCHDOG");
    let waiter = Pending::send(server, "RLOCK.ACQUIRE gone carol PX 40000 WAIT 10000 ID c1");
    server.wait_blocked(1);
    closing.q("QUIT");
    assert!(waiter.reply().int() > 0);
    c.q("RLOCK.ACQUIRE cap dave PX 60000 MAXHOLD 30000");
    c.q("RLOCK.ACQUIRE r erin ID a1");
    c.q("RLOCK.ACQUIRE r erin ID a1");
    c.q("RLOCK.ACQUIRE r erin ID a2");
    c.q("RLOCK.RELEASE r erin ID r1");
    c.q("RLOCK.RELEASE r erin ID r1");
    let token = c.q("RLOCK.ACQUIRE f frank").int();
    assert_eq!(
        c.cmd(&["RLOCK.FORCERELEASE", "f", "TOKEN", &(token - 1).to_string()])
            .int(),
        0
    );
    // Let the watchdog renew.
    let renewals = || server.info_field("rlock", "rlock_watchdog_renewals");
    common::wait_until("a watchdog renewal", || renewals().trim() != "0");
    assert_eq!(c.q("RLOCK.INFO w").field("owner").text(), "alice");
    holder
}

#[test]
fn a_replica_without_the_module_matches_after_lifetime_features() {
    let master = Server::builder().master();
    let replica = Server::builder().without_module().replica_of(&master);
    let mut c = master.conn();
    let _holder = lifetime_workload(&master, &mut c);
    // Renewals wait while writes are paused: both sides hold still while compared.
    let (expected, replicated) = common::paused_snapshots(&mut c, &replica);
    assert_eq!(expected.len(), 5, "w, gone, cap, r, f: {expected:?}");
    assert_eq!(replicated, expected);
}
