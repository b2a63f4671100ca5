//! The `INFO rlock` section (shown as `rlock_stats`).

use crate::api::{api, guarded, Ctx, OK};
use crate::lifetime::{with_released, with_watchdog};
use crate::{queue, stats};
use redis_module::raw;
use std::os::raw::c_int;

/// The crate version as `MODULE LIST` shows it: major*10000 + minor*100 + patch.
pub const MODULE_VERSION: i32 = version_number(env!("CARGO_PKG_VERSION"));

const fn version_number(version: &str) -> i32 {
    let bytes = version.as_bytes();
    let (mut parts, mut part, mut i) = ([0i32; 3], 0, 0);
    while i < bytes.len() && part < 3 {
        match bytes[i] {
            b'.' => part += 1,
            digit @ b'0'..=b'9' => parts[part] = parts[part] * 10 + (digit - b'0') as i32,
            _ => break, // a pre-release suffix such as -rc1
        }
        i += 1;
    }
    parts[0] * 10000 + parts[1] * 100 + parts[2]
}

const VERSION: &std::ffi::CStr = cstr(concat!(env!("CARGO_PKG_VERSION"), "\0"));
const GIT_REVISION: &std::ffi::CStr = cstr(concat!(env!("RLOCK_GIT_REVISION"), "\0"));

/// Evaluated at compile time only (for the consts above): a bad string fails the build, never
/// redis-server.
const fn cstr(with_nul: &str) -> &std::ffi::CStr {
    match std::ffi::CStr::from_bytes_with_nul(with_nul.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("a version with a NUL byte"),
    }
}

pub fn register(ctx: Ctx) -> Result<(), String> {
    // SAFETY: called from OnLoad; replaces the crate's default handler.
    match unsafe { api!(RedisModule_RegisterInfoFunc)(ctx, Some(on_info)) } {
        OK => Ok(()),
        _ => Err("could not register the INFO section".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::version_number;

    #[test]
    fn versions_encode_as_redis_modules_do() {
        for (version, number) in [
            ("0.1.0", 100),
            ("1.2.3", 10203),
            ("2.10.0-rc1", 21000),
            ("12.0.7", 120007),
        ] {
            assert_eq!(version_number(version), number, "{version}");
        }
    }
}

extern "C" fn on_info(ictx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    guarded("INFO", (), || {
        let fields: [(&std::ffi::CStr, u64); 25] = [
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
            (c"deferred_work", crate::watch::deferred_work() as u64),
        ];
        // SAFETY: `ictx` is the live INFO context; names are NUL-terminated statics.
        unsafe {
            api!(RedisModule_InfoAddSection)(ictx, c"stats".as_ptr());
            api!(RedisModule_InfoAddFieldCString)(ictx, c"version".as_ptr(), VERSION.as_ptr());
            api!(RedisModule_InfoAddFieldCString)(
                ictx,
                c"git_revision".as_ptr(),
                GIT_REVISION.as_ptr(),
            );
            for (name, value) in fields {
                api!(RedisModule_InfoAddFieldLongLong)(ictx, name.as_ptr(), value as i64);
            }
        }
    })
}
