//! The read-write lock's rules, free of Redis: who may enter, what an acquire or a release does
//! to one owner's read or write holding, and the names of Redisson's `RReadWriteLock` layout.
//! The per-holding arithmetic (re-entry, tokens) is `reentry`'s, shared with the plain lock: a
//! read or write holding is one owner's holding of one mode.

use crate::clock::TokenClock;
use crate::kinds::{Access, Acquire, Release, Want, Word};
use crate::reentry::{self, View};

/// Most read holds one owner may have: each has its own timeout key, looked at one by one.
pub const MAX_READ_HOLDS: i64 = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Read,
    Write,
}

impl Mode {
    pub fn name(self) -> &'static [u8] {
        match self {
            Mode::Read => b"read",
            Mode::Write => b"write",
        }
    }

    pub fn parse(value: &[u8]) -> Option<Mode> {
        match value {
            b"read" => Some(Mode::Read),
            b"write" => Some(Mode::Write),
            _ => None,
        }
    }
}

/// Whether a request with `access` may enter a lock in `mode` (None: free), queue aside.
pub fn may_enter(mode: Option<Mode>, access: Access) -> bool {
    matches!(
        (mode, access),
        (None, _) | (Some(Mode::Read), Access::Shared)
    )
}

/// The lock's mode once a request with `access` entered it: a writer's own read holds
/// (downgrade) leave it in write mode.
pub fn mode_after(mode: Option<Mode>, access: Access) -> Mode {
    match (mode, access) {
        (Some(Mode::Write), _) | (_, Access::Exclusive) => Mode::Write,
        _ => Mode::Read,
    }
}

/// One owner's holdings, as the hash says (0 holds: none of that mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mine {
    pub reads: i64,
    pub read_token: Option<i64>,
    pub writes: i64,
    pub write_token: Option<i64>,
}

/// The lock as one owner sees it when asking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    pub mode: Option<Mode>,
    pub mine: Mine,
    /// Others wait in the queue: a newcomer goes behind them.
    pub queued: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A reader asked for the write lock: it would wait for itself for ever.
    Upgrade,
    TooManyReadHolds,
}

/// What a waiter for a read hold asks for, by the word its messages name it.
pub const READ: Want = Want::one(&Word("read"));
/// ... and for the write hold.
pub const WRITE: Want = Want::one(&Word("write"));

/// How the shared queue names a request of `access` to a read-write lock.
pub fn want(access: Access) -> Want {
    match access {
        Access::Shared => READ,
        Access::Exclusive => WRITE,
    }
}

/// The access a queued request asks of a read-write lock; None for another family's.
pub fn access(want: Want) -> Option<Access> {
    match want {
        READ => Some(Access::Shared),
        WRITE => Some(Access::Exclusive),
        _ => None,
    }
}

/// What an acquire does: a read holding re-enters, a writer may add read holds (downgrade), a
/// reader may not take the write lock, and a newcomer enters only a lock it may share with
/// nobody queued ahead of it.
pub fn acquire(
    seen: &Seen,
    access: Access,
    tokens: &mut TokenClock,
    now_us: i64,
) -> Result<Acquire, Refused> {
    let Mine {
        reads,
        read_token,
        writes,
        write_token,
    } = seen.mine;
    let newcomer = || {
        if !seen.queued && may_enter(seen.mode, access) {
            View::Free
        } else {
            View::Theirs
        }
    };
    let view = match access {
        Access::Shared if reads >= MAX_READ_HOLDS => return Err(Refused::TooManyReadHolds),
        Access::Shared if reads > 0 => View::Mine {
            holds: reads,
            token: read_token,
        },
        // The writer takes a read holding of its own, however many wait.
        Access::Shared if writes > 0 => View::Free,
        Access::Exclusive if writes > 0 => View::Mine {
            holds: writes,
            token: write_token,
        },
        Access::Exclusive if reads > 0 => return Err(Refused::Upgrade),
        Access::Shared | Access::Exclusive => newcomer(),
    };
    Ok(reentry::acquire(view, tokens, now_us))
}

