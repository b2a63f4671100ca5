//! Giving the lock to someone: the fencing-token clock, and handing a free lock to the
//! first waiter so that nobody can barge in ahead of the queue.

use crate::api::{api, bytes, now_ms, now_us, Ctx, OwnedStr, RStr};
use crate::config;
use crate::counter;
use crate::error::{Error, Result};
use crate::lifetime::notices::Notice;
use crate::lifetime::retries::{Kind, Memory};
use crate::lifetime::watchdog::Bind;
use crate::lifetime::{with_notices, with_watchdog};
use crate::lock::{lease_end, Access, Acquire, TokenClock, Want};
use crate::notify;
use crate::rwlock::{self, Refused};
use crate::rwstore;
use crate::semaphore;
use crate::semstore::Semaphore;
use crate::stats;
use crate::store::{Extra, LockKey, LockType};
use crate::waiters::{self, Outcome, Request};
use std::cell::RefCell;
use std::rc::Rc;

thread_local! {
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

pub fn selected_db(ctx: Ctx) -> i32 {
    // SAFETY: `ctx` is the live context of the current callback.
    unsafe { api!(RedisModule_GetSelectedDb)(ctx) }
}

/// Hands a free lock to the head of its queue: the first live waiter of a plain lock, or as
/// many as the read-write lock's rules admit. Returns the lease end to watch next.
pub fn grant_next(lock: &mut LockKey, db: i32) -> Option<i64> {
    match waiters::next_want(db, bytes(lock.name()))? {
        Want::Lock => grant_next_plain(lock, db),
        Want::Read | Want::Write => admit_rw(lock, db),
        // Counters, not lock hashes: served by `open_latch` and `admit_permits`.
        Want::Latch | Want::Permits(_) => None,
    }
}

fn grant_next_plain(lock: &mut LockKey, db: i32) -> Option<i64> {
    let waiter = waiters::pop_next(db, bytes(lock.name()))?;
    let token = issue_token();
    let expire_at = grant_fresh(lock, db, &waiter.ask.request(), token);
    waiters::deliver(waiter, Outcome::Granted(token));
    stats::HANDOFFS.add();
    Some(expire_at)
}

/// Writes a new holding for `ask` with `token` into a free lock: its hold cap, the request
/// id it remembers, and its watchdog binding. Returns the lease end.
pub fn grant_fresh(lock: &mut LockKey, db: i32, ask: &Request, token: i64) -> i64 {
    let now = now_ms();
    let cap = ask
        .max_hold_ms
        .or_else(config::max_hold_ms)
        .map(|ms| now + ms);
    let ids = ask.id.map(|id| {
        let mut memory = Memory::default();
        memory.remember(Kind::Acquire, id, token, now, config::retry_window_ms());
        memory.encode()
    });
    let expire_at = lease_end(now, ask.lease_ms, cap);
    let extra = Extra {
        token: Some(token),
        ids: ids.as_deref(),
        cap,
    };
    lock.grant(ask.owner, extra, expire_at);
    let key = bytes(lock.name());
    unbind(db, key);
    let holding = Holding {
        kind: LockType::Plain,
        owner: bytes(ask.owner),
        token: Some(token),
    };
    tell_loss(db, key, &holding, ask, Want::Lock);
    if let Some(client) = ask.bind_to {
        bind(db, key, holding, client, ask.lease_ms, !ask.by_message);
    }
    stats::ACQUISITIONS.add();
    expire_at
}

/// A holding granted with `NOTIFY` is told of its loss on its grant channel.
fn tell_loss(db: i32, key: &[u8], holding: &Holding, ask: &Request, want: Want) {
    if let (Some(client), Some(token)) = (ask.notify, holding.token) {
        let notice = Notice {
            owner: Rc::from(holding.owner),
            token,
            client,
            want,
        };
        with_notices(|n| n.watch(db, key, notice));
    }
}

/// The owner ended its own holding: it is not told of a loss.
pub fn released(db: i32, key: &[u8], owner: &[u8]) {
    with_notices(|n| n.forget(db, key, owner));
}

/// Tells the owners of the lock's noticed holdings that they ended (`lost`).
fn lost_all(db: i32, key: &[u8]) {
    for notice in with_notices(|n| n.take_lock(db, key)) {
        notify::tell_lost(key, &notice);
    }
}

/// A holding to bind: of which lock type, whose, and which one (its token).
pub struct Holding<'a> {
    pub kind: LockType,
    pub owner: &'a [u8],
    pub token: Option<i64>,
}

