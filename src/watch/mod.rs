//! When the server looks at a key again: the timers every part of the module arms (a lease
//! end, a semaphore holder's lease end, the next watchdog renewal) and the work deferred to a
//! 0 ms timer. It sits below the families, so that a grant anywhere can arm what follows it;
//! what a timer does when it fires is upkeep's, which registers it here at load (`on_due`),
//! as the queue's departures are registered (`queue::on_departure`).

use crate::api::{create_timer, guarded, now_ms, stop_timer, Ctx, TimerId};
use crate::kinds::{LockType, Want};
use crate::lifetime::watchdog::{Binding, LockId};
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::ptr::null_mut;
use std::rc::Rc;

mod timers;
use timers::{KeyTimers, Target};

/// How often a check that found writes paused looks again: Redis has no event for the end of
/// a pause, and a few ms after it is soon enough for a waiter.
pub const PAUSE_POLL_MS: i64 = 5;

/// A key to look at: (db, key, whether a lease end led here).
pub type Check = (i32, Rc<[u8]>, bool);

pub enum Work {
    Check(Check),
    /// A key of the family of `LockType` whose holders' earliest lease ended (a semaphore's):
    /// settle it and serve its queue.
    Holders(LockType, i32, Rc<[u8]>),
    /// End a watchdog holding whose connection closed.
    End(LockId, Binding),
}

/// What upkeep does when the timers here fire.
#[derive(Clone, Copy)]
pub struct Due {
    /// Does `work` (behind upkeep's gate: a writable master, writes not paused).
    pub run: fn(Ctx, Vec<Work>),
    /// Makes the watchdog renewals that are due.
    pub renew: fn(Ctx),
}

#[derive(Default)]
struct Timers {
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
    holder_timers: KeyTimers<(LockType, i32, Rc<[u8]>)>,
}

thread_local! {
    // Redis calls every callback of this module on its main thread.
    static TIMERS: RefCell<Timers> = RefCell::default();
    static DUE: Cell<Option<Due>> = const { Cell::new(None) };
}

fn with<R>(f: impl FnOnce(&mut Timers) -> R) -> R {
    TIMERS.with(|t| f(&mut t.borrow_mut()))
}

/// Registers what the timers do when they fire (upkeep's, at load).
pub fn on_due(due: Due) {
    DUE.with(|d| d.set(Some(due)));
}

fn due() -> Option<Due> {
    DUE.with(Cell::get)
}

fn run(ctx: Ctx, work: Vec<Work>) {
    if let Some(due) = due() {
        (due.run)(ctx, work);
    }
}

/// Looks at `checks` from a timer shortly (at once when `delay_ms` is 0, but never inside the
/// caller's own callback).
pub fn schedule(ctx: Ctx, checks: impl IntoIterator<Item = Check>, delay_ms: i64) {
    schedule_work(ctx, checks.into_iter().map(Work::Check), delay_ms);
}

/// Does `work` from a timer `delay_ms` from now.
pub fn schedule_work(ctx: Ctx, work: impl IntoIterator<Item = Work>, delay_ms: i64) {
    with(|t| {
        t.pending.extend(work);
        if !t.pending.is_empty() {
            arm_pending(t, ctx, now_ms() + delay_ms);
        }
    });
}

fn arm_pending(t: &mut Timers, ctx: Ctx, at: i64) {
    if t.pending_timer.is_none() {
        t.pending_timer = Some(create_timer(ctx, at, Some(on_pending_timer), null_mut()));
    }
}

/// Closes `clients` from a timer (the server turned replica: their clients learn it and
/// re-bind on the new master).
pub fn close_clients(ctx: Ctx, clients: impl IntoIterator<Item = u64>) {
    with(|t| {
        t.to_close.extend(clients);
        if !t.to_close.is_empty() {
            arm_pending(t, ctx, now_ms());
        }
    });
}

extern "C" fn on_pending_timer(ctx: Ctx, _data: *mut c_void) {
    guarded("the deferred handoff", (), || {
        let work = with(|t| {
            t.pending_timer = None;
            std::mem::take(&mut t.pending)
        });
        run(ctx, work);
        let to_close = with(|t| std::mem::take(&mut t.to_close));
        for client in to_close {
            crate::api::call_text(ctx, &[c"CLIENT", c"KILL", c"ID"], &client.to_string());
        }
    })
}

/// Upkeep work waiting for its turn (a 0 ms timer, or the end of a write pause).
pub fn deferred_work() -> usize {
    with(|t| t.pending.len())
}

/// Serves the queues whose head left unserved (set as the queue's `on_departure`): they are
/// looked at as after a release, from a 0 ms timer (the departure may come inside a callback
/// where the module must not write).
pub fn serve_again(ctx: Ctx, keys: Vec<(i32, Rc<[u8]>)>) {
    schedule(ctx, keys.into_iter().map(|(db, key)| (db, key, false)), 0);
    // Blocked clients time out in `beforeSleep`, after the poll's timeout was computed.
    crate::api::wake_event_loop();
}

/// A family served the queue of (db, key) and stopped at a waiter it does not serve (`ours`
/// says which it does): two families share one layout (both semaphores keep Redisson's
/// counter), so that waiter's family looks at the key, as after a release.
pub fn serve_other_family(ctx: Ctx, db: i32, key: &[u8], ours: impl Fn(Want) -> bool) {
    if crate::queue::next_want(db, key).is_some_and(|want| !ours(want)) {
        serve_again(ctx, vec![(db, Rc::from(key))]);
    }
}

