//! Work the server does on its own, outside any client's command: handing a lock that was
//! freed behind the module's back (lease end, DEL, eviction, RENAME, FLUSHDB) to its next
//! waiter. Every write of that kind goes through `run_checks`, which writes only where Redis
//! accepts a write from a module: a master, not loading, and not while writes are paused.
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
//! the event, so events only note the key here; a 0 ms timer runs the check afterwards.

use crate::api::{
    bytes, create_timer, guarded, is_writable_master, now_ms, stop_timer, writes_paused, Ctx,
    OwnedStr, TimerId,
};
use crate::grants::{grant_next, hand_over_or_announce};
use crate::stats;
use crate::store::LockKey;
use crate::waiters;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::rc::Rc;

/// How often a check that found writes paused looks again: Redis has no event for the end of
/// a pause, and a few ms after it is soon enough for a waiter.
const PAUSE_POLL_MS: i64 = 5;

/// A key to look at: (db, key, whether a lease end led here).
pub type Check = (i32, Rc<[u8]>, bool);

#[derive(Default)]
struct Upkeep {
    pending: Vec<Check>,
    pending_timer: Option<TimerId>,
    /// One timer per watched lock, just after its lease ends, so the next waiter need not wait
    /// for Redis's own (lazy or ~100 ms) expiry: (timer, fire time).
    lease_timers: HashMap<(i32, Rc<[u8]>), (TimerId, i64)>,
}

thread_local! {
    // Redis calls every callback of this module on its main thread.
    static UPKEEP: RefCell<Upkeep> = RefCell::default();
}

fn with<R>(f: impl FnOnce(&mut Upkeep) -> R) -> R {
    UPKEEP.with(|u| f(&mut u.borrow_mut()))
}

/// Looks at `checks` from a timer shortly (at once when `delay_ms` is 0, but never inside the
/// caller's own callback).
pub fn schedule(ctx: Ctx, checks: impl IntoIterator<Item = Check>, delay_ms: i64) {
    with(|u| {
        u.pending.extend(checks);
        if u.pending_timer.is_none() && !u.pending.is_empty() {
            u.pending_timer = Some(create_timer(
                ctx,
                now_ms() + delay_ms,
                Some(on_pending_timer),
                null_mut(),
            ));
        }
    });
}

extern "C" fn on_pending_timer(ctx: Ctx, _data: *mut c_void) {
    guarded("the deferred handoff", (), || {
        let checks = with(|u| {
            u.pending_timer = None;
            std::mem::take(&mut u.pending)
        });
        run_checks(ctx, checks);
    })
}

/// Runs the checks now if the module may write, later if writes are paused.
fn run_checks(ctx: Ctx, checks: Vec<Check>) {
    if !is_writable_master(ctx) {
        return;
    }
    if writes_paused() {
        schedule(ctx, checks, PAUSE_POLL_MS);
        return;
    }
    for (db, key, expired) in checks {
        check(ctx, db, &key, expired);
    }
}

/// Looks at a lock that has waiters: free → the next waiter gets it; still held → watch its
/// lease; now another type → its waiters get WRONGTYPE.
fn check(ctx: Ctx, db: i32, key: &[u8], expired: bool) {
    if waiters::count(db, key) == 0 {
        return;
    }
    // SAFETY: `ctx` is a timer context, whose client we may point at any db.
    unsafe { crate::api::api!(RedisModule_SelectDb)(ctx, db) };
    let name = OwnedStr::new(key);
    // Opening the key lets Redis expire it first (and replicate that DEL before our writes).
    match LockKey::open(ctx, name.0, true) {
        Err(_) => waiters::fail_all(db, key),
        Ok(mut lock) if lock.is_free() => {
            if let Some(expire_at) = grant_next(&mut lock, db) {
                watch_lease(ctx, db, key, Some(expire_at));
                if expired {
                    stats::EXPIRY_WAKEUPS.add();
                }
            }
        }
        Ok(lock) => watch_lease(ctx, db, key, lock.expire_at()),
    }
}

/// Makes sure a lock that has waiters is looked at again just after the lease ending at
/// `expire_at` (ms): if it then is gone, the next waiter gets it.
pub fn watch_lease(ctx: Ctx, db: i32, key: &[u8], expire_at: Option<i64>) {
    if waiters::count(db, key) == 0 {
        return;
    }
    let fire_at = expire_at.map(|at| at + 1);
    with(|u| {
        let armed = u
            .lease_timers
            .get_key_value(&(db, Rc::from(key)))
            .map(|(k, v)| (k.clone(), *v));
        match (armed, fire_at) {
            // An earlier timer re-checks and re-arms; nothing to do.
            (Some((_, (_, at))), Some(fire_at)) if at <= fire_at => return,
            (Some((k, (timer, _))), _) => {
                if let Some(data) = stop_timer(ctx, timer) {
                    // SAFETY: lease timers' data is a boxed key, released once, here.
                    drop(unsafe { Box::from_raw(data.cast::<(i32, Rc<[u8]>)>()) });
                }
                u.lease_timers.remove(&k);
            }
            (None, _) => {}
        }
        if let Some(fire_at) = fire_at {
            let target = (db, Rc::<[u8]>::from(key));
            let data = Box::into_raw(Box::new(target.clone()));
            let timer = create_timer(ctx, fire_at, Some(on_lease_timer), data.cast());
            u.lease_timers.insert(target, (timer, fire_at));
        }
    });
}

extern "C" fn on_lease_timer(ctx: Ctx, data: *mut c_void) {
    // SAFETY: lease timers are created with a boxed key, released here once.
    let target = unsafe { Box::from_raw(data.cast::<(i32, Rc<[u8]>)>()) };
    guarded("the lease timer", (), || {
        with(|u| u.lease_timers.remove(&*target));
        let (db, key) = *target;
        run_checks(ctx, vec![(db, key, true)]);
    })
}

/// A free lock with a queue goes to the queue first: nobody barges in. Called by every write
/// command before it looks at the lock (its lease may have just run out, or a DEL may not have
/// been handed over yet).
pub fn serve_queue_if_free(ctx: Ctx, lock: &mut LockKey, db: i32) {
    if lock.is_free() {
        if let Some(expire_at) = grant_next(lock, db) {
            watch_lease(ctx, db, bytes(lock.name()), Some(expire_at));
        }
    }
}

/// After a full release by a command: the next waiter gets the lock, or Redisson clients
/// hear that it is free.
pub fn hand_over(ctx: Ctx, lock: &mut LockKey, db: i32) {
    if let Some(expire_at) = hand_over_or_announce(ctx, lock, db) {
        watch_lease(ctx, db, bytes(lock.name()), Some(expire_at));
    }
}
