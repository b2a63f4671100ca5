//! Taking a read or write holding under the read-write lock's rules: what its commands and its
//! serving (a waiter let in) share, as the plain lock's `take.rs` is for it.

use crate::api::{bytes, now_ms};
use crate::clock::{lease_end, observe_token, with_token_clock};
use crate::config;
use crate::error::{Error, Result};
use crate::holdings::{bind_if_unbound, tell_change, tell_loss, Holding};
use crate::kinds::{Access, Acquire, LockType};
use crate::lifetime::retries::{Kind, Memory};
use crate::lifetime::with_watchdog;
use crate::queue::Request;
use crate::stats;
use crate::store::LockKey;

use super::rules::{self as rwlock, Refused};
use super::store as rwstore;

/// What the read-write lock's rules make of `ask` for `access` (a newcomer when `queued` says
/// others wait): `Some(token)` when it holds now, None when it must wait. A retried call (same
/// request id) answers from the owner's memory; a new holding gets the owner's hold cap, and its
/// watchdog binding when asked.
pub fn take_rw(
    lock: &mut LockKey,
    db: i32,
    ask: &Request,
    access: Access,
    queued: bool,
) -> Result<Option<i64>> {
    let owner = bytes(ask.owner);
    let now = now_ms();
    let mut seen = rwstore::seen(lock, owner, queued, now)?;
    let kept_out = !queued && !rwlock::may_enter(seen.mode, access);
    if kept_out && rwstore::next_lease_end(lock)?.is_some_and(|end| end <= now) {
        // A holder whose lease just ended, before its timer's turn, keeps nobody out.
        rwstore::settle(lock, now, None)?;
        seen = rwstore::seen(lock, owner, queued, now)?;
    }
    let mine = seen.mine;
    observe_token(mine.read_token.max(mine.write_token));
    let held = match access {
        Access::Shared => (mine.reads > 0).then_some(mine.read_token).flatten(),
        Access::Exclusive => (mine.writes > 0).then_some(mine.write_token).flatten(),
    };
    let holds_nothing = mine.reads == 0 && mine.writes == 0;
    let mut memory = match (ask.id, holds_nothing) {
        (Some(_), false) => rwstore::ids(lock, owner),
        _ => Memory::default(),
    };
    if let (Some(id), Some(token)) = (ask.id, held) {
        if memory.find(Kind::Acquire, id) == Some(token) {
            crate::own_writes::answered_again(lock.ctx());
            return Ok(Some(token));
        }
    }
    let decision = with_token_clock(|clock, now_us| rwlock::acquire(&seen, access, clock, now_us))
        .map_err(|refused| match refused {
            Refused::Upgrade => Error::Upgrade,
            Refused::TooManyReadHolds => Error::TooManyReadHolds {
                max: rwlock::MAX_READ_HOLDS,
            },
        })?;
    let (cap, new_cap) = if holds_nothing {
        let cap = ask
            .max_hold_ms
            .or_else(config::max_hold_ms)
            .map(|ms| now + ms);
        (cap, cap)
    } else {
        (rwstore::cap(lock, owner), None)
    };
    let at = match (&decision, access) {
        // Redisson's write re-entry adds its lease to the time the lock had left; a mixed fleet
        // sharing its layout must see the same arithmetic from both clients.
        (Acquire::Reentry { .. }, Access::Exclusive) => {
            let left_until = lock.expire_at().map_or(now, |end| end.max(now));
            lease_end(left_until, ask.lease_ms, cap)
        }
        _ => lease_end(now, ask.lease_ms, cap),
    };
    let mut remember = |token| {
        ask.id.map(|id| {
            memory.remember(Kind::Acquire, id, token, now, config::retry_window_ms());
            memory.encode()
        })
    };
    let key = bytes(lock.name()).to_vec();
    let token = match decision {
        Acquire::Fresh { token } => {
            let ids = remember(token);
            let extra = rwstore::Extra {
                ids: ids.as_deref(),
                cap: new_cap,
            };
            rwstore::grant(lock, owner, access, token, at, extra)?;
            stats::ACQUISITIONS.add();
            if holds_nothing {
                with_watchdog(|w| w.unbind(db, &key, owner));
            }
            let event = match access {
                Access::Shared => c"rwlock.read",
                Access::Exclusive => c"rwlock.write",
            };
            tell_change(lock.ctx(), &key, event);
            token
        }
        Acquire::Reentry {
            holds,
            token,
            new_token,
        } => {
            let ids = remember(token);
            let extra = rwstore::Extra {
                ids: ids.as_deref(),
                cap: None,
            };
            rwstore::reenter(
                lock,
                owner,
                access,
                holds,
                new_token.then_some(token),
                at,
                now,
                extra,
            )?;
            stats::REENTRIES.add();
            token
        }
        Acquire::Busy => return Ok(None),
        Acquire::Overflow => return Err(Error::HoldsOverflow),
    };
    let holding = Holding {
        kind: LockType::ReadWrite,
        owner,
        token: Some(token),
    };
    if holds_nothing {
        tell_loss(db, &key, &holding, ask, rwlock::want(access));
    }
    if let Some(client) = ask.bind_to {
        bind_if_unbound(db, &key, holding, client, ask.lease_ms, !ask.by_message);
    }
    Ok(Some(token))
}
