//! Time-derived values, free of Redis: where a lease ends, how long a holding has been held,
//! and the fencing-token clock (with the server's one instance, fed by every token seen).

use crate::api::now_us;
use std::cell::RefCell;

/// Where a lease set at `now_ms` for `lease_ms` ends: never past the holding's cap.
pub fn lease_end(now_ms: i64, lease_ms: i64, cap_at: Option<i64>) -> i64 {
    let end = now_ms.saturating_add(lease_ms);
    cap_at.map_or(end, |cap| end.min(cap))
}

/// How long ago a holding with `token` was granted: tokens are the grant time in µs (see
/// `TokenClock`), ahead of it only when the clock stood still or went back, hence the floor.
pub fn held_ms(token: i64, now_ms: i64) -> i64 {
    (now_ms - token / 1000).max(0)
}

/// Whether the watchdog renews for a connection whose idle time Redis reports as `idle_s`
/// under a bound of `idle_bound_ms` (0: no bound). Redis reports idle time as the difference
/// of two whole-second clocks, so `idle_s` means somewhere between `idle_s - 1` and
/// `idle_s + 1` seconds: renewals stop only once the bound has surely passed, which lets a
/// quiet lock live at most bound + 1 s + its lease after the connection's last command.
/// A connection blocked in a wait counts as alive.
pub fn watchdog_renews(idle_s: i64, blocked: bool, idle_bound_ms: i64) -> bool {
    blocked || idle_bound_ms == 0 || (idle_s - 1).saturating_mul(1000) < idle_bound_ms
}

/// Issues fencing tokens: a hybrid clock, `max(last + 1, now in µs)`.
///
/// Within one server process every token is larger than all before it. Across a restart or a
/// failover the next token is still larger as long as the new process's clock reads later than
/// the last token was issued (clocks are not set back), the same trust the leases already put
/// in the server clock. Tokens seen in existing locks are fed back through `observe`, so a lock
/// that survives a restart never sees its successor's token go back; a replica also observes
/// every token its primary replicates (`crate::floor`), so once promoted it issues higher ones
/// even when its clock is behind the old primary's.
#[derive(Debug, Default)]
pub struct TokenClock {
    last: i64,
}

impl TokenClock {
    pub fn issue(&mut self, now_us: i64) -> i64 {
        let token = now_us.max(self.last.saturating_add(1));
        self.last = token;
        token
    }

    pub fn observe(&mut self, token: i64) {
        self.last = self.last.max(token);
    }
}

thread_local! {
    // Redis calls every callback of this module on its main thread.
    static TOKENS: RefCell<TokenClock> = RefCell::default();
}

pub fn issue_token() -> i64 {
    with_token_clock(|clock, now_us| clock.issue(now_us))
}

pub fn with_token_clock<R>(f: impl FnOnce(&mut TokenClock, i64) -> R) -> R {
    TOKENS.with(|t| f(&mut t.borrow_mut(), now_us()))
}

pub fn observe_token(token: Option<i64>) {
    if let Some(token) = token {
        TOKENS.with(|t| t.borrow_mut().observe(token));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_rise_even_when_the_clock_stands_still_or_goes_back() {
        let mut tokens = TokenClock::default();
        let a = tokens.issue(500);
        let b = tokens.issue(500);
        let c = tokens.issue(100);
        let d = tokens.issue(900);
        assert!(a < b && b < c && c < d, "{a} {b} {c} {d}");
        assert_eq!(d, 900);
    }

    #[test]
    fn observed_tokens_raise_the_floor() {
        let mut tokens = TokenClock::default();
        tokens.observe(10_000);
        assert_eq!(tokens.issue(5), 10_001);
        tokens.observe(3);
        assert_eq!(tokens.issue(5), 10_002);
    }

    #[test]
    fn leases_are_clipped_to_the_cap() {
        assert_eq!(lease_end(1_000, 300, None), 1_300);
        assert_eq!(lease_end(1_000, 300, Some(1_200)), 1_200);
        assert_eq!(lease_end(1_000, 300, Some(5_000)), 1_300);
        assert_eq!(
            lease_end(1_000, 300, Some(900)),
            900,
            "a passed cap ends the holding"
        );
    }

    #[test]
    fn the_watchdog_renews_only_for_connections_that_speak() {
        let cases = [
            // (idle seconds, blocked, bound ms, renews)
            (0, false, 30_000, true),
            (30, false, 30_000, true),
            (31, false, 30_000, false),
            (1, false, 1_000, true),
            (2, false, 1_000, false),
            (2, false, 1_500, true),
            (3, false, 1_500, false),
            (500, true, 30_000, true),
            (10_000, false, 0, true),
        ];
        for (idle, blocked, bound, renews) in cases {
            assert_eq!(
                watchdog_renews(idle, blocked, bound),
                renews,
                "{idle} {blocked} {bound}"
            );
        }
    }
}
