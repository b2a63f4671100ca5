//! The lifetime room: what keeps a holding alive or ends it, shared by every lock type.
//! Pure bookkeeping here; `upkeep` drives it with timers and writes.
//!
//! - `watchdog`: holdings renewed by the server while their connection lives.
//! - `retries`: request ids, so a retried call never counts twice.
//! - Hold caps (`MAXHOLD`) are a lease clip, in `lock::lease_end`.

pub mod retries;
pub mod watchdog;

use std::cell::RefCell;

thread_local! {
    // Redis calls every callback of this module on its main thread.
    static WATCHDOG: RefCell<watchdog::Watchdog> = RefCell::default();
    static RELEASED: RefCell<retries::Released> = RefCell::default();
}

/// Runs `f` on the watchdog's bindings. `f` must not call back into this function.
pub fn with_watchdog<R>(f: impl FnOnce(&mut watchdog::Watchdog) -> R) -> R {
    WATCHDOG.with(|w| f(&mut w.borrow_mut()))
}

/// Runs `f` on the memory of full releases. `f` must not call back into this function.
pub fn with_released<R>(f: impl FnOnce(&mut retries::Released) -> R) -> R {
    RELEASED.with(|r| f(&mut r.borrow_mut()))
}
