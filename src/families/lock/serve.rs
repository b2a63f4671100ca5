//! Serving the plain lock's queue: a free lock goes to its first waiter, with a fresh token.

use crate::api::{bytes, now_ms, Ctx, OwnedStr, RStr};
use crate::clock::issue_token;
use crate::config;
use crate::error::{Error, Result};
use crate::holdings::{publish, publish_to};
use crate::kinds::Want;
use crate::queue::{self, Admission, Request, Verdict};
use crate::stats;
use crate::store::LockKey;

use super::fair_queue::next_redisson_waiter;
use super::rules::{View, WANT};
use super::take::{grant_fresh, open_others, take_all, views};
use std::rc::Rc;

/// The plain lock's rules as the queue asks them, over one opened key.
struct Plain<'a> {
    lock: &'a mut LockKey,
    db: i32,
    lease_end: Option<i64>,
}

impl Admission for Plain<'_> {
    fn admit(&mut self, want: Want) -> Verdict {
        match want == WANT && self.lock.is_free() {
            true => Verdict::Enter,
            false => Verdict::Wait,
        }
    }

    fn enter(&mut self, ask: &Request, _want: Want) -> Result<i64> {
        let token = issue_token();
        self.lease_end = Some(grant_fresh(self.lock, self.db, ask, token).expire_at);
        stats::HANDOFFS.add();
        Ok(token)
    }

    /// Each key must be free, or already the owner's (it re-enters).
    fn admit_all(&mut self, owner: RStr, keys: &[Rc<[u8]>]) -> Verdict {
        let others = match open_others(self.lock.ctx(), bytes(self.lock.name()), keys) {
            Ok(others) => others,
            Err(error) => return Verdict::Fail(error),
        };
        let mut views = others
            .iter()
            .map(|(_, lock)| lock.as_ref().unwrap_or(self.lock).view(owner));
        match views.try_fold(true, |free, view| Ok(free && view? != View::Theirs)) {
            Ok(true) => Verdict::Enter,
            Ok(false) => Verdict::Wait,
            Err(error) => Verdict::Fail(error),
        }
    }

    fn enter_all(&mut self, ask: &Request, keys: &[Rc<[u8]>]) -> Result<Vec<i64>> {
        let ctx = self.lock.ctx();
        let mut others = open_others(ctx, bytes(self.lock.name()), keys)?;
        let mut own = Some(&mut *self.lock);
        let mut locks = others
            .iter_mut()
            .map(|(_, lock)| lock.as_mut().or_else(|| own.take()))
            .collect::<Option<Vec<&mut LockKey>>>()
            .ok_or(Error::Internal)?;
        let views = views(locks.iter().map(|lock| &**lock), ask.owner)?;
        let tokens = take_all(ctx, &mut locks, views, self.db, ask)?.ok_or(Error::Internal)?;
        drop(locks);
        self.lease_end = self.lock.expire_at();
        stats::HANDOFFS.add();
        Ok(tokens)
    }
}

/// Hands a free lock to the first waiter of its queue. Returns its lease end, to watch.
pub fn serve(lock: &mut LockKey, db: i32) -> Option<i64> {
    let key = bytes(lock.name()).to_vec();
    let mut plain = Plain {
        lock,
        db,
        lease_end: None,
    };
    queue::serve(db, &key, &mut plain);
    plain.lease_end
}

/// Tells Redisson's waiters the lock is free, as Redisson's unlock scripts do: `0` on
/// `redisson_lock__channel:{key}` (its plain lock's waiters), and `0` on that channel
/// `:<id>` for the next waiter of its fair lock's queue, if one waits: each fair waiter
/// listens only on its own.
pub fn announce_free(ctx: Ctx, key: &[u8]) {
    if !config::redisson_publish() {
        return;
    }
    let channel = OwnedStr::joined(&[b"redisson_lock__channel:{", key, b"}"]);
    publish_to(ctx, &channel, b"0");
    if let Some(next) = next_redisson_waiter(ctx, key, now_ms()) {
        publish(ctx, &[bytes(channel.0), b":", &next].concat(), b"0");
    }
}
