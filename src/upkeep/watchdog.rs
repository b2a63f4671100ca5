//! The watchdog's side of upkeep: the renewal timer and each renewal (unless the holding ended
//! or its connection went quiet or away), the end of the holdings of a connection that closed,
//! and closing bound connections when the server turns replica. Every write goes through the
//! same gate as the rest of upkeep.

use super::{
    hand_over, on_pending_timer, open, open_semaphore, schedule_work, semaphore_changed, serve_rw,
    watch_holders, watch_lease, watch_rw, with, Work, PAUSE_POLL_MS, RENEWALS_PER_TICK,
};
use crate::api::{
    create_timer, guarded, is_writable_master, now_ms, stop_timer, writes_paused, Ctx, OwnedStr,
};
use crate::clock::lease_end;
use crate::clock::watchdog_renews;
use crate::config;
use crate::families::rwlock::rules as rwlock;
use crate::families::rwlock::store as rwstore;
use crate::holdings;
use crate::kinds::LockType;
use crate::lifetime::watchdog::{Binding, LockId};
use crate::lifetime::with_watchdog;
use crate::reentry::View;
use crate::stats;
use crate::store::LockKey;
use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::ptr::null_mut;

/// Whether the lock is still held by the binding's holding (owner and token).
fn still_bound(lock: &LockKey, binding: &Binding) -> bool {
    match (binding.kind, lock.kind()) {
        (LockType::Plain, Some(LockType::Plain)) => {
            let owner = OwnedStr::new(&binding.owner);
            matches!(lock.view(owner.0), Ok(View::Mine { token, .. }) if token == binding.token)
        }
        (LockType::ReadWrite, Some(LockType::ReadWrite)) => rwstore::mine(lock, &binding.owner)
            .is_ok_and(|mine| rwlock::holds_token(&mine, binding.token)),
        _ => false,
    }
}

/// The holding's connection closed: all its holds end, and the next waiters get the lock; or,
/// with a grace (`rlock.watchdog-grace-ms`), its lease is cut to the grace, for its owner to
/// re-bind it from a new connection before it ends.
pub(super) fn end_holding(ctx: Ctx, lock_id: &LockId, binding: &Binding) {
    if let Some(grace) = config::watchdog_grace_ms() {
        if set_lease(ctx, lock_id, binding, now_ms(), grace) {
            stats::WATCHDOG_GRACES.add();
        }
        return;
    }
    if binding.kind == LockType::Semaphore {
        end_permits(ctx, lock_id, binding);
        return;
    }
    let (_name, lock) = open(ctx, lock_id);
    let Ok(mut lock) = lock else {
        return;
    };
    if !still_bound(&lock, binding) {
        return;
    }
    stats::WATCHDOG_RELEASES.add();
    match binding.kind {
        LockType::Plain if lock.delay().is_some() => {
            // Not the owner's release: the lease ends now, and the lock-delay runs.
            let expire_at = lock.set_lease_end(now_ms());
            holdings::unbind(lock_id.0, &lock_id.1);
            holdings::tell_change(ctx, &lock_id.1, c"rlock.dropped");
            watch_lease(ctx, lock_id.0, &lock_id.1, Some(expire_at));
        }
        LockType::Plain => {
            lock.delete();
            holdings::tell_change(ctx, &lock_id.1, c"rlock.dropped");
            hand_over(ctx, &mut lock, lock_id.0, LockType::Plain);
        }
        LockType::ReadWrite => {
            if let Ok(settled) = rwstore::release_owner(&mut lock, &binding.owner, now_ms()) {
                holdings::tell_change(ctx, &lock_id.1, c"rwlock.dropped");
                serve_rw(ctx, &mut lock, lock_id.0, settled);
            }
        }
        LockType::Semaphore => {}
    }
}

/// A watchdog semaphore holder's connection closed: its permits come back.
fn end_permits(ctx: Ctx, lock_id: &LockId, binding: &Binding) {
    let Some((_name, mut sem)) = open_semaphore(ctx, lock_id.0, &lock_id.1) else {
        return;
    };
    let owner = &binding.owner;
    if let Ok(Some(held)) = sem.holding(owner) {
        if Some(held.token) == binding.token {
            sem.remove_holding(owner);
            holdings::tell_change(ctx, &lock_id.1, c"rsem.dropped");
            stats::WATCHDOG_RELEASES.add();
            if crate::families::semaphore::serve::give_back(ctx, &mut sem, held.permits).is_ok() {
                semaphore_changed(ctx, lock_id.0, &mut sem);
            }
        }
    }
}

/// Arms the renewal timer for the earliest due watchdog renewal, if it is not armed already.
pub fn arm_renewals(ctx: Ctx) {
    if let Some(due) = with_watchdog(|w| w.next_due_at()) {
        arm_renewal_timer(ctx, due);
    }
}

fn arm_renewal_timer(ctx: Ctx, at: i64) {
    with(|u| {
        match u.renewal_timer {
            Some((_, armed)) if armed <= at => return,
            Some((timer, _)) => {
                stop_timer(ctx, timer);
            }
            None => {}
        }
        let timer = create_timer(ctx, at, Some(on_renewal_timer), null_mut());
        u.renewal_timer = Some((timer, at));
    });
}

