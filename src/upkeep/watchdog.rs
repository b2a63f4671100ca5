//! The watchdog's side of upkeep: each due renewal (unless the holding ended or its
//! connection went quiet or away), the end of the holdings of a connection that closed, and
//! closing bound connections when the server turns replica. Every write goes through the same
//! gate as the rest of upkeep; each holding is renewed or ended by its family.

use crate::api::{is_writable_master, now_ms, writes_paused, Ctx};
use crate::clock::watchdog_renews;
use crate::config;
use crate::families::contract;
use crate::families::handover::hand_over;
use crate::lifetime::watchdog::{Binding, LockId};
use crate::lifetime::with_watchdog;
use crate::stats;
use crate::watch::{self, Work, PAUSE_POLL_MS};
use std::collections::{HashMap, HashSet};

/// Renewals made in one timer callback at most: a burst of due renewals is spread over
/// consecutive event-loop turns instead of stalling one.
const RENEWALS_PER_TICK: usize = 256;

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
    if let Some(family) = contract::of_kind(binding.kind) {
        let hand_over = |lock: &mut _| hand_over(ctx, lock, lock_id.0, binding.kind);
        family.end_holding(ctx, lock_id, binding, &hand_over);
    }
}

/// The watchdog renewals that are due (the renewal timer fired).
pub(super) fn renew_due(ctx: Ctx) {
    if !is_writable_master(ctx) {
        return;
    }
    let now = now_ms();
    if writes_paused() {
        watch::arm_renewal_timer(ctx, now + PAUSE_POLL_MS);
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
    watch::arm_renewals(ctx);
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

/// Sets a watchdog holding's lease to `lease_ms` from `now`, by its family.
fn set_lease(ctx: Ctx, lock_id: &LockId, binding: &Binding, now: i64, lease_ms: i64) -> bool {
    contract::of_kind(binding.kind)
        .is_some_and(|family| family.set_lease(ctx, lock_id, binding, now, lease_ms))
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

/// A connection closed: the holdings bound to it end, from a timer (a write made inside the
/// close event would not replicate in order).
pub fn client_closed(ctx: Ctx, client: u64) {
    let taken = with_watchdog(|w| w.take_client(client));
    if !taken.is_empty() {
        watch::schedule_work(ctx, taken.into_iter().map(|(l, b)| Work::End(l, b)), 0);
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
    watch::close_clients(ctx, clients);
}