/// What a release of one hold of `access` does to the owner's holding of that mode.
pub fn release(mine: Mine, access: Access) -> Release {
    let holds = match access {
        Access::Shared => mine.reads,
        Access::Exclusive => mine.writes,
    };
    let view = if holds > 0 {
        View::Mine { holds, token: None }
    } else {
        View::Free
    };
    reentry::release(view)
}

/// The hash field that keeps the hold count of `owner`'s holding of `access`.
/// Whether a binding's holding (its token) is still one of `mine`: a writer that downgraded
/// keeps its binding under its read token.
pub fn holds_token(mine: &Mine, token: Option<i64>) -> bool {
    (mine.reads > 0 && mine.read_token == token) || (mine.writes > 0 && mine.write_token == token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Access::{Exclusive as W, Shared as R};

    fn seen(mode: Option<Mode>, reads: i64, writes: i64, queued: bool) -> Seen {
        Seen {
            mode,
            mine: Mine {
                reads,
                read_token: (reads > 0).then_some(7),
                writes,
                write_token: (writes > 0).then_some(9),
            },
            queued,
        }
    }

    #[test]
    fn acquire_follows_the_table() {
        use Mode::{Read, Write};
        let fresh = Ok(Acquire::Fresh { token: 100 });
        let busy = Ok(Acquire::Busy);
        let reenter = |holds, token| {
            Ok(Acquire::Reentry {
                holds,
                token,
                new_token: false,
            })
        };
        let cases = [
            // (mode, my reads, my writes, others queued, asks, expected)
            (None, 0, 0, false, R, fresh),
            (None, 0, 0, false, W, fresh),
            (Some(Read), 0, 0, false, R, fresh),
            (Some(Read), 0, 0, true, R, busy),
            (Some(Read), 0, 0, false, W, busy),
            (Some(Read), 2, 0, true, R, reenter(3, 7)),
            (Some(Read), 1, 0, false, W, Err(Refused::Upgrade)),
            (Some(Write), 0, 0, false, R, busy),
            (Some(Write), 0, 0, false, W, busy),
            (Some(Write), 0, 1, true, W, reenter(2, 9)),
            (Some(Write), 0, 1, true, R, fresh),
            (Some(Write), 1, 1, true, R, reenter(2, 7)),
            (Some(Write), 1, 1, false, W, reenter(2, 9)),
            (
                Some(Read),
                MAX_READ_HOLDS,
                0,
                false,
                R,
                Err(Refused::TooManyReadHolds),
            ),
        ];
        for (mode, reads, writes, queued, access, expected) in cases {
            let mut tokens = TokenClock::default();
            let got = acquire(&seen(mode, reads, writes, queued), access, &mut tokens, 100);
            assert_eq!(
                got, expected,
                "{mode:?} {reads} {writes} {queued} {access:?}"
            );
        }
    }

    #[test]
    fn a_redisson_holding_gets_a_token_on_reentry() {
        let mut tokens = TokenClock::default();
        let mut s = seen(Some(Mode::Read), 1, 0, false);
        s.mine.read_token = None;
        assert_eq!(
            acquire(&s, R, &mut tokens, 5),
            Ok(Acquire::Reentry {
                holds: 2,
                token: 5,
                new_token: true
            })
        );
    }

    #[test]
    fn release_counts_down_the_asked_mode_only() {
        let mine = Mine {
            reads: 2,
            writes: 1,
            ..Mine::default()
        };
        assert_eq!(release(mine, R), Release::Partial { remaining: 1 });
        assert_eq!(release(mine, W), Release::Full);
        assert_eq!(release(Mine::default(), R), Release::NotHolder);
        assert_eq!(release(Mine::default(), W), Release::NotHolder);
    }

    #[test]
    fn a_run_of_readers_enters_together_and_a_writer_alone() {
        // R R W R R at the head of a free lock's queue: who enters, in one pass.
        let queue = [R, R, W, R, R];
        let mut mode = None;
        let mut entered = 0;
        for access in queue {
            if !may_enter(mode, access) {
                break;
            }
            mode = Some(mode_after(mode, access));
            entered += 1;
        }
        assert_eq!(entered, 2);
        assert!(!may_enter(Some(Mode::Write), R));
        assert!(!may_enter(Some(Mode::Read), W));
        assert!(may_enter(None, W));
        assert_eq!(mode_after(Some(Mode::Write), R), Mode::Write);
    }
}
