//! The counting semaphore's rules, free of Redis: when a request may take permits, what a
//! release, an addition and a drain make of the count, and where a call with a request id is
//! remembered.

use crate::error::{Error, Result};
use crate::kinds::Word;
use crate::lifetime::retries::{command_call, CallId};

/// The word a counting semaphore waiter's `Want` is named by (and its messages):
/// `Want::of(COUNTING, n)`.
pub const COUNTING: &Word = &Word("counting");

/// The count after `n` permits are added (negative: removed) to `available`, which may go
/// below 0 (Redisson's `reducePermits`): refused, before anything is written, when it would
/// leave a 64-bit integer's range (where Redis's `INCRBY` fails too).
pub fn added(available: i64, n: i64) -> Result<i64> {
    available.checked_add(n).ok_or(Error::PermitsOverflow)
}

/// What `RCSEM.DRAIN` does to a count (None: never set): what it replies, the permits it took
/// (negative when the count was below 0 and draining gave them back, as
/// `java.util.concurrent.Semaphore.drainPermits` does), and whether the count is written to 0.
pub fn drained(count: Option<i64>) -> (i64, bool) {
    match count {
        None => (0, false),
        Some(count) => (count, count != 0),
    }
}

/// Which call with a request id a retry must answer as the first did.
#[derive(Clone, Copy)]
pub enum Call {
    Acquire,
    Release,
    AddPermits,
    SetPermits,
    Drain,
}

/// The server-memory entry of a call with request id `id` on (db, key) (`command_call`: never
/// meets a lock's own entries).
pub fn remembered_call(db: i32, key: &[u8], call: Call, id: &[u8]) -> CallId {
    let command = match call {
        Call::Acquire => "rcsem.acquire",
        Call::Release => "rcsem.release",
        Call::AddPermits => "rcsem.addpermits",
        Call::SetPermits => "rcsem.setpermits",
        Call::Drain => "rcsem.drain",
    };
    command_call(db, key, command, id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn additions_go_below_zero_but_never_overflow() {
        let cases = [
            // (available, n, count after)
            (0, 3, Ok(3)),
            (2, -5, Ok(-3)),
            (-3, 3, Ok(0)),
            (i64::MAX, 1, Err(Error::PermitsOverflow)),
            (i64::MIN, -1, Err(Error::PermitsOverflow)),
            (i64::MAX - 1, 1, Ok(i64::MAX)),
        ];
        for (available, n, expected) in cases {
            assert_eq!(added(available, n), expected, "{available} + {n}");
        }
    }

    #[test]
    fn a_drain_takes_what_is_there_and_leaves_zero() {
        let cases = [
            // (count, reply, written)
            (None, 0, false),
            (Some(0), 0, false),
            (Some(5), 5, true),
            (Some(-2), -2, true),
        ];
        for (count, reply, written) in cases {
            assert_eq!(drained(count), (reply, written), "{count:?}");
        }
    }

    #[test]
    fn remembered_calls_keep_acquires_releases_and_keys_apart() {
        let acquire = remembered_call(0, b"s", Call::Acquire, b"id");
        assert_ne!(acquire, remembered_call(0, b"s", Call::Release, b"id"));
        assert_ne!(acquire, remembered_call(0, b"s", Call::AddPermits, b"id"));
        assert_ne!(
            remembered_call(0, b"s", Call::SetPermits, b"id"),
            remembered_call(0, b"s", Call::AddPermits, b"id")
        );
        assert_ne!(
            remembered_call(0, b"s", Call::Drain, b"id"),
            remembered_call(0, b"s", Call::SetPermits, b"id")
        );
        assert_ne!(acquire, remembered_call(1, b"s", Call::Acquire, b"id"));
        assert_ne!(acquire, remembered_call(0, b"t", Call::Acquire, b"id"));
        assert_eq!(acquire, remembered_call(0, b"s", Call::Acquire, b"id"));
    }
}