/// Whether a holding of the lock is told of its loss (`NOTIFY`): then its lease end and its
/// removal are watched even with nobody queued.
pub fn noticed(db: i32, key: &[u8]) -> bool {
    crate::lifetime::with_notices(|n| n.watched(db, key))
}

/// Makes sure a lock that has waiters (or a noticed holding) is looked at again just after the
/// lease ending at `expire_at` (ms): if it then is gone, the next waiter gets it.
pub fn watch_lease(ctx: Ctx, db: i32, key: &[u8], expire_at: Option<i64>) {
    watch_lease_of(ctx, (db, key), expire_at, || {
        noticed(db, key).then(|| Rc::from(key))
    });
}

/// `watch_lease` for a lock whose new holding was just noted to be told of its loss: the note
/// is not looked up again, and the copy of the key made for it (`made`), if any, serves.
pub fn watch_noticed_lease(
    ctx: Ctx,
    (db, key): (i32, &[u8]),
    made: Option<Rc<[u8]>>,
    expire_at: Option<i64>,
) {
    watch_lease_of(ctx, (db, key), expire_at, || {
        Some(made.unwrap_or_else(|| Rc::from(key)))
    });
}

/// Watches the lease of the lock under the queue's copy of its key, or, with no queue, under
/// the one `unqueued` gives (none: not watched).
fn watch_lease_of(
    ctx: Ctx,
    (db, key): (i32, &[u8]),
    expire_at: Option<i64>,
    unqueued: impl FnOnce() -> Option<Rc<[u8]>>,
) {
    let Some(name) = crate::queue::shared_key(db, key).or_else(unqueued) else {
        return;
    };
    watch_key(ctx, (db, name), expire_at);
}

/// Looks at the key just after `expire_at` whether or not anyone waits (a reader's lease that
/// ends before the key's own TTL).
pub fn watch_key(ctx: Ctx, target: Target, expire_at: Option<i64>) {
    let fire_at = expire_at.map(|at| at.saturating_add(1));
    with(|t| {
        t.lease_timers
            .arm(ctx, target, fire_at, Some(on_lease_timer))
    });
}

extern "C" fn on_lease_timer(ctx: Ctx, _data: *mut c_void) {
    guarded("the lease timer", (), || {
        let targets = with(|t| t.lease_timers.fired(now_ms()));
        let work = targets
            .into_iter()
            .map(|(db, key)| Work::Check((db, key, true)));
        run(ctx, work.collect());
        with(|t| t.lease_timers.rearm(ctx, Some(on_lease_timer)));
    })
}

/// A family served the queue of a free lock (its `Family::serve_free`); `granted` is the lease
/// end of the waiter it let in, if any: watch that lease, and renew it if it asked for the
/// watchdog. Returns whether anyone was let in.
pub fn after_grant(ctx: Ctx, db: i32, key: &[u8], granted: Option<i64>) -> bool {
    let Some(expire_at) = granted else {
        return false;
    };
    watch_lease(ctx, db, key, Some(expire_at));
    arm_renewals(ctx);
    true
}

/// Arms the holder timer of a key of the family of `kind` for the earliest holder's lease
/// end, `at` (none: it has no holders).
pub fn watch_holders(ctx: Ctx, kind: LockType, db: i32, key: &[u8], at: Option<i64>) {
    let (target, fire_at) = ((kind, db, Rc::from(key)), at.map(|at| at.saturating_add(1)));
    with(|t| {
        t.holder_timers
            .arm(ctx, target, fire_at, Some(on_holder_timer))
    });
}

extern "C" fn on_holder_timer(ctx: Ctx, _data: *mut c_void) {
    guarded("a semaphore's holder timer", (), || {
        let targets = with(|t| t.holder_timers.fired(now_ms()));
        let work = targets
            .into_iter()
            .map(|(kind, db, key)| Work::Holders(kind, db, key));
        run(ctx, work.collect());
        with(|t| t.holder_timers.rearm(ctx, Some(on_holder_timer)));
    })
}

/// Arms the renewal timer for the earliest due watchdog renewal, if it is not armed already.
pub fn arm_renewals(ctx: Ctx) {
    if let Some(due) = crate::lifetime::with_watchdog(|w| w.next_due_at()) {
        arm_renewal_timer(ctx, due);
    }
}

/// Arms the renewal timer for `at`, unless it is armed for then or earlier.
pub fn arm_renewal_timer(ctx: Ctx, at: i64) {
    with(|t| {
        match t.renewal_timer {
            Some((_, armed)) if armed <= at => return,
            Some((timer, _)) => {
                stop_timer(ctx, timer);
            }
            None => {}
        }
        let timer = create_timer(ctx, at, Some(on_renewal_timer), null_mut());
        t.renewal_timer = Some((timer, at));
    });
}

extern "C" fn on_renewal_timer(ctx: Ctx, _data: *mut c_void) {
    guarded("the watchdog", (), || {
        with(|t| t.renewal_timer = None);
        if let Some(due) = due() {
            (due.renew)(ctx);
        }
    })
}
