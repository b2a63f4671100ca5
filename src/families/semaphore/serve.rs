//! Serving a semaphore's queue: holdings whose lease ended give their permits back, then
//! requests at the head are granted while they fit.

use crate::api::{bytes, now_ms, Ctx};
use crate::clock::{issue_token, lease_end};
use crate::config;
use crate::error::{Error, Result};
use crate::holdings::{bind, publish, tell_change, tell_loss, Holding};
use crate::kinds::{LockType, Want};
use crate::lifetime::retries::{Kind, Memory};
use crate::lifetime::with_watchdog;
use crate::notify;
use crate::queue::{self, Admission, Request, Verdict};
use crate::stats;

use super::each::{check_none_hold, each_owner};
use super::rules as semaphore;
use super::store::Semaphore;

/// The semaphore's rules as the queue asks them: the head's request is granted when it fits
/// (and is not passed by smaller ones behind it).
struct Permits<'a> {
    sem: &'a mut Semaphore,
    db: i32,
    /// The earliest lease end among the holdings, to watch.
    earliest: Option<i64>,
}

impl Admission for Permits<'_> {
    fn admit(&mut self, want: Want) -> Verdict {
        match want.amount_if(semaphore::PERMITS) {
            Some(wanted) if self.sem.available() >= wanted => Verdict::Enter,
            _ => Verdict::Wait,
        }
    }

    fn enter(&mut self, ask: &Request, want: Want) -> Result<i64> {
        let Some(wanted) = want.amount_if(semaphore::PERMITS) else {
            return Err(Error::Internal);
        };
        let (token, expire_at) = match ask.each {
            true => grant_each(self.db, self.sem, ask, wanted)?,
            false => grant_permits(self.db, self.sem, ask, wanted)?,
        };
        stats::HANDOFFS.add();
        self.earliest = earlier(self.earliest, expire_at);
        Ok(token)
    }
}

/// Gives `permits` back to the semaphore and tells Redisson's waiters the new count, as
/// Redisson's release does.
pub fn give_back(ctx: Ctx, sem: &mut Semaphore, permits: i64) -> Result<i64> {
    let available = sem.add_available(permits)?;
    publish(
        ctx,
        &crate::counter::semaphore_channel(bytes(sem.key())),
        available.to_string().as_bytes(),
    );
    Ok(available)
}

/// Puts a semaphore right: holdings whose lease ended give their permits back, then queued
/// requests are granted in order while the head's request fits (a request at the head is not
/// passed by smaller ones behind it). Returns the earliest lease end left, to watch.
pub fn serve_semaphore(ctx: Ctx, db: i32, sem: &mut Semaphore) -> Result<Option<i64>> {
    let now = now_ms();
    let key = bytes(sem.key()).to_vec();
    let (mut back, mut earliest) = (0, None::<i64>);
    for (owner, holding) in sem.holdings() {
        if holding.expire_at <= now {
            sem.remove_holding(&owner);
            tell_change(ctx, &key, c"rsem.expired");
            with_watchdog(|w| w.unbind(db, &key, &owner));
            notify::owner_lost(db, &key, &owner);
            back += holding.permits;
            stats::EXPIRY_WAKEUPS.add();
        } else {
            earliest = earlier(earliest, holding.expire_at);
        }
    }
    if back > 0 {
        give_back(ctx, sem, back)?;
    }
    let mut permits = Permits { sem, db, earliest };
    queue::serve(db, &key, &mut permits);
    let earliest = permits.earliest;
    // A grant to an owner that already held may have moved its lease later: a timer armed at
    // its old end only looks early and is armed again.
    Ok(earliest)
}

fn earlier(at: Option<i64>, other: i64) -> Option<i64> {
    Some(at.map_or(other, |at| at.min(other)))
}

