//! Work the server does on its own, outside any client's command: handing a lock that was
//! freed behind the module's back (lease end, DEL, eviction, RENAME, FLUSHDB) to its next
//! waiter, renewing watchdog locks, and ending the holdings of a connection that closed.
//! Every write of that kind goes through `run`, or the renewal timer, which write only where
//! Redis accepts a write from a module: a master, not loading, and not while writes are paused.
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
    bytes, create_timer, guarded, is_writable_master, now_ms, writes_paused, Ctx, OwnedStr, TimerId,
};
use crate::families::rwlock::store::{self as rwstore, Settled};
use crate::families::semaphore::store::Semaphore;
use crate::families::{latch, lock, rwlock, semaphore};
use crate::holdings;
use crate::kinds::Want;
use crate::lifetime::watchdog::{Binding, LockId};
use crate::queue;
use crate::stats;
use crate::store::{LockKey, LockType};
use std::cell::RefCell;

use std::ffi::c_void;
use std::ptr::null_mut;
use std::rc::Rc;

mod slots;
mod timers;
mod watchdog;
pub use watchdog::{arm_renewals, client_closed, turned_replica};
use watchdog::{close_client, end_holding};

/// How often a check that found writes paused looks again: Redis has no event for the end of
/// a pause, and a few ms after it is soon enough for a waiter.
const PAUSE_POLL_MS: i64 = 5;

/// Renewals made in one timer callback at most: a burst of due renewals is spread over
/// consecutive event-loop turns instead of stalling one.
const RENEWALS_PER_TICK: usize = 256;

/// A key to look at: (db, key, whether a lease end led here).
pub type Check = (i32, Rc<[u8]>, bool);

enum Work {
    Check(Check),
    /// Settle a semaphore (a holder's lease ended) and serve its queue.
    Semaphore(i32, Rc<[u8]>),
    /// End a watchdog holding whose connection closed.
    End(LockId, Binding),
}

use timers::{KeyTimers, Target};

#[derive(Default)]
struct Upkeep {
    pending: Vec<Work>,
    pending_timer: Option<TimerId>,
    renewal_timer: Option<(TimerId, i64)>,
    /// Connections to close because the server turned replica.
    to_close: Vec<u64>,
    /// Each watched lock looked at just after its lease ends, so the next waiter need not wait
    /// for Redis's own (lazy or ~100 ms) expiry.
    lease_timers: KeyTimers,
    /// Each semaphore with holders looked at at the earliest holder's lease end: its permits
    /// come back then whether or not anyone waits (Redisson's clients poll the counter).
    holder_timers: KeyTimers,
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
    schedule_work(ctx, checks.into_iter().map(Work::Check), delay_ms);
}

fn schedule_work(ctx: Ctx, work: impl IntoIterator<Item = Work>, delay_ms: i64) {
    with(|u| {
        u.pending.extend(work);
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
        let work = with(|u| {
            u.pending_timer = None;
            std::mem::take(&mut u.pending)
        });
        run(ctx, work);
        let to_close = with(|u| std::mem::take(&mut u.to_close));
        for client in to_close {
            close_client(ctx, client);
        }
    })
}

/// Upkeep work waiting for its turn (a 0 ms timer, or the end of a write pause).
pub fn deferred_work() -> usize {
    with(|u| u.pending.len())
}

/// Does the work now if the module may write, later if writes are paused.
fn run(ctx: Ctx, work: Vec<Work>) {
    if !is_writable_master(ctx) {
        return;
    }
    if writes_paused() {
        schedule_work(ctx, work, PAUSE_POLL_MS);
        return;
    }
    for item in work {
        match item {
            Work::Check((db, key, expired)) => check(ctx, db, &key, expired),
            Work::Semaphore(db, key) => semaphore_check(ctx, db, &key),
            Work::End(lock, binding) => end_holding(ctx, &lock, &binding),
        }
    }
    arm_renewals(ctx);
}

/// Opens the lock `lock` from a timer: the timer's client is pointed at its db first.
fn open(ctx: Ctx, lock: &LockId) -> (OwnedStr, Result<LockKey, crate::error::Error>) {
    let name = select(ctx, lock.0, &lock.1);
    // Opening the key lets Redis expire it first (and replicate that DEL before our writes).
    let key = LockKey::open(ctx, name.0, true);
    (name, key)
}

/// Points the timer's client at `db` and names `key` there.
fn select(ctx: Ctx, db: i32, key: &[u8]) -> OwnedStr {
    // SAFETY: `ctx` is a timer context, whose client we may point at any db.
    unsafe { crate::api::api!(RedisModule_SelectDb)(ctx, db) };
    OwnedStr::new(key)
}

