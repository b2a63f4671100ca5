//! Serving the plain lock's queue: a free lock goes to its first waiter, with a fresh token.

use crate::api::{bytes, now_ms, Ctx, RStr};
use crate::clock::{issue_token, lease_end};
use crate::config;
use crate::error::{Error, Result};
use crate::holdings::{bind, publish, tell_change, tell_loss, unbind, Holding};
use crate::kinds::{LockType, Want};
use crate::lifetime::retries::{Kind, Memory};
use crate::queue::{self, Admission, Request, Verdict};
use crate::stats;
use crate::store::LockKey;

use super::all::{open_others, take_all, views};
use super::rules::View;
use super::store::Extra;
use std::rc::Rc;

/// The plain lock's rules as the queue asks them, over one opened key.
struct Plain<'a> {
    lock: &'a mut LockKey,
    db: i32,
    lease_end: Option<i64>,
}

impl Admission for Plain<'_> {
    fn admit(&mut self, want: Want) -> Verdict {
        match want == Want::Lock && self.lock.is_free() {
            true => Verdict::Enter,
            false => Verdict::Wait,
        }
    }

    fn enter(&mut self, ask: &Request, _want: Want) -> Result<i64> {
        let token = issue_token();
        self.lease_end = Some(grant_fresh(self.lock, self.db, ask, token));
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
    let delay = ask.lock_delay_ms.or_else(config::lock_delay_ms);
    let expire_at = lease_end(now, ask.lease_ms, cap).saturating_add(delay.unwrap_or(0));
    let extra = Extra {
        token: Some(token),
        ids: ids.as_deref(),
        cap,
        delay,
    };
    lock.grant(ask.owner, extra, expire_at);
    let key = bytes(lock.name());
    unbind(db, key);
    let holding = Holding {
        kind: LockType::Plain,
        owner: bytes(ask.owner),
        token: Some(token),
    };
    tell_loss(db, key, &holding, ask, Want::Lock);
    if let Some(client) = ask.bind_to {
        bind(db, key, holding, client, ask.lease_ms, !ask.by_message);
    }
    tell_change(lock.ctx(), key, c"rlock.acquired");
    stats::ACQUISITIONS.add();
    expire_at
}

/// Tells Redisson's waiters the lock is free: `0` on `redisson_lock__channel:{key}`.
pub fn announce_free(ctx: Ctx, key: &[u8]) {
    publish(
        ctx,
        &[&b"redisson_lock__channel:{"[..], key, b"}"].concat(),
        b"0",
    );
}
