//! Hold caps: a holding cannot outlive its grant time + MAXHOLD, whatever renews it.

mod common;
use common::{Pending, Server};

/// Read on the server's own clock (the tokens are grant times, the cap an absolute ms), so a
/// loaded machine's late client cannot make it fail: the waiter is granted at the cap, not
/// before (the watchdog renewed the 300 ms lease until then) and not never (WAIT would run out).
#[test]
fn a_capped_watchdog_lock_ends_at_its_cap_and_the_waiter_gets_it() {
    let server = Server::start();
    let mut holder = server.conn();
    let held = holder
        .q("RLOCK.ACQUIRE k hung PX 300 WATCHDOG MAXHOLD 1000")
        .int();
    let cap = holder.q("HGET k rlock:maxhold").int();
    // The cap is the grant time in whole ms + MAXHOLD (the token is the grant time in µs).
    assert!(
        (cap - (held / 1000 + 1000)).abs() <= 1,
        "cap {cap}, token {held}"
    );
    let waiter = Pending::send(&server, "RLOCK.ACQUIRE k next WAIT 60000");
    let token = waiter.reply().int();
    assert!(
        token > 0,
        "the waiter got the lock, not a wait that ran out"
    );
    let granted_ms = token / 1000;
    assert!(
        granted_ms >= cap,
        "granted at {granted_ms}, before the cap {cap}"
    );
    assert_eq!(holder.q("RLOCK.INFO k").field("owner").text(), "next");
}

#[test]
fn reentry_and_renew_are_clipped_to_the_cap() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k a PX 60000 MAXHOLD 5000");
    let cap = c.q("HGET k rlock:maxhold").int();
    assert_eq!(c.q("PEXPIRETIME k").int(), cap);
    c.q("RLOCK.ACQUIRE k a PX 60000 MAXHOLD 100000");
    assert_eq!(
        c.q("PEXPIRETIME k").int(),
        cap,
        "a re-entry cannot lift the cap"
    );
    assert_eq!(c.q("RLOCK.RENEW k a PX 60000").int(), 1);
    assert_eq!(c.q("PEXPIRETIME k").int(), cap);
    c.q("RLOCK.RENEW k a PX 100");
    assert!(c.q("PEXPIRETIME k").int() < cap, "a shorter lease is kept");
}

#[test]
fn the_configured_cap_applies_to_holdings_without_maxhold() {
    let server = Server::builder()
        .module_args(&["max-hold-ms", "2000"])
        .start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k a PX 60000");
    let ttl = c.q("PTTL k").int();
    assert!((1..=2000).contains(&ttl), "{ttl}");
    c.q("RLOCK.ACQUIRE j a PX 60000 MAXHOLD 10000");
    assert!(
        c.q("PTTL j").int() > 2000,
        "MAXHOLD overrides the default cap"
    );
    c.q("CONFIG SET rlock.max-hold-ms 0");
    c.q("RLOCK.ACQUIRE free a PX 60000");
    assert!(c.q("PTTL free").int() > 59_000);
    assert_eq!(c.q("HEXISTS free rlock:maxhold").int(), 0);
}
