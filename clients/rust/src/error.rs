//! The one error type of the crate.

use std::fmt;

/// What can go wrong when taking or giving back a lock.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The lock is held by another owner (no `wait`), or the `wait` ran out first.
    NotAcquired,
    /// Redlock: fewer servers than a majority granted the lock within its validity time,
    /// on every attempt. Nothing is left held: each attempt released what it took.
    NoQuorum {
        /// Servers that granted the lock on the last attempt.
        granted: usize,
        /// Servers needed: a majority of all of them.
        needed: usize,
    },
    /// The lock is no longer ours: its lease ran out, its watchdog connection was lost and
    /// could not be re-bound, or someone force-released it. Whatever the holder did since may
    /// have overlapped with the next holder: this is where the fencing token earns its keep.
    /// Also what [`LockGuard::guarded`](crate::LockGuard::guarded) answers when the server
    /// refused the write because the holding is gone (`NOTOWNER`: nothing was run).
    Lost,
    /// The server refused a wait at once because it would close a cycle of owners (this
    /// owner holds a lock that a holder of the wanted lock waits for, directly or through
    /// others): waiting could only end at the timeout. Nothing was queued; release what you
    /// hold, back off and try again. The text is the server's description of the cycle
    /// (`o2 waits for a held by o1; o1 waits for b held by o2`).
    Deadlock(String),
    /// Fewer replicas than required confirmed the write within the confirmation timeout
    /// ([`Confirm`](crate::Confirm)). For an acquisition (`undone`), it was released again and
    /// is not held: a failover could have given it to another. For a release, a count-down or
    /// a setting, the write stands on the primary but may be lost in a failover.
    NotConfirmed {
        /// Replicas that confirmed in time.
        confirmed: u32,
        /// Replicas required.
        required: u32,
        /// The confirmation timeout.
        timeout: std::time::Duration,
        /// True for an acquisition, which was released again.
        undone: bool,
    },
    /// Redis Cluster refused a call on keys of different hash slots (`CROSSSLOT`): put the
    /// keys of a [`MultiLock`](crate::MultiLock) in one slot with a hash tag. The text says
    /// how.
    CrossSlot(String),
    /// A Redlock handle does not re-enter: release its guard before acquiring again.
    AlreadyHeld,
    /// The server answered with an error, or could not be reached (after the one retry on a
    /// fresh connection).
    Redis(redis::RedisError),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotAcquired => f.write_str("the lock is held by another owner"),
            Error::NoQuorum { granted, needed } => write!(
                f,
                "Redlock: {granted} servers granted the lock, {needed} needed in its validity time"
            ),
            Error::Lost => f.write_str("the lock was lost before it was released"),
            Error::Deadlock(cycle) => write!(f, "deadlock: {cycle}"),
            Error::NotConfirmed {
                confirmed,
                required,
                timeout,
                undone,
            } => {
                let ms = timeout.as_millis();
                write!(
                    f,
                    "confirmed by {confirmed} of {required} replicas within {ms} ms: "
                )?;
                match undone {
                    true => f.write_str("the acquisition was released, it is not held"),
                    false => {
                        f.write_str("the write stands on the primary but a failover may lose it")
                    }
                }
            }
            Error::CrossSlot(detail) => f.write_str(detail),
            Error::AlreadyHeld => f.write_str("this Redlock handle already holds the lock"),
            Error::Redis(err) => write!(f, "redis: {err}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Redis(err) => Some(err),
            _ => None,
        }
    }
}

/// A server reply of these codes has an error of its own; every other error is
/// [`Error::Redis`].
impl From<redis::RedisError> for Error {
    fn from(err: redis::RedisError) -> Self {
        match err.code() {
            Some("DEADLOCK") => {
                let detail = err.detail().unwrap_or_default();
                let cycle = detail
                    .strip_prefix("this wait would close a cycle:")
                    .unwrap_or(detail);
                Error::Deadlock(cycle.trim().to_string())
            }
            // `RLOCK.GUARD`'s refusal: the guard's holding is no longer there.
            Some("NOTOWNER") => Error::Lost,
            Some("CROSSSLOT") => Error::CrossSlot(
                "the keys are in different hash slots of the Cluster: put the keys in one hash \
                 slot with a hash tag, e.g. {order}:1 {order}:2"
                    .to_string(),
            ),
            _ => Error::Redis(err),
        }
    }
}
