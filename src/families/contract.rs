//! The family contract: everything the shared rooms ask of a family (upkeep's timers, server
//! events and watchdog; the deadlock search; `RLOCK.SCAN`), so that they reach a family only
//! through the families registered here from the table in `families/mod.rs`, never by name.
//! Each family implements it in its `family.rs`. It sits below the families, beside the queue's
//! contract (`queue::Admission`).

use crate::api::Ctx;
use crate::kinds::{LockType, Want, Word};
use crate::lifetime::watchdog::{Binding, LockId};
use crate::store::LockKey;
use std::sync::OnceLock;

/// Gives a lock that just became free to the head of its queue, whichever family that waiter
/// is of, or tells Redisson's clients it is free (upkeep's `hand_over`, passed down).
pub type HandOver<'a> = &'a dyn Fn(&mut LockKey);

/// A holder of a lock hash, as `RLOCK.SCAN` lists it.
pub struct Held {
    pub owner: Vec<u8>,
    pub holds: i64,
    /// Its fencing token, which is also when it was granted.
    pub token: i64,
}

pub trait Family: Sync {
    /// The words its waiters' `Want`s are named by (and its `NOTIFY` messages call them by):
    /// no other family's.
    fn words(&self) -> &'static [&'static Word];

    /// Whether a waiter asking for `want` is this family's.
    fn serves(&self, want: Want) -> bool {
        self.words().contains(&want.word)
    }

    /// The kind of holding a watchdog binding of this family has, and of lock hash its key
    /// is when it is one (a latch has neither).
    fn kind(&self) -> Option<LockType>;

    /// Prepares what it keeps for the module's life (at load).
    fn load(&self) {}

    /// Whether its key is a lock hash (`store::LockKey`); else a counter, which only its own
    /// family opens.
    fn keeps_lock_hash(&self) -> bool {
        false
    }

    /// Looks at `key` from a timer (a lease end, a `DEL`, a departure from its queue) when the
    /// head of its queue is this family's and its key is not a lock hash: lets in whom the
    /// rules let in, and watches what follows.
    fn check(&self, _ctx: Ctx, _db: i32, _key: &[u8]) {}

    /// The same for a lock hash of this family that is still held (lease ends of some of its
    /// holdings may have passed).
    fn check_held(&self, _ctx: Ctx, _lock: &mut LockKey, _db: i32, _expired: bool, _: HandOver) {}

    /// A free lock hash whose queue's head is this family's: lets it in. Returns whether
    /// anyone was.
    fn serve_free(&self, _ctx: Ctx, _lock: &mut LockKey, _db: i32) -> bool {
        false
    }

    /// Nobody took the lock hash this family's holder freed: Redisson's clients hear of it.
    fn announce_free(&self, _ctx: Ctx, _key: &[u8]) {}

    /// A watchdog holding's lease set to `lease_ms` from `now`, never past its cap (a renewal,
    /// or the grace of a closed connection). Returns whether it was set: false when the
    /// holding is no longer the binding's, or its lease reached its cap.
    fn set_lease(&self, _ctx: Ctx, _: &LockId, _: &Binding, _now: i64, _lease_ms: i64) -> bool {
        false
    }

    /// A watchdog holding whose connection closed ends, if it is still the binding's.
    fn end_holding(&self, _ctx: Ctx, _: &LockId, _: &Binding, _: HandOver) {}

    /// Whether its waiters wait for owners (the holders of a lock), which the deadlock search
    /// follows. Permits and counts are held by no one owner a waiter waits for.
    fn waits_for_owners(&self) -> bool {
        false
    }

    /// The owners that keep `owner`'s request for `want` of the lock hash `lock` (in `db`) out,
    /// given the waiters ahead of it in the queue (all of them when `owner` is not queued
    /// there): the wait edges the deadlock search follows.
    fn blockers(&self, _lock: &LockKey, _db: i32, _want: Want, _owner: &[u8]) -> Vec<Vec<u8>> {
        Vec::new()
    }

    /// The holders of its lock hash `lock` that have a fencing token `keep` keeps (a look at
    /// the token first spares reading the rest of the hash).
    fn holders(&self, _lock: &LockKey, _keep: &dyn Fn(i64) -> bool) -> Vec<Held> {
        Vec::new()
    }

    /// The highest fencing token stored in the hash `hash` at `key`, when it is one of this
    /// family's (a replica learns its primary's tokens from it: `floor`). Another hash is
    /// told apart by a field or the key's name, without reading it whole.
    fn stored_token(&self, _key: &[u8], _hash: &LockKey) -> Option<i64> {
        None
    }
}

/// The families of the family table, registered at load.
static REGISTERED: OnceLock<&'static [&'static dyn Family]> = OnceLock::new();

/// Registers the family table (at load: the one table there is) and lets each family prepare
/// itself.
pub fn register(families: &'static [&'static dyn Family]) {
    let _ = REGISTERED.set(families);
    families.iter().for_each(|family| family.load());
}

fn registered() -> &'static [&'static dyn Family] {
    REGISTERED.get().copied().unwrap_or_default()
}

/// The family whose waiters ask for `want`.
pub fn serving(want: Want) -> Option<&'static dyn Family> {
    registered().iter().copied().find(|f| f.serves(want))
}

/// The holders of the lock hash `lock` that `keep` keeps by their token, whichever family's
/// lock hash it is (none for another hash).
pub fn holders(lock: &LockKey, keep: &dyn Fn(i64) -> bool) -> Vec<Held> {
    registered()
        .iter()
        .filter(|f| f.keeps_lock_hash())
        .flat_map(|f| f.holders(lock, keep))
        .collect()
}

/// The highest fencing token stored in the hash `hash` at `key`, whichever family's it is.
pub fn stored_token(key: &[u8], hash: &LockKey) -> Option<i64> {
    registered()
        .iter()
        .filter_map(|f| f.stored_token(key, hash))
        .max()
}

/// The family of holdings (and lock hashes) of `kind`.
pub fn of_kind(kind: LockType) -> Option<&'static dyn Family> {
    registered()
        .iter()
        .copied()
        .find(|f| f.kind() == Some(kind))
}
