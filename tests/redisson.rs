//! Redisson-protocol clients (its Lua scripts) and RLOCK clients share one lock name.

mod common;
use common::redisson;
use common::{Pending, Server};

#[test]
fn a_redisson_holder_excludes_rlock_clients() {
    let server = Server::start();
    let mut c = server.conn();
    assert_eq!(redisson::try_acquire(&mut c, "k", "uuid-1:7", 30000), None);
    assert!(c.q("RLOCK.ACQUIRE k rlock-client").is_nil());
    assert!(c.q("RLOCK.RELEASE k rlock-client").is_nil());
    let info = c.q("RLOCK.INFO k");
    assert_eq!(info.field("owner").text(), "uuid-1:7");
    assert!(
        info.field("token").is_nil(),
        "Redisson's scripts issue no token"
    );
    assert_eq!(
        redisson::release(&mut c, "k", "uuid-1:7", 30000),
        Some(true)
    );
    assert!(c.q("RLOCK.ACQUIRE k rlock-client").int() > 0);
}

#[test]
fn an_rlock_holder_excludes_redisson_clients() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k rlock-client PX 20000");
    let ttl = redisson::try_acquire(&mut c, "k", "uuid-2:1", 30000).expect("refused with the PTTL");
    assert!((19000..=20000).contains(&ttl), "pttl {ttl}");
    assert_eq!(redisson::release(&mut c, "k", "uuid-2:1", 30000), None);
    assert_eq!(c.q("RLOCK.RELEASE k rlock-client").int(), 0);
    assert_eq!(redisson::try_acquire(&mut c, "k", "uuid-2:1", 30000), None);
}

#[test]
fn one_owner_may_reenter_through_either_protocol() {
    let server = Server::start();
    let mut c = server.conn();
    let token = c.q("RLOCK.ACQUIRE k uuid-3:1").int();
    assert_eq!(redisson::try_acquire(&mut c, "k", "uuid-3:1", 30000), None);
    assert_eq!(c.q("RLOCK.INFO k").field("holds").int(), 2);
    assert_eq!(c.q("RLOCK.ACQUIRE k uuid-3:1").int(), token);
    assert_eq!(
        redisson::release(&mut c, "k", "uuid-3:1", 30000),
        Some(false)
    );
    assert_eq!(c.q("RLOCK.RELEASE k uuid-3:1").int(), 1);
    assert_eq!(
        redisson::release(&mut c, "k", "uuid-3:1", 30000),
        Some(true)
    );
    assert_eq!(c.q("EXISTS k").int(), 0);
}

#[test]
fn a_lock_taken_by_redisson_gets_a_token_on_rlock_reentry() {
    let server = Server::start();
    let mut c = server.conn();
    redisson::try_acquire(&mut c, "k", "uuid-4:1", 30000);
    let token = c.q("RLOCK.ACQUIRE k uuid-4:1").int();
    assert!(token > 0);
    assert_eq!(c.q("RLOCK.INFO k").field("token").int(), token);
    assert_eq!(c.q("RLOCK.ACQUIRE k uuid-4:1").int(), token);
}

#[test]
fn a_redisson_release_hands_the_lock_to_an_rlock_waiter_at_once() {
    let server = Server::start();
    let mut c = server.conn();
    redisson::try_acquire(&mut c, "k", "uuid-5:1", 60000);
    let waiter = Pending::send(&server, "RLOCK.ACQUIRE k rlock-waiter WAIT 10000");
    server.wait_blocked(1);
    let started = std::time::Instant::now();
    assert_eq!(
        redisson::release(&mut c, "k", "uuid-5:1", 60000),
        Some(true)
    );
    let token = waiter.reply().int();
    assert!(token > 0);
    assert!(
        started.elapsed().as_millis() < 1000,
        "woken by the DEL, not a timeout"
    );
    assert_eq!(c.q("RLOCK.INFO k").field("owner").text(), "rlock-waiter");
}

#[test]
fn an_rlock_release_wakes_redisson_subscribers() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k rlock-client");
    let mut redisson_waiter = server.conn();
    redisson_waiter.cmd(&["SUBSCRIBE", &redisson::channel("k")]);
    assert!(redisson::try_acquire(&mut c, "k", "uuid-6:1", 30000).is_some());
    c.q("RLOCK.RELEASE k rlock-client");
    let message = redisson_waiter.read().expect("unlock message").items();
    assert_eq!(message[2].text(), "0");
    assert_eq!(redisson::try_acquire(&mut c, "k", "uuid-6:1", 30000), None);
}
