//! Taking the plain lock: what its commands and its queue's serving share. The lock as an
//! owner sees it, writing what an acquire decided (a fresh holding or one more hold), and
//! taking several keys at once for a request that waited for all of them.

use crate::api::{bytes, now_ms, Ctx, OwnedStr, RStr};
use crate::clock::{lease_end, observe_token, with_token_clock};
use crate::config;
use crate::error::{Error, Result};
use crate::holdings::{self, bind_of, tell_change, tell_loss_of, unbind, Holding, Names};
use crate::kinds::{Acquire, LockType};
use crate::lifetime::retries::{encode_one, Kind, Memory};
use crate::queue::Request;
use crate::stats;
use crate::store::LockKey;
use crate::subscriptions::watch_fresh_for_loss;
use crate::watch::{arm_renewals, watch_lease};
use std::rc::Rc;

use super::rules::{self as lock, View};
use super::store::Extra;

/// The lock as `owner` sees it, with any token it reveals fed to the token clock.
pub fn view(lock: &LockKey, owner: RStr) -> Result<View> {
    let view = lock.view(owner)?;
    if let View::Mine { token, .. } = view {
        observe_token(token);
    }
    Ok(view)
}

pub fn plain_holding(owner: &[u8], token: Option<i64>) -> Holding<'_> {
    Holding {
        kind: LockType::Plain,
        owner,
        token,
    }
}

/// The ids `owner`'s holding remembers, read once, only for a call with an id by the holder.
pub fn memory_for(lock: &LockKey, id: Option<&[u8]>, view: View) -> Option<Memory> {
    (id.is_some() && matches!(view, View::Mine { .. })).then(|| lock.ids())
}

/// `memory` with one more call remembered, encoded for the hash.
pub fn remembered(memory: Option<Memory>, kind: Kind, id: &[u8], value: i64) -> Vec<u8> {
    let mut memory = memory.unwrap_or_default();
    memory.remember(kind, id, value, now_ms(), config::retry_window_ms());
    memory.encode()
}

/// Writes what an acquire decided into `lock`: a fresh holding, or one more hold of the
/// owner's (its request id remembered in `memory`, the ids its holding had, if read). Returns
/// the token. Shared by the one-key and the several-keys acquire.
pub fn apply(
    ctx: Ctx,
    (lock, db): (&mut LockKey, i32),
    request: &Request,
    decision: Acquire,
    memory: Option<Memory>,
) -> Result<i64> {
    let key = bytes(lock.name());
    match decision {
        Acquire::Fresh { token } => {
            let granted = grant_fresh(lock, db, request, token);
            if request.bind_to.is_some() {
                arm_renewals(ctx);
            }
            let lease = (granted.key, Some(granted.expire_at));
            watch_fresh_for_loss(ctx, request, (db, key), lease);
            Ok(token)
        }
        Acquire::Reentry {
            holds,
            token,
            new_token,
        } => {
            let ids = request
                .id
                .map(|id| remembered(memory, Kind::Acquire, id, token));
            let extra = Extra {
                token: new_token.then_some(token),
                ids: ids.as_deref(),
                cap: None,
                delay: None,
            };
            lock.set_holds(request.owner, holds, extra);
            let expire_at = lock.set_lease_end(lease_end(now_ms(), request.lease_ms, lock.cap()));
            if let Some(client) = request.bind_to {
                let holding = plain_holding(bytes(request.owner), Some(token));
                if holdings::bind_if_unbound(db, key, holding, client, request.lease_ms, true) {
                    arm_renewals(ctx);
                }
            }
            watch_lease(ctx, db, key, Some(expire_at));
            stats::REENTRIES.add();
            Ok(token)
        }
        Acquire::Overflow => Err(Error::HoldsOverflow),
        Acquire::Busy => Err(Error::Internal),
    }
}

/// Each lock as `owner` sees it.
pub fn views<'a>(locks: impl IntoIterator<Item = &'a LockKey>, owner: RStr) -> Result<Vec<View>> {
    locks.into_iter().map(|lock| view(lock, owner)).collect()
}

/// Takes every one of `locks` (seen as `views` by the request's owner) for `request` if each
/// is free or already the owner's; None, with nothing changed, if any is someone else's. The
/// tokens are in the locks' order.
pub fn take_all(
    ctx: Ctx,
    locks: &mut [&mut LockKey],
    views: Vec<View>,
    db: i32,
    request: &Request,
) -> Result<Option<Vec<i64>>> {
    if views.contains(&View::Theirs) {
        return Ok(None);
    }
    if views
        .iter()
        .any(|v| matches!(v, View::Mine { holds, .. } if *holds == i64::MAX))
    {
        return Err(Error::HoldsOverflow);
    }
    let mut tokens = Vec::with_capacity(locks.len());
    for (lock, view) in locks.iter_mut().zip(views) {
        let memory = memory_for(lock, request.id, view);
        let decision = with_token_clock(|clock, now_us| lock::acquire(view, clock, now_us));
        tokens.push(apply(ctx, (lock, db), request, decision, memory)?);
    }
    Ok(Some(tokens))
}

/// Opens the keys of a request for several keys, other than the one `open` already is, from
/// a context pointed at their db.
pub fn open_others(
    ctx: Ctx,
    open: &[u8],
    keys: &[Rc<[u8]>],
) -> Result<Vec<(OwnedStr, Option<LockKey>)>> {
    keys.iter()
        .map(|key| {
            let name = OwnedStr::new(key);
            let lock = match **key == *open {
                true => None,
                false => Some(LockKey::open_as(ctx, name.0, true, LockType::Plain)?),
            };
            Ok((name, lock))
        })
        .collect()
}

/// A fresh holding, written.
pub struct Granted {
    pub expire_at: i64,
    /// The copy of the key made for its watchdog binding or loss notice, if either was made:
    /// its lease timer keeps it too.
    pub key: Option<Rc<[u8]>>,
}

/// Writes a new holding for `ask` with `token` into a free lock: its hold cap, the request
/// id it remembers, and its watchdog binding.
pub fn grant_fresh(lock: &mut LockKey, db: i32, ask: &Request, token: i64) -> Granted {
    let now = now_ms();
    let cap = ask
        .max_hold_ms
        .or_else(config::max_hold_ms)
        .map(|ms| now + ms);
    let ids = ask.id.map(|id| encode_one(Kind::Acquire, id, token, now));
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
    let names = Names::new(key, holding.owner);
    tell_loss_of(db, &names, &holding, ask, lock::WANT);
    if let Some(client) = ask.bind_to {
        bind_of(db, &names, holding, (client, ask.lease_ms), !ask.by_message);
    }
    tell_change(lock.ctx(), key, c"rlock.acquired");
    stats::ACQUISITIONS.add();
    Granted {
        expire_at,
        key: names.made_key(),
    }
}
