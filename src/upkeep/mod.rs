//! Work the server does on its own, outside any client's command: handing a lock that was
//! freed behind the module's back (lease end, DEL, eviction, RENAME, FLUSHDB) to its next
//! waiter, renewing watchdog locks, and ending the holdings of a connection that closed. The
//! timers that lead here are `watch`'s; every write goes through `run`, or the renewal, which
//! write only where Redis accepts a write from a module: a master, not loading, and not while
//! writes are paused. A family is reached only through the family contract
//! (`families::contract`), where the family table registers every family at load.
//!
//! Why each gate:
//! - Replica or loading: the data is the master's (or the file's); a replica's locks change
//!   only through the replication stream. Such checks are dropped: a replica has no waiters
//!   (its clients were unblocked when it turned replica), and a promoted master re-arms its
//!   own timers as its clients queue.
//! - Writes paused (`CLIENT PAUSE ... WRITE`, `FAILOVER`, a manual cluster failover): Redis
//!   reports an expired key as missing but does not delete it, so writing a new lock there
//!   trips an assertion in `dbAdd`, and anything propagated during the pause may reach no
//!   replica before a failover. The checks wait and run as soon as the pause ends.
//!
//! Writes made inside a keyspace-event callback would replicate before the DEL that caused
//! the event, so events only note the key there; a 0 ms timer runs the check afterwards.

use crate::api::{is_writable_master, writes_paused, Ctx};
use crate::families::contract;
use crate::holdings;
use crate::queue;
use crate::stats;
use crate::store::{open_at, LockKey};
use crate::watch::{self, Work, PAUSE_POLL_MS};

mod slots;
mod watchdog;
use crate::families::handover::{hand_over_kind, serve_free};
pub use watchdog::{client_closed, turned_replica};
use watchdog::{end_holding, renew_due};

/// What upkeep does when `watch`'s timers fire (registered at load).
pub const DUE: watch::Due = watch::Due {
    run,
    renew: renew_due,
};

/// Does the work now if the module may write, later if writes are paused.
fn run(ctx: Ctx, work: Vec<Work>) {
    if !is_writable_master(ctx) {
        return;
    }
    if writes_paused() {
        watch::schedule_work(ctx, work, PAUSE_POLL_MS);
        return;
    }
    for item in work {
        match item {
            Work::Check((db, key, expired)) => check(ctx, db, &key, expired),
            Work::Holders(kind, db, key) => {
                if let Some(family) = contract::of_kind(kind) {
                    family.check(ctx, db, &key);
                }
            }
            Work::End(lock, binding) => end_holding(ctx, &lock, &binding),
        }
    }
    watch::arm_renewals(ctx);
}

/// Looks at a lock that has waiters, a noticed holding or readers to watch: free → the next
/// waiter gets it; still held → its family serves whom it may and watches its lease; now
/// another type or kind of lock → its waiters get WRONGTYPE. A key that is not a lock hash
/// (a counter) is its head waiter's family's to look at.
fn check(ctx: Ctx, db: i32, key: &[u8], expired: bool) {
    let head = queue::next_want(db, key);
    let head_family = head.and_then(contract::serving);
    if let Some(family) = head_family.filter(|f| !f.keeps_lock_hash()) {
        family.check(ctx, db, key);
        return;
    }
    let (_name, lock) = open_at(ctx, db, key);
    match lock {
        Err(_) => queue::fail_all(db, key),
        Ok(lock) if lock.is_free() && in_cluster(ctx) && queue::count(db, key) > 0 => {
            // Gone from here because its slot moved (MIGRATE): the waiters follow the slot.
            match slots::waiters_redirection(ctx, key) {
                Some(error) => queue::fail_all_with(db, key, error),
                None => serve_free_lock(ctx, lock, db, key, expired),
            }
        }
        Ok(lock) if lock.is_free() => serve_free_lock(ctx, lock, db, key, expired),
        Ok(mut lock) => {
            let kind = lock.kind();
            let serves_head = |f: &&dyn contract::Family| {
                f.keeps_lock_hash() && head_family.is_none_or(|h| h.kind() == kind)
            };
            match kind.and_then(contract::of_kind).filter(serves_head) {
                Some(family) => {
                    let hand_over = |lock: &mut LockKey| hand_over_kind(ctx, lock, db, kind);
                    family.check_held(ctx, &mut lock, db, expired, &hand_over);
                }
                None => queue::fail_all(db, key),
            }
        }
    }
}

/// A lock found free by a check: the holdings it had ended (their owners hear of it), and the
/// next waiter gets it.
fn serve_free_lock(ctx: Ctx, mut lock: LockKey, db: i32, key: &[u8], expired: bool) {
    holdings::unbind(db, key);
    if serve_free(ctx, &mut lock, db) && expired {
        stats::EXPIRY_WAKEUPS.add();
    }
}

fn in_cluster(ctx: Ctx) -> bool {
    crate::api::context_flags(ctx) & redis_module::raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0
}
