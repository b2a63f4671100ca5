//! The `INFO rlock` section (shown as `rlock_stats`).

use crate::api::{api, guarded, Ctx, OK};
use crate::lifetime::{with_released, with_watchdog};
use crate::{queue, stats};
use redis_module::raw;
use std::os::raw::c_int;

pub fn register(ctx: Ctx) -> Result<(), String> {
    // SAFETY: called from OnLoad; replaces the crate's default handler.
    match unsafe { api!(RedisModule_RegisterInfoFunc)(ctx, Some(on_info)) } {
        OK => Ok(()),
        _ => Err("could not register the INFO section".into()),
    }
}

extern "C" fn on_info(ictx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    guarded("INFO", (), || {
        let fields: [(&std::ffi::CStr, u64); 24] = [
            (c"acquisitions", stats::ACQUISITIONS.get()),
            (c"reentries", stats::REENTRIES.get()),
            (c"contended", stats::CONTENDED.get()),
            (c"handoffs", stats::HANDOFFS.get()),
            (c"wait_timeouts", stats::WAIT_TIMEOUTS.get()),
            (c"expiry_wakeups", stats::EXPIRY_WAKEUPS.get()),
            (c"releases", stats::RELEASES.get()),
            (c"force_releases", stats::FORCE_RELEASES.get()),
            (c"waiters", queue::total() as u64),
            (c"notified_waiters", queue::notified() as u64),
            (c"notify_skipped", stats::NOTIFY_SKIPPED.get()),
            (c"notify_lost", stats::NOTIFY_LOST.get()),
            (c"cancelled", stats::CANCELLED.get()),
            (c"locks_with_waiters", queue::locks_with_waiters() as u64),
            (c"watchdog_locks", with_watchdog(|w| w.len()) as u64),
            (c"watchdog_renewals", stats::WATCHDOG_RENEWALS.get()),
            (c"watchdog_releases", stats::WATCHDOG_RELEASES.get()),
            (c"watchdog_idle_stops", stats::WATCHDOG_IDLE_STOPS.get()),
            (c"watchdog_graces", stats::WATCHDOG_GRACES.get()),
            (c"deadlock_searches", stats::DEADLOCK_SEARCHES.get()),
            (c"deadlocks", stats::DEADLOCKS.get()),
            (c"retries_answered", stats::RETRIES_ANSWERED.get()),
            (c"remembered_releases", with_released(|r| r.len()) as u64),
            (c"heap_bytes", crate::heap::bytes().max(0) as u64),
        ];
        // SAFETY: `ictx` is the live INFO context; names are NUL-terminated statics.
        unsafe {
            api!(RedisModule_InfoAddSection)(ictx, c"stats".as_ptr());
            for (name, value) in fields {
                api!(RedisModule_InfoAddFieldLongLong)(ictx, name.as_ptr(), value as i64);
            }
        }
    })
}