/// Binds a holding of the lock at `key` to connection `client`, renewed for `lease_ms` (once
/// confirmed, for a grant told by message: `renewing` false).
pub fn bind(db: i32, key: &[u8], holding: Holding, client: u64, lease_ms: i64, renewing: bool) {
    let bind = Bind {
        owner: Rc::from(holding.owner),
        token: holding.token,
        client,
        lease_ms,
        kind: holding.kind,
        renewing,
    };
    with_watchdog(|w| w.bind((db, Rc::from(key)), bind, now_ms()));
}

/// `RENEW ... WATCHDOG`: confirms a grant told by message (its binding stays on the connection
/// the grant was told to, and renewals start), or binds the holding to `client`.
pub fn bind_or_confirm(db: i32, key: &[u8], holding: Holding, client: u64, lease_ms: i64) {
    let lock = (db, Rc::from(key));
    let confirmed =
        with_watchdog(|w| w.confirm(lock, holding.owner, holding.token, lease_ms, now_ms()));
    if !confirmed {
        bind(db, key, holding, client, lease_ms, true);
    }
}

/// Binds a holding that has no binding yet (a re-entry with WATCHDOG); never moves one, which
/// only `RENEW ... WATCHDOG` does. Returns whether it bound.
pub fn bind_if_unbound(
    db: i32,
    key: &[u8],
    holding: Holding,
    client: u64,
    lease_ms: i64,
    renewing: bool,
) -> bool {
    let bound = with_watchdog(|w| w.get(db, key, holding.owner).is_some());
    if !bound {
        bind(db, key, holding, client, lease_ms, renewing);
    }
    !bound
}

/// Ends every watchdog binding of the lock (it is free, or a new holding replaces the old);
/// the owners told of a loss hear of it.
pub fn unbind(db: i32, key: &[u8]) {
    with_watchdog(|w| w.unbind_lock(db, key));
    lost_all(db, key);
}

/// Tells Redisson's waiters the lock is free (or, for a read-write lock, open to readers):
/// `0` on `redisson_lock__channel:{key}` for the plain lock; `1` (Redisson's "wake every
/// waiter") on `redisson_rwlock:{key}` for the read-write lock.
pub fn announce(ctx: Ctx, key: &[u8], kind: LockType) {
    if !config::redisson_publish() {
        return;
    }
    let (name, message) = match kind {
        LockType::Plain => ([&b"redisson_lock__channel:{"[..], key, b"}"].concat(), b"0"),
        LockType::ReadWrite => (rwlock::channel(key), b"1"),
        // Semaphores announce their count as they change it (`give_back`).
        LockType::Semaphore => return,
    };
    publish(ctx, &name, message);
}

/// Publishes `message` on `channel` (Redisson's clients listen there), unless
/// `rlock.redisson-publish` is off.
pub fn publish(ctx: Ctx, channel: &[u8], message: &[u8]) {
    if !config::redisson_publish() {
        return;
    }
    let (channel, message) = (OwnedStr::new(channel), OwnedStr::new(message));
    // SAFETY: both strings are live for the call; Redis copies what it keeps.
    unsafe { api!(RedisModule_PublishMessage)(ctx, channel.0, message.0) };
}

