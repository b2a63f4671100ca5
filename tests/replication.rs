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
    assert_eq!(c.q("WAIT 1 5000").int(), 1);
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
