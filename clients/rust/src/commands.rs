//! The RLOCK commands this crate sends, and the ids it puts in them.

use redis::Cmd;
use std::time::Duration;

/// How long an acquire may block in the server's FIFO queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// One attempt: nil at once when another owner holds the lock.
    No,
    /// `WAIT ms`.
    Up(Duration),
    /// `WAIT 0`: until granted.
    Forever,
}

impl Wait {
    /// How much longer than an ordinary reply the reply may take; `None`: unbounded.
    pub(crate) fn extra_time(self) -> Option<Duration> {
        match self {
            Wait::No => Some(Duration::ZERO),
            Wait::Up(limit) => Some(limit),
            Wait::Forever => None,
        }
    }
}

/// Everything an `RLOCK.ACQUIRE` says besides key, owner and id.
#[derive(Clone, Debug)]
pub(crate) struct AcquireOptions {
    pub lease: Duration,
    pub wait: Wait,
    pub watchdog: bool,
    pub max_hold: Option<Duration>,
}

/// Whole milliseconds, at least 1: the server refuses `PX 0` and `MAXHOLD 0`.
pub(crate) fn millis(duration: Duration) -> u64 {
    (duration.as_millis() as u64).max(1)
}

/// `RLOCK.ACQUIRE key owner PX ms [WAIT ms] [WATCHDOG] ID id [MAXHOLD ms]`
pub(crate) fn acquire(key: &str, owner: &str, options: &AcquireOptions, id: &str) -> Cmd {
    acquire_cmd(key, owner, options, id, false)
}

/// `RLOCK.ACQUIRE key owner PX ms WAIT ms NOTIFY [WATCHDOG] ID id [MAXHOLD ms]`: waits
/// without blocking the connection; the grant comes as a message on the caller's
/// `__rlock__` channel (docs/notify.md). Only for a `wait` (`NOTIFY` needs `WAIT`).
pub(crate) fn acquire_notified(key: &str, owner: &str, options: &AcquireOptions, id: &str) -> Cmd {
    debug_assert!(options.wait != Wait::No, "NOTIFY needs WAIT");
    acquire_cmd(key, owner, options, id, true)
}

fn acquire_cmd(key: &str, owner: &str, options: &AcquireOptions, id: &str, notify: bool) -> Cmd {
    let mut cmd = redis::cmd("RLOCK.ACQUIRE");
    cmd.arg(key).arg(owner).arg("PX").arg(millis(options.lease));
    match options.wait {
        Wait::No => {}
        // WAIT takes whole ms and 0 means "for ever", so a sub-millisecond wait rounds up.
        Wait::Up(limit) => {
            cmd.arg("WAIT").arg(millis(limit));
        }
        Wait::Forever => {
            cmd.arg("WAIT").arg(0);
        }
    }
    if notify {
        cmd.arg("NOTIFY");
    }
    if options.watchdog {
        cmd.arg("WATCHDOG");
    }
    cmd.arg("ID").arg(id);
    if let Some(cap) = options.max_hold {
        cmd.arg("MAXHOLD").arg(millis(cap));
    }
    cmd
}

/// `RLOCK.RELEASE key owner ID id`
pub(crate) fn release(key: impl AsRef<[u8]>, owner: impl AsRef<[u8]>, id: &str) -> Cmd {
    let mut cmd = redis::cmd("RLOCK.RELEASE");
    cmd.arg(key.as_ref()).arg(owner.as_ref()).arg("ID").arg(id);
    cmd
}

/// `RLOCK.CANCEL key owner`: takes every queue entry of `owner` at `key` out of the queue.
pub(crate) fn cancel(key: impl AsRef<[u8]>, owner: impl AsRef<[u8]>) -> Cmd {
    let mut cmd = redis::cmd("RLOCK.CANCEL");
    cmd.arg(key.as_ref()).arg(owner.as_ref());
    cmd
}

/// `RLOCK.CHANNEL`: the channel on which the calling connection is told of its grants.
pub(crate) fn channel() -> Cmd {
    redis::cmd("RLOCK.CHANNEL")
}

/// `RLOCK.RENEW key owner PX ms WATCHDOG`: moves the holding's watchdog binding to the
/// connection that sends it. `PX` keeps the lease we asked for (without it the server would
/// fall back to `rlock.default-lease-ms`).
pub(crate) fn rebind(key: impl AsRef<[u8]>, owner: impl AsRef<[u8]>, lease: Duration) -> Cmd {
    let mut cmd = redis::cmd("RLOCK.RENEW");
    cmd.arg(key.as_ref())
        .arg(owner.as_ref())
        .arg("PX")
        .arg(millis(lease))
        .arg("WATCHDOG");
    cmd
}

/// A fresh id for one logical call, reused unchanged by its retry.
pub(crate) fn request_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// `<uuid>:<task-or-thread id>`, Redisson's owner shape: the uuid makes it unique per lock
/// handle, the suffix says in `RLOCK.INFO` which task or thread took the lock.
pub(crate) fn owner_id() -> String {
    let uuid = uuid::Uuid::new_v4();
    match tokio::task::try_id() {
        Some(task) => format!("{uuid}:task-{task}"),
        None => {
            // ThreadId has no stable numeric accessor; its Debug form is `ThreadId(7)`.
            let thread = format!("{:?}", std::thread::current().id());
            let number: String = thread.chars().filter(char::is_ascii_digit).collect();
            format!("{uuid}:thread-{number}")
        }
    }
}

/// A random fraction in [0, 1), from the OS randomness uuid already draws on (no `rand`).
/// The low 53 bits of a v4 uuid are all random (its version and variant bits are higher up).
pub(crate) fn random_fraction() -> f64 {
    const BITS: u32 = 53;
    let random = uuid::Uuid::new_v4().as_u128() & ((1u128 << BITS) - 1);
    random as f64 / (1u64 << BITS) as f64
}