/// Opens the semaphore at `key` from a timer (WRONGTYPE fails its waiters).
fn open_semaphore(ctx: Ctx, db: i32, key: &[u8]) -> Option<(OwnedStr, Semaphore)> {
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
    match semaphore::serve::serve_semaphore(ctx, db, sem) {
        Ok(next) => watch_holders(ctx, db, &key, next),
        Err(_) => queue::fail_all(db, &key),
    }
    arm_renewals(ctx);
}

/// A semaphore holding was granted or renewed to end at `at`: its timer looks then at the latest.
pub fn watch_holding(ctx: Ctx, db: i32, key: &[u8], at: i64) {
    watch_holders(ctx, db, key, Some(at));
    arm_renewals(ctx);
}

fn semaphore_check(ctx: Ctx, db: i32, key: &[u8]) {
    if let Some((_name, mut sem)) = open_semaphore(ctx, db, key) {
        semaphore_changed(ctx, db, &mut sem);
    }
}

/// Arms the semaphore's holder timer for the lease ending at `at` (none: it has no holders).
fn watch_holders(ctx: Ctx, db: i32, key: &[u8], at: Option<i64>) {
    let (target, fire_at) = ((db, Rc::from(key)), at.map(|at| at + 1));
    with(|u| {
        u.holder_timers
            .arm(ctx, target, fire_at, Some(on_holder_timer))
    });
}

extern "C" fn on_holder_timer(ctx: Ctx, _data: *mut c_void) {
    guarded("a semaphore's holder timer", (), || {
        let targets = with(|u| u.holder_timers.fired(now_ms()));
        let work = targets
            .into_iter()
            .map(|(db, key)| Work::Semaphore(db, key));
        run(ctx, work.collect());
        with(|u| u.holder_timers.rearm(ctx, Some(on_holder_timer)));
    })
}

/// Serves the queues whose head left unserved (set as the queue's `on_departure`): they are
/// looked at as after a release, from a 0 ms timer (the departure may come inside a callback
/// where the module must not write).
pub fn serve_again(ctx: Ctx, keys: Vec<(i32, Rc<[u8]>)>) {
    schedule(ctx, keys.into_iter().map(|(db, key)| (db, key, false)), 0);
    // Blocked clients time out in `beforeSleep`, after the poll's timeout was computed.
    crate::api::wake_event_loop();
}

