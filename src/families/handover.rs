//! Handing a lock that just became free to the head of its queue, whichever family that
//! waiter is of; Redisson's clients hear of it when nobody takes it. It sits beside the family
//! contract, below the families, so that their commands, `request.rs` and upkeep all call it
//! downwards.

use crate::api::{bytes, Ctx};
use crate::families::contract;
use crate::holdings;
use crate::kinds::LockType;
use crate::queue;
use crate::store::LockKey;

/// A free lock with a queue goes to the queue first: nobody barges in. Called by every write
/// command before it looks at the lock (its lease may have just run out, or a DEL may not have
/// been handed over yet).
pub fn serve_queue_if_free(ctx: Ctx, lock: &mut LockKey, db: i32) {
    if lock.is_free() {
        serve_free(ctx, lock, db);
    }
}

/// Grants a free lock to the head of its queue, whatever family that waiter is of, and
/// watches what follows. Returns whether anyone was granted.
pub fn serve_free(ctx: Ctx, lock: &mut LockKey, db: i32) -> bool {
    let head = queue::next_want(db, bytes(lock.name()));
    head.and_then(contract::serving)
        .is_some_and(|family| family.serve_free(ctx, lock, db))
}

/// After a full release by a command: the next waiter gets the lock, or Redisson clients
/// hear that it is free.
pub fn hand_over(ctx: Ctx, lock: &mut LockKey, db: i32, kind: LockType) {
    hand_over_kind(ctx, lock, db, Some(kind));
}

pub fn hand_over_kind(ctx: Ctx, lock: &mut LockKey, db: i32, kind: Option<LockType>) {
    holdings::unbind(db, bytes(lock.name()));
    if serve_free(ctx, lock, db) {
        return;
    }
    if let Some(family) = kind.and_then(contract::of_kind) {
        family.announce_free(ctx, bytes(lock.name()));
    }
}
