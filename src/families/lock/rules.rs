//! The plain lock's rules, free of Redis: the lock is one owner's reentrant holding (the
//! arithmetic in `reentry`, shared with each mode of the read-write lock), and the names of
//! rlock's fields beside the owner's count in Redisson's hash.

pub use crate::reentry::{acquire, release, View};
use crate::kinds::{Want, Word};

/// What a waiter for the plain lock asks for, by the word its messages name it.
pub const WANT: Want = Want::one(&Word("lock"));

/// The hash field, next to the owner's hold count, that keeps the holder's fencing token.
pub const TOKEN_FIELD: &[u8] = b"rlock:token";

/// The hash field that keeps the holding's hold cap (`MAXHOLD`): an absolute time in ms.
pub const CAP_FIELD: &[u8] = b"rlock:maxhold";

/// The hash field that keeps the holding's lock-delay (`LOCKDELAY`, `rlock.lock-delay-ms`) in
/// ms. Such a key expires that long after the holding's lease: in between, the lease is over
/// and the lock belongs to nobody, and nobody may take it (Redisson's clients included, which
/// see the key and wait). A release by the owner deletes the key: no delay.
pub const DELAY_FIELD: &[u8] = b"rlock:lockdelay";

/// Whether a holding whose key expires at `expire_at`, with lock-delay `delay_ms`, is in its
/// delay at `now` (its lease over).
pub fn in_delay(expire_at: Option<i64>, delay_ms: Option<i64>, now: i64) -> bool {
    match (expire_at, delay_ms) {
        (Some(at), Some(delay)) => now >= at - delay,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::in_delay;

    #[test]
    fn a_holding_is_in_its_delay_from_its_lease_end_to_its_key_expiry() {
        for (expire_at, delay, now, expected) in [
            (Some(3_000), Some(2_000), 999, false),
            (Some(3_000), Some(2_000), 1_000, true),
            (Some(3_000), Some(2_000), 2_999, true),
            (Some(3_000), None, 2_999, false),
            (None, Some(2_000), 2_999, false),
        ] {
            assert_eq!(
                in_delay(expire_at, delay, now),
                expected,
                "{expire_at:?} {delay:?} {now}"
            );
        }
    }
}