/// A latch whose count is gone or down to 0 opens for every waiter at once (each is told 1);
/// a key that now holds something else fails them.
pub fn open_latch(ctx: Ctx, db: i32, key: RStr) {
    let name = bytes(key);
    let outcome = match counter::get(ctx, key) {
        Ok(Some(count)) if count > 0 => return,
        Ok(_) => Outcome::Granted(1),
        Err(error) => Outcome::Failed(error),
    };
    while waiters::next_want(db, name) == Some(Want::Latch) {
        let Some(waiter) = waiters::pop_next(db, name) else {
            break;
        };
        let outcome = match &outcome {
            Outcome::Granted(n) => Outcome::Granted(*n),
            Outcome::Failed(e) => Outcome::Failed(e.clone()),
        };
        waiters::deliver(waiter, outcome);
    }
}

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
    let seen = rwstore::seen(lock, owner, queued, now)?;
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
            stats::RETRIES_ANSWERED.add();
            return Ok(Some(token));
        }
    }
    let decision = with_token_clock(|clock, now_us| rwlock::acquire(&seen, access, clock, now_us))
        .map_err(|refused| match refused {
            Refused::Upgrade => Error::Upgrade,
            Refused::TooManyReadHolds => Error::TooManyReadHolds,
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
    let at = lease_end(now, ask.lease_ms, cap);
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

/// Admits waiters at the head of a read-write lock's queue for as long as the rules let them
/// in: a run of readers together, or one writer. Returns, when any was admitted, the lease end
/// to watch next (the earliest holding's while others still wait).
pub fn admit_rw(lock: &mut LockKey, db: i32) -> Option<i64> {
    let key = bytes(lock.name()).to_vec();
    let mut admitted = false;
    while let Some(access) = waiters::next_want(db, &key).and_then(rwlock::access) {
        let Ok(mode) = rwstore::mode(lock) else {
            waiters::fail_all(db, &key);
            break;
        };
        if !rwlock::may_enter(mode, access) {
            break;
        }
        let Some(waiter) = waiters::pop_next(db, &key) else {
            break;
        };
        let outcome = match take_rw(lock, db, &waiter.ask.request(), access, false) {
            Ok(Some(token)) => Outcome::Granted(token),
            // Admitted by the rules, so only a refusal of the owner's own (an upgrade) is left.
            Ok(None) => Outcome::Failed(Error::Upgrade),
            Err(error) => Outcome::Failed(error),
        };
        if matches!(outcome, Outcome::Granted(_)) {
            stats::HANDOFFS.add();
            admitted = true;
        }
        waiters::deliver(waiter, outcome);
    }
    if !admitted {
        return None;
    }
    let watch = match waiters::count(db, &key) {
        0 => None,
        _ => rwstore::next_lease_end(lock).ok().flatten(),
    };
    Some(watch.or(lock.expire_at()).unwrap_or_else(now_ms))
}

/// Gives `permits` back to the semaphore and tells Redisson's waiters the new count, as
/// Redisson's release does.
pub fn give_back(ctx: Ctx, sem: &mut Semaphore, permits: i64) -> Result<i64> {
    let available = sem.add_available(permits)?;
    publish(
        ctx,
        &semaphore::channel(bytes(sem.key())),
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
    while let Some(Want::Permits(wanted)) = waiters::next_want(db, &key) {
        if sem.available() < wanted {
            break;
        }
        let Some(waiter) = waiters::pop_next(db, &key) else {
            break;
        };
        let outcome = match grant_permits(db, sem, &waiter.ask.request(), wanted) {
            Ok((token, expire_at)) => {
                stats::HANDOFFS.add();
                earliest = earlier(earliest, expire_at);
                Outcome::Granted(token)
            }
            Err(error) => Outcome::Failed(error),
        };
        waiters::deliver(waiter, outcome);
    }
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
    let key = bytes(sem.key()).to_vec();
    let now = now_ms();
    let existing = sem.holding(owner)?;
    let cap = match existing {
        Some(held) => held.cap,
        None => ask
            .max_hold_ms
            .or_else(config::max_hold_ms)
            .map(|ms| now + ms),
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
    sem.set_holding(owner, &holding, ids.as_deref());
    let bound = with_watchdog(|w| {
        let bound = w.get(db, &key, owner).is_some();
        w.retoken(db, &key, owner, Some(token));
        bound
    });
    let granted = Holding {
        kind: LockType::Semaphore,
        owner,
        token: Some(token),
    };
    tell_loss(db, &key, &granted, ask, Want::Permits(holding.permits));
    if let (Some(client), false) = (ask.bind_to, bound) {
        bind(db, &key, granted, client, ask.lease_ms, !ask.by_message);
    }
    stats::ACQUISITIONS.add();
    Ok((token, holding.expire_at))
}
