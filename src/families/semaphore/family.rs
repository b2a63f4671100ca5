//! What upkeep asks of the semaphore (the family contract), and what its commands share with
//! it: settling the semaphore and serving its queue after its holders or counter changed,
//! watching its holders' leases, and renewing or ending a watchdog holder.

use crate::api::{bytes, select, Ctx, OwnedStr};
use crate::clock::lease_end;
use crate::families::contract::{Family, HandOver};
use crate::holdings;
use crate::kinds::{LockType, Word};
use crate::lifetime::watchdog::{Binding, LockId};
use crate::lifetime::with_watchdog;
use crate::queue;
use crate::stats;
use crate::watch::{arm_renewals, serve_other_family, watch_holders};

use super::serve::{give_back, serve_semaphore};
use super::rules::{Holding, HOLDERS_SUFFIX, PERMITS};
use crate::store::LockKey;
use super::store::Semaphore;

pub struct Permits;

impl Family for Permits {
    fn words(&self) -> &'static [&'static Word] {
        &[PERMITS]
    }

    /// The tokens are in the holders hash (`<permits>,<token>,...` per owner), known by name.
    fn stored_token(&self, key: &[u8], hash: &LockKey) -> Option<i64> {
        key.ends_with(HOLDERS_SUFFIX).then_some(())?;
        let fields = hash.fields();
        fields.iter().filter_map(|(_, v)| Holding::parse(v)).map(|h| h.token).max()
    }

    fn kind(&self) -> Option<LockType> {
        Some(LockType::Semaphore)
    }

    fn check(&self, ctx: Ctx, db: i32, key: &[u8]) {
        if let Some((_name, mut sem)) = open(ctx, db, key) {
            semaphore_changed(ctx, db, &mut sem);
        }
    }

    fn set_lease(&self, ctx: Ctx, id: &LockId, binding: &Binding, now: i64, lease_ms: i64) -> bool {
        let (db, key) = (id.0, &id.1);
        let Some((_name, mut sem)) = open(ctx, db, key) else {
            return false;
        };
        let owner = &binding.owner;
        let held = sem.holding(owner).ok().flatten();
        let Some(mut held) = held.filter(|h| Some(h.token) == binding.token) else {
            with_watchdog(|w| w.unbind(db, key, owner));
            return false;
        };
        let at = lease_end(now, lease_ms, held.cap);
        if at <= now {
            return false;
        }
        held.expire_at = at;
        sem.set_holding(owner, &held, None);
        let next = sem.holdings().iter().map(|(_, h)| h.expire_at).min();
        watch_holders(ctx, LockType::Semaphore, db, key, next);
        true
    }

    /// The holder's permits come back.
    fn end_holding(&self, ctx: Ctx, id: &LockId, binding: &Binding, _: HandOver) {
        let Some((_name, mut sem)) = open(ctx, id.0, &id.1) else {
            return;
        };
        let owner = &binding.owner;
        if let Ok(Some(held)) = sem.holding(owner) {
            if Some(held.token) == binding.token {
                sem.remove_holding(owner);
                holdings::tell_change(ctx, &id.1, c"rsem.dropped");
                stats::WATCHDOG_RELEASES.add();
                if give_back(ctx, &mut sem, held.permits).is_ok() {
                    semaphore_changed(ctx, id.0, &mut sem);
                }
            }
        }
    }
}

/// Opens the semaphore at `key` from a timer (WRONGTYPE fails its waiters).
fn open(ctx: Ctx, db: i32, key: &[u8]) -> Option<(OwnedStr, Semaphore)> {
    let name = select(ctx, db, key);
    match Semaphore::open(ctx, name.0) {
        Ok(sem) => Some((name, sem)),
        Err(_) => {
            queue::fail_all(db, key);
            None
        }
    }
}

/// A semaphore's holders or counter changed: serve its queue and watch its holders' leases.
pub fn semaphore_changed(ctx: Ctx, db: i32, sem: &mut Semaphore) {
    let key = bytes(sem.key()).to_vec();
    match serve_semaphore(ctx, db, sem) {
        Ok(next) => watch_holders(ctx, LockType::Semaphore, db, &key, next),
        Err(_) => queue::fail_all(db, &key),
    }
    serve_other_family(ctx, db, &key, |want| want.word == PERMITS);
    arm_renewals(ctx);
}

/// A semaphore holding was granted or renewed to end at `at`: its timer looks then at the latest.
pub fn watch_holding(ctx: Ctx, db: i32, key: &[u8], at: i64) {
    watch_holders(ctx, LockType::Semaphore, db, key, Some(at));
    arm_renewals(ctx);
}
