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

/// Hands a free lock to the first live waiter. Returns whether someone got it.
pub fn grant_next(ctx: Ctx, lock: &mut LockKey, db: i32) -> bool {
    let key = bytes(lock.name());
    let Some((bc, waiter)) = waiters::pop_next(ctx, db, key) else {
        return false;
    };
    let token = issue_token();
    let expire_at = now_ms() + waiter.lease_ms;
    lock.grant(waiter.owner.0, token, expire_at);
    waiters::deliver(bc, Outcome::Granted(token));
    stats::ACQUISITIONS.add();
    stats::HANDOFFS.add();
    waiters::watch_lease(ctx, db, key, Some(expire_at));
    true
}

/// A lock found free while clients queue for it (its lease ran out, or it was deleted a
/// moment ago and the deferred handoff has not run yet) goes to the queue first.
pub fn serve_queue_if_free(ctx: Ctx, lock: &mut LockKey, db: i32) {
    if lock.is_free() {
        grant_next(ctx, lock, db); // a no-op without a queue
    }
}

/// After a full release: the next waiter gets the lock, or, with nobody queued, Redisson
/// clients are told it is free on their unlock channel.
pub fn hand_over_or_announce(ctx: Ctx, lock: &mut LockKey, db: i32) {
    if !grant_next(ctx, lock, db) && config::redisson_publish() {
        publish_unlock(ctx, bytes(lock.name()));
    }
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