extern "C" fn on_renewal_timer(ctx: Ctx, _data: *mut c_void) {
    guarded("the watchdog", (), || {
        with(|u| u.renewal_timer = None);
        if !is_writable_master(ctx) {
            return;
        }
        let now = now_ms();
        if writes_paused() {
            arm_renewal_timer(ctx, now + PAUSE_POLL_MS);
            return;
        }
        let due = with_watchdog(|w| w.due(now, RENEWALS_PER_TICK));
        let mut clients = HashMap::new();
        for (lock, binding) in due {
            let activity = *clients
                .entry(binding.client)
                .or_insert_with(|| client_activity(ctx, binding.client));
            renew(ctx, &lock, &binding, activity, now);
        }
        arm_renewals(ctx);
    })
}

/// One watchdog renewal: the lease is set again, unless the holding ended or its connection
/// went quiet or away.
fn renew(ctx: Ctx, lock_id: &LockId, binding: &Binding, activity: Option<(i64, bool)>, now: i64) {
    let Some((idle_s, blocked)) = activity else {
        // Gone without a close event reaching us: treat it as the close.
        with_watchdog(|w| w.unbind(lock_id.0, &lock_id.1, &binding.owner));
        end_holding(ctx, lock_id, binding);
        return;
    };
    if !watchdog_renews(idle_s, blocked, config::watchdog_idle_ms()) {
        with_watchdog(|w| w.unbind(lock_id.0, &lock_id.1, &binding.owner));
        stats::WATCHDOG_IDLE_STOPS.add();
        return;
    }
    if set_lease(ctx, lock_id, binding, now, binding.lease_ms) {
        stats::WATCHDOG_RENEWALS.add();
    }
}

/// Sets a watchdog holding's lease to `lease_ms` from `now`, never past its cap: a renewal,
/// or the grace left to a holding whose connection closed. Returns whether it was set (the
/// holding is still the binding's, and the lease has not already reached its cap).
fn set_lease(ctx: Ctx, lock_id: &LockId, binding: &Binding, now: i64, lease_ms: i64) -> bool {
    if binding.kind == LockType::Semaphore {
        return set_permits_lease(ctx, lock_id, binding, now, lease_ms);
    }
    let (_name, lock) = open(ctx, lock_id);
    let Some(mut lock) = lock.ok().filter(|l| still_bound(l, binding)) else {
        with_watchdog(|w| w.unbind(lock_id.0, &lock_id.1, &binding.owner));
        return false;
    };
    let (db, key) = (lock_id.0, &lock_id.1);
    match binding.kind {
        LockType::Plain => {
            let lease_end = lease_end(now, lease_ms, lock.cap());
            if lease_end <= now {
                return false;
            }
            let expire_at = lock.set_lease_end(lease_end);
            watch_lease(ctx, db, key, Some(expire_at));
        }
        LockType::Semaphore => return false,
        LockType::ReadWrite => {
            let owner = &binding.owner;
            let at = lease_end(now, lease_ms, rwstore::cap(&lock, owner));
            if at <= now || !rwstore::renew(&mut lock, owner, at, now).unwrap_or(false) {
                return false;
            }
            watch_rw(ctx, db, &lock);
        }
    }
    true
}

/// `set_lease` for a semaphore holder.
fn set_permits_lease(
    ctx: Ctx,
    lock_id: &LockId,
    binding: &Binding,
    now: i64,
    lease_ms: i64,
) -> bool {
    let (db, key) = (lock_id.0, &lock_id.1);
    let Some((_name, mut sem)) = open_semaphore(ctx, db, key) else {
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
    watch_holders(ctx, db, key, next);
    true
}

/// (idle seconds, blocked) of a connection, as `CLIENT LIST ID` reports it; None when gone.
fn client_activity(ctx: Ctx, client: u64) -> Option<(i64, bool)> {
    let line = crate::api::call_text(ctx, &[c"CLIENT", c"LIST", c"ID"], &client.to_string())?;
    if line.is_empty() {
        return None;
    }
    let field = |name: &str| {
        line.split_ascii_whitespace()
            .find_map(|f| f.strip_prefix(name))
            .map(str::to_string)
    };
    let idle = field("idle=")?.parse().ok()?;
    let blocked = field("flags=").is_some_and(|f| f.contains('b'));
    Some((idle, blocked))
}

pub(super) fn close_client(ctx: Ctx, client: u64) {
    crate::api::call_text(ctx, &[c"CLIENT", c"KILL", c"ID"], &client.to_string());
}

/// A connection closed: the holdings bound to it end, from a timer (a write made inside the
/// close event would not replicate in order).
pub fn client_closed(ctx: Ctx, client: u64) {
    let taken = with_watchdog(|w| w.take_client(client));
    if !taken.is_empty() {
        schedule_work(ctx, taken.into_iter().map(|(l, b)| Work::End(l, b)), 0);
        crate::api::wake_event_loop();
    }
}

/// The server turned replica: its bindings end, and their connections are closed so their
/// clients learn it and re-bind on the new master.
pub fn turned_replica(ctx: Ctx) {
    let clients: HashSet<u64> = with_watchdog(|w| w.take_all())
        .into_iter()
        .map(|(_, b)| b.client)
        .collect();
    if clients.is_empty() {
        return;
    }
    with(|u| {
        u.to_close.extend(clients);
        if u.pending_timer.is_none() {
            u.pending_timer = Some(create_timer(
                ctx,
                now_ms(),
                Some(on_pending_timer),
                null_mut(),
            ));
        }
    });
}
