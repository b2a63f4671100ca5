//! Counters for the `INFO rlock` section.

use std::sync::atomic::{AtomicU64, Ordering};

pub struct Counter(AtomicU64);

impl Counter {
    const fn new() -> Self {
        Counter(AtomicU64::new(0))
    }

    pub fn add(&self) {
        self.add_n(1);
    }

    pub fn add_n(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// New holdings, whether taken at once or handed over to a waiter.
pub static ACQUISITIONS: Counter = Counter::new();
pub static REENTRIES: Counter = Counter::new();
/// Acquires that found the lock held by another owner.
pub static CONTENDED: Counter = Counter::new();
/// Grants to a queued waiter.
pub static HANDOFFS: Counter = Counter::new();
pub static WAIT_TIMEOUTS: Counter = Counter::new();
/// Handoffs caused by a holder's lease running out.
pub static EXPIRY_WAKEUPS: Counter = Counter::new();
pub static RELEASES: Counter = Counter::new();
pub static FORCE_RELEASES: Counter = Counter::new();
/// Retried calls (same request id) answered from memory, changing nothing.
pub static RETRIES_ANSWERED: Counter = Counter::new();
/// Leases renewed by the watchdog.
pub static WATCHDOG_RENEWALS: Counter = Counter::new();
/// Holdings ended because their bound connection closed.
pub static WATCHDOG_RELEASES: Counter = Counter::new();
/// Watchdog bindings dropped because their connection sat idle past `rlock.watchdog-idle-ms`.
pub static WATCHDOG_IDLE_STOPS: Counter = Counter::new();
/// Watchdog holdings whose connection closed, left to run out their grace.
pub static WATCHDOG_GRACES: Counter = Counter::new();
/// Waits looked at for a cycle (another key had waiters), and those refused as deadlocks.
pub static DEADLOCK_SEARCHES: Counter = Counter::new();
pub static DEADLOCKS: Counter = Counter::new();
/// `NOTIFY` waiters skipped at their turn: their connection was gone or no longer subscribed.
pub static NOTIFY_SKIPPED: Counter = Counter::new();
/// `lost` messages: holdings granted with `NOTIFY` that ended other than by their release.
pub static NOTIFY_LOST: Counter = Counter::new();
/// Queue entries taken out by `RLOCK.CANCEL`.
pub static CANCELLED: Counter = Counter::new();
