//! One owner's reentrant holding, free of Redis: what an acquire or a release does to it, seen
//! from the owner (`View`). The plain lock is one such holding; a read-write lock has one per
//! owner and mode. Time comes in as an argument.

use crate::clock::TokenClock;
use crate::kinds::{Acquire, Release};

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
