//! Counters for the `INFO rlock` section.

use std::sync::atomic::{AtomicU64, Ordering};

pub struct Counter(AtomicU64);

impl Counter {
    const fn new() -> Self {
        Counter(AtomicU64::new(0))
    }

    pub fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
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
