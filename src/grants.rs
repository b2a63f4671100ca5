//! Giving the lock to someone: the fencing-token clock, and handing a free lock to the
//! first waiter so that nobody can barge in ahead of the queue.

use crate::api::{api, bytes, now_ms, now_us, Ctx, OwnedStr};
use crate::config;
use crate::lock::TokenClock;
use crate::stats;
use crate::store::LockKey;
use crate::waiters::{self, Outcome};
use std::cell::RefCell;

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
    let expire_at = now_ms() + waiter.lease_ms;
    lock.grant(waiter.owner.0, token, expire_at);
    waiters::deliver(bc, Outcome::Granted(token));
    stats::ACQUISITIONS.add();
    stats::HANDOFFS.add();
    Some(expire_at)
}

/// After a full release: the next waiter gets the lock (its lease end is returned), or, with
/// nobody queued, Redisson clients are told it is free on their unlock channel.
pub fn hand_over_or_announce(ctx: Ctx, lock: &mut LockKey, db: i32) -> Option<i64> {
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