/// Takes `permits` for `ask`'s owner: they add up with what it holds, under a new token (tokens
/// of a key never go back); the lease (never past the holding's cap) covers all of them; a
/// request id is remembered; a watchdog binding follows the latest token. Returns the token and
/// the lease end.
pub fn grant_permits(
    db: i32,
    sem: &mut Semaphore,
    ask: &Request,
    permits: i64,
) -> Result<(i64, i64)> {
    let owner = bytes(ask.owner);
    let now = now_ms();
    let existing = sem.holding(owner)?;
    let cap = match existing {
        Some(held) => held.cap,
        None => cap_from(ask, now),
    };
    let token = issue_token();
    let ids = ask.id.map(|id| {
        let mut memory = match existing {
            Some(_) => sem.ids(owner),
            None => Memory::default(),
        };
        memory.remember(Kind::Acquire, id, token, now, config::retry_window_ms());
        memory.encode()
    });
    sem.add_available(-permits)?;
    let holding = semaphore::Holding {
        permits: existing.map_or(0, |h| h.permits) + permits,
        token,
        expire_at: lease_end(now, ask.lease_ms, cap),
        cap,
    };
    let written = Written {
        owner,
        holding: &holding,
        ids: ids.as_deref(),
        fresh: existing.is_none(),
    };
    put_holding(db, sem, ask, written);
    stats::ACQUISITIONS.add();
    Ok((token, holding.expire_at))
}

/// The end of the hold cap a new holding of `ask` gets (`MAXHOLD`, else `rlock.max-hold-ms`).
fn cap_from(ask: &Request, now: i64) -> Option<i64> {
    ask.max_hold_ms
        .or_else(config::max_hold_ms)
        .map(|ms| now + ms)
}

/// A holding as a grant writes it: whose, what, its request ids, and whether the owner held
/// nothing before.
struct Written<'a> {
    owner: &'a [u8],
    holding: &'a semaphore::Holding,
    ids: Option<&'a [u8]>,
    fresh: bool,
}

/// Writes a granted holding and does what follows a grant: a watchdog binding follows its
/// token (or binds it to the requested connection), a `NOTIFY` owner is told of its loss, and a
/// new holder is told as `rsem.acquired`.
fn put_holding(db: i32, sem: &mut Semaphore, ask: &Request, written: Written) {
    let Written {
        owner,
        holding,
        ids,
        fresh,
    } = written;
    let key = bytes(sem.key()).to_vec();
    sem.set_holding(owner, holding, ids);
    let bound = with_watchdog(|w| {
        let bound = w.get(db, &key, owner).is_some();
        w.retoken(db, &key, owner, Some(holding.token));
        bound
    });
    let granted = Holding {
        kind: LockType::Semaphore,
        owner,
        token: Some(holding.token),
    };
    tell_loss(db, &key, &granted, ask, Want::of(semaphore::PERMITS, holding.permits));
    if let (Some(client), false) = (ask.bind_to, bound) {
        bind(db, &key, granted, client, ask.lease_ms, !ask.by_message);
    }
    if fresh {
        tell_change(sem.ctx(), &key, c"rsem.acquired");
    }
}

/// Takes `permits` for `ask`'s owner as that many holdings of one permit, all under one new
/// token, each with the same lease and cap; its request id is kept on the first. Returns the
/// token and the lease end.
pub fn grant_each(db: i32, sem: &mut Semaphore, ask: &Request, permits: i64) -> Result<(i64, i64)> {
    let owner = bytes(ask.owner);
    check_none_hold(sem, owner, permits)?;
    let now = now_ms();
    let cap = cap_from(ask, now);
    let token = issue_token();
    sem.add_available(-permits)?;
    let holding = semaphore::Holding {
        permits: 1,
        token,
        expire_at: lease_end(now, ask.lease_ms, cap),
        cap,
    };
    let ids = ask.id.map(|id| {
        let mut memory = Memory::default();
        memory.remember(Kind::Acquire, id, token, now, config::retry_window_ms());
        memory.encode()
    });
    for i in 1..=permits {
        let each = each_owner(owner, i);
        let written = Written {
            owner: &each,
            holding: &holding,
            ids: ids.as_deref().filter(|_| i == 1),
            fresh: true,
        };
        put_holding(db, sem, ask, written);
    }
    stats::ACQUISITIONS.add();
    Ok((token, holding.expire_at))
}
