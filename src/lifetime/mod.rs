//! The lifetime room: what keeps a holding alive or ends it, shared by every lock type.
//! Pure bookkeeping here; `upkeep` drives it with timers and writes.
//!
//! - `watchdog`: holdings renewed by the server while their connection lives.
//! - `notices`: holdings whose owner is told of their loss (`NOTIFY`).
//! - `retries`: request ids, so a retried call never counts twice (`released`: those of full
//!   releases, kept in the server's memory).
//! - `listening`: connections found subscribed to their `NOTIFY` channel.
//! - `spare`: a lock's emptied list kept for the next one.
//! - Hold caps (`MAXHOLD`) are a lease clip, in `lock::lease_end`.

pub mod listening;
pub mod notices;
pub mod released;
pub mod retries;
pub mod spare;
pub mod watchdog;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    // Redis calls every callback of this module on its main thread.
    static WATCHDOG: RefCell<watchdog::Watchdog> = RefCell::default();
    static RELEASED: RefCell<retries::Released> = RefCell::default();
    static NOTICES: RefCell<notices::Notices> = RefCell::default();
    static LISTENING: RefCell<listening::Listening> = RefCell::default();
}

/// Runs `f` on the holdings told of their loss. `f` must not call back into this function.
pub fn with_notices<R>(f: impl FnOnce(&mut notices::Notices) -> R) -> R {
    NOTICES.with(|n| f(&mut n.borrow_mut()))
}

/// Runs `f` on the watchdog's bindings. `f` must not call back into this function.
pub fn with_watchdog<R>(f: impl FnOnce(&mut watchdog::Watchdog) -> R) -> R {
    WATCHDOG.with(|w| f(&mut w.borrow_mut()))
}

/// Runs `f` on the memory of full releases. `f` must not call back into this function.
pub fn with_released<R>(f: impl FnOnce(&mut retries::Released) -> R) -> R {
    RELEASED.with(|r| f(&mut r.borrow_mut()))
}

/// Runs `f` on the connections known to listen on their channel. `f` must not call back into
/// this function.
pub fn with_listening<R>(f: impl FnOnce(&mut listening::Listening) -> R) -> R {
    LISTENING.with(|l| {
        let mut l = l.borrow_mut();
        let r = f(&mut l);
        ANY_LISTENING.store(!l.is_empty(), Ordering::Relaxed);
        r
    })
}

/// Whether any connection is known to listen: asked by the command filter before every
/// command of the server, where a thread-local's lookup (`__tls_get_addr` in a cdylib) was
/// most of the filter's cost.
pub fn any_listening() -> bool {
    ANY_LISTENING.load(Ordering::Relaxed)
}

static ANY_LISTENING: AtomicBool = AtomicBool::new(false);
