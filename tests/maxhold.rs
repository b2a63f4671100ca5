//! Hold caps: a holding cannot outlive its grant time + MAXHOLD, whatever renews it.

mod common;
use common::{Pending, Server};
use std::time::{Duration, Instant};

#[test]
fn a_capped_watchdog_lock_ends_on_time_and_the_waiter_gets_it() {
    let server = Server::start();
    let mut holder = server.conn();
    let granted = Instant::now();
    holder.q("RLOCK.ACQUIRE k hung PX 300 WATCHDOG MAXHOLD 1000");
    let waiter = Pending::send(&server, "RLOCK.ACQUIRE k next WAIT 10000");
    server.wait_blocked(1);
    // The holder keeps its connection busy: the watchdog would renew it forever.
    let mut pings = server.conn();
    let token = loop {
        pings.q("PING");
        if server.blocked_clients() == 0 {
            break waiter.reply().int();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let ended = granted.elapsed();
    assert!(token > 0);
    // The cap is the server's grant time in whole ms + 1000: up to 1 ms before this clock's.
    assert!(ended >= Duration::from_millis(998), "{ended:?}");
    assert!(
        ended < Duration::from_millis(1300),
        "{ended:?} (generous bound; aim 5 ms)"
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
