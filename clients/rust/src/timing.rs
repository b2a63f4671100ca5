//! Client-side time: what can be said about a lease from the client's own clock.

use std::time::{Duration, Instant};

/// The margin for the difference in clock rates between client and server, as Redlock
/// counts it: 1% of the period plus 2 ms.
pub(crate) fn clock_drift(period: Duration) -> Duration {
    period / 100 + Duration::from_millis(2)
}

/// The last instant at which a period of `length` that started at `start` is surely still
/// running on the server too, allowing for clock drift (so earlier rather than later).
pub(crate) fn surely_held_until(start: Instant, length: Duration) -> Instant {
    start + length.saturating_sub(clock_drift(length))
}
