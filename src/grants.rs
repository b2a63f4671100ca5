//! Giving the lock to someone: the fencing-token clock, and handing a free lock to the
//! first waiter so that nobody can barge in ahead of the queue.

use crate::api::{api, bytes, now_ms, now_us, Ctx, OwnedStr};
use crate::config;
use crate::lifetime::retries::{Kind, Memory};
use crate::lifetime::with_watchdog;
use crate::lock::{lease_end, TokenClock};
use crate::stats;
use crate::store::{Extra, LockKey};
use crate::waiters::{self, Outcome, Request};
use std::cell::RefCell;
use std::rc::Rc;

thread_local! {
    static TOKENS: RefCell<TokenClock> = RefCell::default();
}

pub fn issue_token() -> i64 {
    with_token_clock(|clock, now_us| clock.issue(now_us))
}

pub fn with_token_clock<R>(f: impl FnOnce(&mut TokenClock, i64) -> R) -> R {
    TOKENS.with(|t| f(&mut t.borrow_mut(), now_us()))
}

pub fn observe_token(token: Option<i64>) {
    if let Some(token) = token {
        TOKENS.with(|t| t.borrow_mut().observe(token));
    }
}

pub fn selected_db(ctx: Ctx) -> i32 {
    // SAFETY: `ctx` is the live context of the current callback.
    unsafe { api!(RedisModule_GetSelectedDb)(ctx) }
}

/// Hands a free lock to the first live waiter. Returns the new holding's lease end, for the
/// caller to watch.
pub fn grant_next(lock: &mut LockKey, db: i32) -> Option<i64> {
    let (bc, waiter) = waiters::pop_next(db, bytes(lock.name()))?;
    let token = issue_token();
    let expire_at = grant_fresh(lock, db, &waiter.ask.request(), token);
    waiters::deliver(bc, Outcome::Granted(token));
    stats::HANDOFFS.add();
    Some(expire_at)
}

/// Writes a new holding for `ask` with `token` into a free lock: its hold cap, the request
/// id it remembers, and its watchdog binding. Returns the lease end.
pub fn grant_fresh(lock: &mut LockKey, db: i32, ask: &Request, token: i64) -> i64 {
    let now = now_ms();
    let cap = ask
        .max_hold_ms
        .or_else(config::max_hold_ms)
        .map(|ms| now + ms);
    let ids = ask.id.map(|id| {
        let mut memory = Memory::default();
        memory.remember(Kind::Acquire, id, token, now, config::retry_window_ms());
        memory.encode()
    });
    let expire_at = lease_end(now, ask.lease_ms, cap);
    let extra = Extra {
        token: Some(token),
        ids: ids.as_deref(),
        cap,
    };
    lock.grant(ask.owner, extra, expire_at);
    let key = bytes(lock.name());
    unbind(db, key);
    if let Some(client) = ask.bind_to {
        bind(db, key, bytes(ask.owner), Some(token), client, ask.lease_ms);
    }
    stats::ACQUISITIONS.add();
    expire_at
}

/// Binds the holding (`owner`, `token`) of the lock at `key` to connection `client`.
pub fn bind(db: i32, key: &[u8], owner: &[u8], token: Option<i64>, client: u64, lease_ms: i64) {
    let (lock, owner) = ((db, Rc::from(key)), Rc::from(owner));
    with_watchdog(|w| w.bind(lock, owner, token, client, lease_ms, now_ms()));
}

/// Ends the lock's watchdog binding, if it has one.
pub fn unbind(db: i32, key: &[u8]) {
    with_watchdog(|w| w.unbind(db, key));
}

/// After a full release: the next waiter gets the lock (its lease end is returned), or, with
/// nobody queued, Redisson clients are told it is free on their unlock channel.
pub fn hand_over_or_announce(ctx: Ctx, lock: &mut LockKey, db: i32) -> Option<i64> {
    unbind(db, bytes(lock.name()));
    let granted = grant_next(lock, db);
    if granted.is_none() && config::redisson_publish() {
        publish_unlock(ctx, bytes(lock.name()));
    }
    granted
}

/// Redisson's unlock message: `0` on `redisson_lock__channel:{key}`.
fn publish_unlock(ctx: Ctx, key: &[u8]) {
    let mut name = Vec::with_capacity(key.len() + 25);
    name.extend_from_slice(b"redisson_lock__channel:{");
    name.extend_from_slice(key);
    name.push(b'}');
    let (channel, message) = (OwnedStr::new(&name), OwnedStr::new(b"0"));
    // SAFETY: both strings are live for the call; Redis copies what it keeps.
    unsafe { api!(RedisModule_PublishMessage)(ctx, channel.0, message.0) };
}
