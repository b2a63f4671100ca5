//! What upkeep asks of the plain lock (the family contract): serving its queue from a timer,
//! announcing it free, and renewing or ending a watchdog holding.

use crate::api::{bytes, now_ms, Ctx, OwnedStr};
use crate::clock::lease_end;
use crate::families::contract::{Family, HandOver, Held};
use crate::holdings;
use crate::kinds::{LockType, Want, Word};
use crate::lifetime::watchdog::{Binding, LockId};
use crate::queue;
use crate::stats;
use crate::store::{open_if, open_to_renew, LockKey};
use crate::watch::{after_grant, arm_renewals, watch_lease};

use super::rules::{View, WANT};
use super::serve::{announce_free, serve};

pub struct Plain;

impl Family for Plain {
    fn words(&self) -> &'static [&'static Word] {
        &[WANT.word]
    }

    fn kind(&self) -> Option<LockType> {
        Some(LockType::Plain)
    }

    fn load(&self) {
        super::store::init();
    }

    fn keeps_lock_hash(&self) -> bool {
        true
    }

    fn waits_for_owners(&self) -> bool {
        true
    }

    /// Its holder, and the requests for several keys ahead (one may keep a free key until it
    /// has them all, and waits for every key it names, as one owner). Single-key waiters ahead
    /// wait for the same holder, so they add no edge of their own.
    fn blockers(&self, lock: &LockKey, db: i32, _want: Want, owner: &[u8]) -> Vec<Vec<u8>> {
        let holder = lock.holder().map(|h| h.owner).into_iter();
        let groups = queue::groups_ahead_of(db, bytes(lock.name()), owner);
        holder.chain(groups).collect()
    }

    fn stored_token(&self, _key: &[u8], hash: &LockKey) -> Option<i64> {
        hash.token()
    }

    /// An rlock lock has a token (a Redisson-protocol lock has none).
    fn holders(&self, lock: &LockKey, keep: &dyn Fn(i64) -> bool) -> Vec<Held> {
        let Some(token) = lock.token().filter(|&t| keep(t)) else {
            return Vec::new();
        };
        let held = lock.holder().map(|h| Held {
            owner: h.owner,
            holds: h.holds,
            token,
        });
        held.into_iter().collect()
    }

    /// A request for several keys may now head every queue with this key its own owner's:
    /// held keys are served too (a single waiter just stays).
    fn check_held(&self, ctx: Ctx, lock: &mut LockKey, db: i32, _expired: bool, _: HandOver) {
        if serve(lock, db).is_some() {
            arm_renewals(ctx);
        }
        watch_lease(ctx, db, bytes(lock.name()), lock.expire_at())
    }

    fn serve_free(&self, ctx: Ctx, lock: &mut LockKey, db: i32) -> bool {
        let granted = serve(lock, db);
        after_grant(ctx, db, bytes(lock.name()), granted)
    }

    fn announce_free(&self, ctx: Ctx, key: &[u8]) {
        announce_free(ctx, key);
    }

    fn set_lease(&self, ctx: Ctx, id: &LockId, binding: &Binding, now: i64, lease_ms: i64) -> bool {
        let bound = |l: &LockKey| still_bound(l, binding);
        let Some((_name, mut lock)) = open_to_renew(ctx, id, &binding.owner, bound) else {
            return false;
        };
        let lease_end = lease_end(now, lease_ms, lock.cap());
        if lease_end <= now {
            return false;
        }
        let expire_at = lock.set_lease_end(lease_end);
        watch_lease(ctx, id.0, &id.1, Some(expire_at));
        true
    }

    fn end_holding(&self, ctx: Ctx, id: &LockId, binding: &Binding, hand_over: HandOver) {
        let Some((_name, mut lock)) = open_if(ctx, (id.0, &id.1), |l| still_bound(l, binding))
        else {
            return;
        };
        stats::WATCHDOG_RELEASES.add();
        if lock.delay().is_some() {
            // Not the owner's release: the lease ends now, and the lock-delay runs.
            let expire_at = lock.set_lease_end(now_ms());
            holdings::unbind(id.0, &id.1);
            holdings::tell_change(ctx, &id.1, c"rlock.dropped");
            watch_lease(ctx, id.0, &id.1, Some(expire_at));
        } else {
            lock.delete();
            holdings::tell_change(ctx, &id.1, c"rlock.dropped");
            hand_over(&mut lock);
        }
    }
}

/// Whether the lock is still held by the binding's holding (owner and token).
fn still_bound(lock: &LockKey, binding: &Binding) -> bool {
    let owner = OwnedStr::new(&binding.owner);
    lock.kind() == Some(LockType::Plain)
        && matches!(lock.view(owner.0), Ok(View::Mine { token, .. }) if token == binding.token)
}
