//! Lock-delay (`LOCKDELAY ms`, `rlock.lock-delay-ms`): after a holding ends other than by its
//! owner's release (lease end, a closed watchdog connection), nobody gets the lock for the
//! delay; waiters keep their places and the first is granted when it ends. A release by the
//! owner and FORCERELEASE skip it.

mod common;
use common::{wait_until, Pending, Server};
use std::time::{Duration, Instant};

#[test]
fn a_lease_that_ends_under_a_2_s_lock_delay_grants_the_next_waiter_no_sooner_than_2_s_later() {
    let server = Server::start();
    let mut admin = server.conn();
    let token = admin.q("RLOCK.ACQUIRE l a PX 300 LOCKDELAY 2000").int();
    let lease_end = Instant::now() + Duration::from_millis(300);
    let waiter = Pending::send(&server, "RLOCK.ACQUIRE l b PX 10000 WAIT 10000").reply_when();
    server.wait_blocked(1);
    assert_eq!(admin.q("RLOCK.INFO l").field("lockdelay").int(), 2000);
    assert!(
        admin.q("RLOCK.INFO l").field("ttl").int() <= 300,
        "ttl is the lease left"
    );

    std::thread::sleep(
        lease_end.saturating_duration_since(Instant::now()) + Duration::from_millis(100),
    );
    let info = admin.q("RLOCK.INFO l");
    assert!(
        info.field("owner").is_nil(),
        "in its delay the lock is held by nobody: {info:?}"
    );
    assert_eq!(info.field("token").int(), token);
    assert!(info.field("ttl").int() > 1000, "the delay left: {info:?}");
    assert!(
        admin.q("RLOCK.ACQUIRE l c PX 1000").is_nil(),
        "a newcomer is refused"
    );
    assert_eq!(
        admin.q("RLOCK.RENEW l a PX 10000").int(),
        0,
        "the old owner cannot renew"
    );
    assert!(admin.q("RLOCK.LEADER l").is_nil());
    assert_eq!(
        admin.q("EXISTS l").int(),
        1,
        "Redisson's clients see a taken lock"
    );

    let (granted, at) = waiter.join().unwrap();
    assert!(granted.int() > token);
    let after_lease_end = at.duration_since(lease_end);
    assert!(
        after_lease_end >= Duration::from_millis(1990),
        "granted {after_lease_end:?} after the lease end"
    );
    assert!(
        after_lease_end < Duration::from_millis(3000),
        "{after_lease_end:?}"
    );
    assert_eq!(admin.q("RLOCK.INFO l").field("owner").text(), "b");
    assert!(
        admin.q("RLOCK.INFO l").field("lockdelay").is_nil(),
        "b asked for none"
    );
    server.assert_no_crash();
}

#[test]
fn a_release_by_the_owner_and_forcerelease_skip_the_delay() {
    let server = Server::start();
    let mut admin = server.conn();
    admin.q("RLOCK.ACQUIRE l a PX 10000 LOCKDELAY 5000");
    let waiter = Pending::send(
        &server,
        "RLOCK.ACQUIRE l b PX 10000 LOCKDELAY 5000 WAIT 10000",
    );
    server.wait_blocked(1);
    let released = Instant::now();
    assert_eq!(admin.q("RLOCK.RELEASE l a").int(), 0);
    assert!(waiter.reply().int() > 0);
    assert!(released.elapsed() < Duration::from_millis(1000));

    let waiter = Pending::send(&server, "RLOCK.ACQUIRE l c PX 10000 WAIT 10000");
    server.wait_blocked(1);
    let forced = Instant::now();
    assert_eq!(admin.q("RLOCK.FORCERELEASE l").int(), 1);
    assert!(waiter.reply().int() > 0);
    assert!(forced.elapsed() < Duration::from_millis(1000));
    assert_eq!(admin.q("RLOCK.INFO l").field("owner").text(), "c");
}

#[test]
fn the_server_default_applies_to_holdings_that_ask_for_none() {
    let server = Server::start();
    let mut admin = server.conn();
    admin.q("CONFIG SET rlock.lock-delay-ms 700");
    admin.q("RLOCK.ACQUIRE l a PX 100");
    assert_eq!(admin.q("RLOCK.INFO l").field("lockdelay").int(), 700);
    std::thread::sleep(Duration::from_millis(250));
    assert!(
        admin.q("RLOCK.ACQUIRE l b PX 1000").is_nil(),
        "in the delay"
    );
    wait_until("the delay ends", || admin.q("EXISTS l").int() == 0);
    assert!(admin.q("RLOCK.ACQUIRE l b PX 1000").int() > 0);
}

#[test]
fn a_watchdog_holding_whose_connection_closes_starts_its_delay() {
    let server = Server::start();
    let mut admin = server.conn();
    let mut holder = server.conn();
    holder.q("RLOCK.ACQUIRE l a WATCHDOG LOCKDELAY 1000");
    let waiter = Pending::send(&server, "RLOCK.ACQUIRE l b PX 10000 WAIT 10000").reply_when();
    server.wait_blocked(1);
    let id = holder.q("CLIENT ID").int();
    admin.q(&format!("CLIENT KILL ID {id}"));
    let closed = Instant::now();
    wait_until("the holding is dropped", || {
        admin.q("RLOCK.INFO l").field("owner").is_nil()
    });
    assert!(admin.q("RLOCK.INFO l").field("watchdog").is_nil());
    let (granted, at) = waiter.join().unwrap();
    assert!(granted.int() > 0);
    let waited = at.duration_since(closed);
    assert!(
        waited >= Duration::from_millis(990),
        "granted {waited:?} after the close"
    );
    assert!(waited < Duration::from_millis(2500), "{waited:?}");
}

#[test]
fn bad_lock_delays_are_refused_and_change_nothing() {
    let server = Server::start();
    let mut admin = server.conn();
    for bad in [
        "LOCKDELAY 0",
        "LOCKDELAY -5",
        "LOCKDELAY x",
        "LOCKDELAY",
        "LOCKDELAY 5 LOCKDELAY 5",
    ] {
        let reply = admin.q(&format!("RLOCK.ACQUIRE l a PX 1000 {bad}"));
        assert!(reply.err().starts_with("ERR"), "{bad}: {reply:?}");
        assert_eq!(admin.q("EXISTS l").int(), 0, "{bad}");
    }
    for other in [
        "RWLOCK.ACQUIRE l a WRITE LOCKDELAY 5",
        "RSEM.ACQUIRE s a LOCKDELAY 5",
    ] {
        assert!(
            admin.q(other).err().contains("LOCKDELAY"),
            "{other}: RLOCK only"
        );
    }
}

#[test]
fn a_replica_without_the_module_holds_the_same_delay() {
    let master = Server::builder().master();
    let replica = Server::builder().without_module().replica_of(&master);
    let mut c = master.conn();
    let mut holder = master.conn();
    holder.q("RLOCK.ACQUIRE w a WATCHDOG LOCKDELAY 60000");
    c.q("RLOCK.ACQUIRE l a PX 100 LOCKDELAY 60000");
    drop(holder); // the watchdog holding's delay starts at the close
    wait_until("both delays run", || {
        ["w", "l"]
            .iter()
            .all(|k| c.q(&format!("RLOCK.INFO {k}")).field("owner").is_nil())
    });
    common::sync_replica(&mut c);
    let expected = common::snapshot(&mut c);
    assert_eq!(expected.len(), 2, "{expected:?}");
    assert_eq!(common::snapshot(&mut replica.conn()), expected);
}
