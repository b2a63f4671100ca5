//! The lock's rules, free of Redis: what an acquire or a release does to a holding,
//! and how fencing tokens are issued. Time comes in as an argument.

/// Fields of the lock hash that are not owners start with this; owner ids may not.
pub const RESERVED_PREFIX: &[u8] = b"rlock:";

/// The hash field, next to the owner's hold count, that keeps the holder's fencing token.
pub const TOKEN_FIELD: &[u8] = b"rlock:token";

/// The hash field that keeps the holding's hold cap (`MAXHOLD`): an absolute time in ms.
pub const CAP_FIELD: &[u8] = b"rlock:maxhold";

/// Which lock a key holds: a hash with a `mode` field is a read-write lock, any other hash a
/// plain lock. A key is only ever one of them; each command family refuses the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockType {
    Plain,
    ReadWrite,
    /// A semaphore's holders (only ever a watchdog binding's kind: its key is a counter).
    Semaphore,
}

/// What a request asks of a lock: the whole lock (the plain lock, a write hold), or a share of
/// it (a read hold). The shared queue knows waiters by this; each lock type's rules decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Exclusive,
    Shared,
}

/// The lock type a request is for, and its access: a key is only ever one type of lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// The plain lock (`RLOCK.*`).
    Lock,
    /// A read hold of a read-write lock (`RWLOCK.* READ`).
    Read,
    /// A write hold of a read-write lock (`RWLOCK.* WRITE`).
    Write,
    /// A latch to open (`RLATCH.AWAIT`): granted to every such waiter at once.
    Latch,
    /// `n` permits of a semaphore (`RSEM.ACQUIRE`): granted when they fit, in queue order.
    Permits(i64),
}

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

/// What the lock hash says, seen from one owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// No lock at the key.
    Free,
    /// The asking owner holds it `holds` times; `token` is absent when a Redisson-protocol
    /// client took it (Redisson's scripts know nothing of tokens).
    Mine { holds: i64, token: Option<i64> },
    /// Someone else holds it.
    Theirs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// A new holding: write the owner with one hold and this new token.
    Fresh { token: i64 },
    /// A re-entry: write `holds`; `new_token` says `token` was issued now and must be stored.
    Reentry {
        holds: i64,
        token: i64,
        new_token: bool,
    },
    /// Held by another owner.
    Busy,
    /// The hold count cannot grow any further.
    Overflow,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    NotHolder,
    /// Still held, `remaining` times.
    Partial {
        remaining: i64,
    },
    /// The last hold went: the lock is free (or passes to the next waiter).
    Full,
}

pub fn acquire(view: View, tokens: &mut TokenClock, now_us: i64) -> Acquire {
    match view {
        View::Free => Acquire::Fresh {
            token: tokens.issue(now_us),
        },
        View::Theirs => Acquire::Busy,
        View::Mine { holds, token } => match holds.checked_add(1) {
            None => Acquire::Overflow,
            Some(holds) => match token {
                Some(token) => Acquire::Reentry {
                    holds,
                    token,
                    new_token: false,
                },
                None => Acquire::Reentry {
                    holds,
                    token: tokens.issue(now_us),
                    new_token: true,
                },
            },
        },
    }
}

pub fn release(view: View) -> Release {
    match view {
        View::Mine { holds, .. } if holds > 1 => Release::Partial {
            remaining: holds - 1,
        },
        View::Mine { .. } => Release::Full,
        View::Free | View::Theirs => Release::NotHolder,
    }
}

/// Issues fencing tokens: a hybrid clock, `max(last + 1, now in µs)`.
///
/// Within one server process every token is larger than all before it. Across a restart or a
/// failover the next token is still larger as long as the new process's clock reads later than
/// the last token was issued (clocks are not set back), the same trust the leases already put
/// in the server clock. Tokens seen in existing locks are fed back through `observe`, so a lock
/// that survives a restart never sees its successor's token go back.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquire_follows_the_table() {
        let cases = [
            (View::Free, 1_000, Acquire::Fresh { token: 1_000 }),
            (View::Theirs, 1_000, Acquire::Busy),
            (
                View::Mine {
                    holds: 1,
                    token: Some(7),
                },
                1_000,
                Acquire::Reentry {
                    holds: 2,
                    token: 7,
                    new_token: false,
                },
            ),
            (
                View::Mine {
                    holds: 3,
                    token: None,
                },
                1_000,
                Acquire::Reentry {
                    holds: 4,
                    token: 1_000,
                    new_token: true,
                },
            ),
            (
                View::Mine {
                    holds: i64::MAX,
                    token: Some(7),
                },
                1_000,
                Acquire::Overflow,
            ),
        ];
        for (view, now, expected) in cases {
            let mut tokens = TokenClock::default();
            assert_eq!(acquire(view, &mut tokens, now), expected, "{view:?}");
        }
    }

    #[test]
    fn release_follows_the_table() {
        let cases = [
            (View::Free, Release::NotHolder),
            (View::Theirs, Release::NotHolder),
            (
                View::Mine {
                    holds: 1,
                    token: Some(1),
                },
                Release::Full,
            ),
            (
                View::Mine {
                    holds: 5,
                    token: None,
                },
                Release::Partial { remaining: 4 },
            ),
        ];
        for (view, expected) in cases {
            assert_eq!(release(view), expected, "{view:?}");
        }
    }

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

    #[test]
    fn reentry_keeps_the_token() {
        let mut tokens = TokenClock::default();
        assert_eq!(
            acquire(View::Free, &mut tokens, 42),
            Acquire::Fresh { token: 42 }
        );
        let again = acquire(
            View::Mine {
                holds: 1,
                token: Some(42),
            },
            &mut tokens,
            99,
        );
        assert_eq!(
            again,
            Acquire::Reentry {
                holds: 2,
                token: 42,
                new_token: false
            }
        );
    }
}
