//! Redisson-protocol clients (its Lua scripts) and RLOCK clients share one lock name.

mod common;
use common::redisson;
use common::{Conn, Pending, Server};

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

/// Redisson's fair-lock queue beside lock `key`, as its waiters leave it (`RPUSH` in order, a
/// give-up time each in the timeout zset): `(id, ms from the server's now)`.
fn queue_redisson_fair_waiters(c: &mut Conn, key: &str, waiters: &[(&str, i64)]) {
    let time = c.q("TIME").items();
    let now_ms = time[0].text().parse::<i64>().unwrap() * 1000
        + time[1].text().parse::<i64>().unwrap() / 1000;
    for (id, from_now) in waiters {
        c.cmd(&["RPUSH", &format!("redisson_lock_queue:{{{key}}}"), id]);
        let at = (now_ms + from_now).to_string();
        c.cmd(&["ZADD", &format!("redisson_lock_timeout:{{{key}}}"), &at, id]);
    }
}

/// A connection listening on every Redisson fair waiter's channel of lock `key`.
fn fair_channels(server: &Server, key: &str) -> Conn {
    let mut sub = server.conn();
    let pattern = format!("{}:*", redisson::channel(key));
    assert_eq!(sub.cmd(&["PSUBSCRIBE", &pattern]).items()[2].int(), 1);
    sub
}

/// The channel of the next message on a `fair_channels` connection, and its text.
fn next_fair_message(sub: &mut Conn) -> (String, String) {
    let message = sub
        .read()
        .expect("a message on a fair waiter's channel")
        .items();
    (message[2].text(), message[3].text())
}

fn no_further_message(sub: &mut Conn) {
    sub.set_read_timeout(Some(std::time::Duration::from_millis(300)));
    assert!(sub.read().is_err(), "no further message");
}

#[test]
fn an_rlock_release_tells_the_first_live_redisson_fair_waiter_on_its_own_channel() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k rlock-client");
    // uuid:1 gave up a second ago (Redisson's next script drops it): uuid:2 is next.
    queue_redisson_fair_waiters(
        &mut c,
        "k",
        &[("uuid:1", -1000), ("uuid:2", 60000), ("uuid:3", 65000)],
    );
    let mut sub = fair_channels(&server, "k");
    assert_eq!(c.q("RLOCK.RELEASE k rlock-client").int(), 0);
    let expected = format!("{}:uuid:2", redisson::channel("k"));
    assert_eq!(next_fair_message(&mut sub), (expected, "0".to_string()));
    no_further_message(&mut sub);
    // Redisson's keys are read, never changed: its own scripts keep them.
    assert_eq!(c.q("LRANGE redisson_lock_queue:{k} 0 -1").items().len(), 3);
    assert_eq!(c.q("ZCARD redisson_lock_timeout:{k}").int(), 3);
}

#[test]
fn rlock_waiters_go_first_and_the_redisson_fair_waiter_hears_when_none_is_left() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k first");
    queue_redisson_fair_waiters(&mut c, "k", &[("uuid:9", 60000)]);
    let waiter = Pending::send(&server, "RLOCK.ACQUIRE k second WAIT 10000");
    server.wait_blocked(1);
    let mut sub = fair_channels(&server, "k");
    c.q("RLOCK.RELEASE k first");
    assert!(waiter.reply().int() > 0, "the rlock waiter holds");
    c.q("RLOCK.RELEASE k second");
    let expected = format!("{}:uuid:9", redisson::channel("k"));
    assert_eq!(next_fair_message(&mut sub), (expected, "0".to_string()));
    no_further_message(&mut sub);
}

#[test]
fn without_a_fair_queue_only_the_lock_channel_hears() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k rlock-client");
    let mut sub = fair_channels(&server, "k");
    c.q("RLOCK.RELEASE k rlock-client");
    no_further_message(&mut sub);
}