/// Looks at a lock that has waiters, a noticed holding or readers to watch: free → the next
/// waiter gets it; still held → watch its lease (a read-write lock first drops the read
/// holdings whose lease ended, which may free it or let waiters in); now another type or kind
/// of lock → its waiters get WRONGTYPE.
fn check(ctx: Ctx, db: i32, key: &[u8], expired: bool) {
    match queue::next_want(db, key) {
        Some(Want::Latch) => {
            let name = select(ctx, db, key);
            latch::serve::open(ctx, db, name.0);
            return;
        }
        Some(Want::Permits(_)) => {
            semaphore_check(ctx, db, key);
            return;
        }
        _ => {}
    }
    let (_name, lock) = open(ctx, &(db, Rc::from(key)));
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
        Ok(mut lock) => match (lock.kind(), queue::next_want(db, key)) {
            (Some(LockType::Plain), None | Some(Want::Lock)) => {
                // A request for several keys may now head every queue with this key its own
                // owner's: held keys are served too (a single waiter just stays).
                if lock::serve::serve(&mut lock, db).is_some() {
                    arm_renewals(ctx);
                }
                watch_lease(ctx, db, key, lock.expire_at())
            }
            (Some(LockType::ReadWrite), None | Some(Want::Read | Want::Write)) => {
                match rwstore::settle(&mut lock, now_ms(), None) {
                    Ok(settled) => {
                        if settled == Settled::Free && expired && queue::count(db, key) > 0 {
                            stats::EXPIRY_WAKEUPS.add();
                        }
                        serve_rw(ctx, &mut lock, db, settled);
                    }
                    Err(_) => queue::fail_all(db, key),
                }
            }
            _ => queue::fail_all(db, key),
        },
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

/// After a read-write lock's holdings changed: a free lock goes to its queue (or Redisson's
/// waiters hear of it), a held one admits whom its rules let in, and while others wait, the
/// earliest lease end is watched.
pub fn serve_rw(ctx: Ctx, lock: &mut LockKey, db: i32, settled: Settled) {
    if settled == Settled::Free {
        hand_over(ctx, lock, db, LockType::ReadWrite);
        return;
    }
    if rwlock::serve::admit(lock, db).is_some() {
        arm_renewals(ctx);
    }
    watch_rw(ctx, db, lock);
}

/// Watches a held read-write lock's earliest lease end: while anyone waits or is told of a
/// loss, as for every lock, and also whenever a reader's lease ends before the key's own TTL,
/// so that a dead reader leaves the hash (and the TTL follows the longest lease left) within
/// ms whether or not anyone waits.
pub fn watch_rw(ctx: Ctx, db: i32, lock: &LockKey) {
    let key = bytes(lock.name());
    let next = rwstore::next_lease_end(lock).ok().flatten();
    let reader_ends_first = next.zip(lock.expire_at()).is_some_and(|(at, end)| at < end);
    if reader_ends_first {
        arm_lease_timer(ctx, (db, Rc::from(key)), next);
    } else {
        watch_lease(ctx, db, key, next);
    }
}

/// Whether a holding of the lock is told of its loss (`NOTIFY`): then its lease end and its
/// removal are watched even with nobody queued.
pub fn noticed(db: i32, key: &[u8]) -> bool {
    crate::lifetime::with_notices(|n| n.watched(db, key))
}

/// Makes sure a lock that has waiters (or a noticed holding) is looked at again just after the lease ending at
/// `expire_at` (ms): if it then is gone, the next waiter gets it.
pub fn watch_lease(ctx: Ctx, db: i32, key: &[u8], expire_at: Option<i64>) {
    let name = match queue::shared_key(db, key) {
        Some(name) => name,
        None if noticed(db, key) => Rc::from(key),
        None => return,
    };
    arm_lease_timer(ctx, (db, name), expire_at);
}

fn arm_lease_timer(ctx: Ctx, target: Target, expire_at: Option<i64>) {
    let fire_at = expire_at.map(|at| at + 1);
    with(|u| {
        u.lease_timers
            .arm(ctx, target, fire_at, Some(on_lease_timer))
    });
}

extern "C" fn on_lease_timer(ctx: Ctx, _data: *mut c_void) {
    guarded("the lease timer", (), || {
        let targets = with(|u| u.lease_timers.fired(now_ms()));
        let work = targets
            .into_iter()
            .map(|(db, key)| Work::Check((db, key, true)));
        run(ctx, work.collect());
        with(|u| u.lease_timers.rearm(ctx, Some(on_lease_timer)));
    })
}

/// A free lock with a queue goes to the queue first: nobody barges in. Called by every write
/// command before it looks at the lock (its lease may have just run out, or a DEL may not have
/// been handed over yet).
pub fn serve_queue_if_free(ctx: Ctx, lock: &mut LockKey, db: i32) {
    if lock.is_free() {
        serve_free(ctx, lock, db);
    }
}

/// Grants a free lock to the head of its queue and watches what follows. Returns whether
/// anyone was granted.
fn serve_free(ctx: Ctx, lock: &mut LockKey, db: i32) -> bool {
    let want = queue::next_want(db, bytes(lock.name()));
    let lease_end = match want {
        Some(Want::Lock) => lock::serve::serve(lock, db),
        Some(Want::Read | Want::Write) => rwlock::serve::admit(lock, db),
        // Counters, not lock hashes: served by their own families.
        Some(Want::Latch | Want::Permits(_)) | None => None,
    };
    let Some(expire_at) = lease_end else {
        return false;
    };
    after_grant(ctx, db, bytes(lock.name()), expire_at);
    if want != Some(Want::Lock) {
        watch_rw(ctx, db, lock);
    }
    true
}

/// A waiter was just granted the lock: watch its lease, and renew it if it asked for the
/// watchdog.
fn after_grant(ctx: Ctx, db: i32, key: &[u8], expire_at: i64) {
    watch_lease(ctx, db, key, Some(expire_at));
    arm_renewals(ctx);
}

/// After a full release by a command: the next waiter gets the lock, or Redisson clients
/// hear that it is free.
pub fn hand_over(ctx: Ctx, lock: &mut LockKey, db: i32, kind: LockType) {
    holdings::unbind(db, bytes(lock.name()));
    if serve_free(ctx, lock, db) {
        return;
    }
    let key = bytes(lock.name());
    match kind {
        LockType::Plain => lock::serve::announce_free(ctx, key),
        LockType::ReadWrite => rwlock::serve::announce_open(ctx, key),
        // Semaphores announce their count as they change it (`give_back`).
        LockType::Semaphore => {}
    }
}
