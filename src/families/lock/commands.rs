//! The RLOCK commands: parse, apply the plain lock's rules, reply. Writes replicate from
//! `store`.

use crate::api::{bytes, now_ms, selected_db, Ctx, RStr};
use crate::args;
use crate::clock::{lease_end, observe_token, with_token_clock};
use crate::config;
use crate::error::{Error, Result};
use crate::holdings::{self};
use crate::kinds::{Acquire, LockType, Release};
use crate::lifetime::{self, retries, retries::Kind};
use crate::queue::{self, Ask};
use crate::reply::{run, with_bytes, Out, Reply};
use crate::own_writes::answered_again;
use crate::request::{lease_ms, open_for_write, request, wait_or_nil, watchdog_client};
use crate::stats;
use crate::store::LockKey;
use crate::families::handover::{hand_over, serve_queue_if_free};
use crate::watch::{arm_renewals, watch_lease};
use std::os::raw::c_int;

use super::rules::{self as lock, View};
use super::store::{Extra, Holder};
use super::take::{apply, memory_for, plain_holding, remembered, view};

/// `RLOCK.ACQUIRE key owner [PX lease-ms] [WAIT timeout-ms] [WATCHDOG] [ID id] [MAXHOLD ms]`
fn acquire(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    args::owner(bytes(*owner))?;
    let o = with_bytes(options, args::lock_acquire_options)?;
    let request = request(ctx, *owner, &o)?;
    let (mut lock, db) = open_for_write(ctx, *key, LockType::Plain)?;
    let view = view(&lock, *owner)?;
    let memory = memory_for(&lock, o.id, view);
    if let (
        Some(id),
        Some(memory),
        View::Mine {
            token: Some(token), ..
        },
    ) = (o.id, &memory, view)
    {
        if memory.find(Kind::Acquire, id) == Some(token) {
            answered_again(ctx);
            return Ok(Reply::Int(token));
        }
    }
    let decision = with_token_clock(|clock, now_us| lock::acquire(view, clock, now_us));
    match decision {
        Acquire::Busy => wait_or_nil(
            ctx,
            (db, bytes(*key)),
            o.wait,
            || Ask::new(lock::WANT, &request),
            || Ok(lock.expire_at()),
        ),
        Acquire::Fresh { .. } if queue::count(db, bytes(*key)) > 0 => wait_or_nil(
            ctx,
            (db, bytes(*key)),
            o.wait,
            || Ask::new(lock::WANT, &request),
            || Ok(None),
        ),
        decision => apply(ctx, (&mut lock, db), &request, decision, memory).map(Reply::Int),
    }
}

/// `RLOCK.RELEASE key owner [ID request-id]`
fn release(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    args::owner(bytes(*owner))?;
    let o = with_bytes(options, args::release_options)?;
    Ok(match release_one(ctx, *key, *owner, o.id)? {
        Some(remaining) => Reply::Int(remaining),
        None => Reply::Null,
    })
}

/// Releases `owner`'s holding of `key` once (request id `id`): the holds left (0: released,
/// and handed over), or None when `owner` does not hold it.
pub(super) fn release_one(
    ctx: Ctx,
    key: RStr,
    owner: RStr,
    id: Option<&[u8]>,
) -> Result<Option<i64>> {
    let (key, owner) = (&key, &owner);
    let (mut lock, db) = open_for_write(ctx, *key, LockType::Plain)?;
    let call = id.map(|id| retries::release_call(db, bytes(*key), bytes(*owner), id));
    if let Some(call) = &call {
        if lifetime::with_released(|r| r.reply(call, now_ms()).is_some()) {
            answered_again(ctx);
            return Ok(Some(0));
        }
    }
    let view = lock.view_without_token(*owner)?;
    if let (Some(id), View::Mine { .. }) = (id, view) {
        if let Some(remaining) = lock.remembered_reply(Kind::Release, id) {
            answered_again(ctx);
            return Ok(Some(remaining));
        }
    }
    match lock::release(view) {
        Release::NotHolder => Ok(None),
        Release::Partial { remaining } => {
            // The memory is built (read again) only where it is written back.
            let memory = memory_for(&lock, id, view);
            let ids = id.map(|id| remembered(memory, Kind::Release, id, remaining));
            let extra = Extra {
                ids: ids.as_deref(),
                ..Extra::default()
            };
            lock.set_holds(*owner, remaining, extra);
            Ok(Some(remaining))
        }
        Release::Full => {
            lock.delete();
            holdings::released(db, bytes(*key), bytes(*owner));
            holdings::tell_change(ctx, bytes(*key), c"rlock.released");
            stats::RELEASES.add();
            if let Some(call) = call {
                let window = config::retry_window_ms();
                lifetime::with_released(|r| r.remember(call, 0, now_ms(), window));
            }
            hand_over(ctx, &mut lock, db, LockType::Plain);
            Ok(Some(0))
        }
    }
}

/// `RLOCK.RENEW key owner [PX lease-ms] [WATCHDOG]`
fn renew(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    args::owner(bytes(*owner))?;
    let o = with_bytes(options, args::renew_options)?;
    let bind_to = watchdog_client(ctx, o.watchdog)?;
    let lease_ms = lease_ms(&o)?;
    let (mut lock, db) = open_for_write(ctx, *key, LockType::Plain)?;
    let View::Mine { token, .. } = view(&lock, *owner)? else {
        return Ok(Reply::Int(0));
    };
    let expire_at = lock.set_lease_end(lease_end(now_ms(), lease_ms, lock.cap()));
    let name = bytes(*key);
    match bind_to {
        Some(client) => {
            holdings::bind_or_confirm(
                db,
                name,
                plain_holding(bytes(*owner), token),
                client,
                lease_ms,
            );
            arm_renewals(ctx);
        }
        None if o.lease_ms.is_some() => {
            lifetime::with_watchdog(|w| w.set_lease(db, name, bytes(*owner), lease_ms));
        }
        None => {}
    }
    watch_lease(ctx, db, name, Some(expire_at));
    Ok(Reply::Int(1))
}

/// `RLOCK.FORCERELEASE key [TOKEN token]`
fn force_release(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let o = with_bytes(options, args::force_release_options)?;
    let mut lock = LockKey::open_as(ctx, *key, true, LockType::Plain)?;
    let db = selected_db(ctx);
    if lock.is_free() {
        serve_queue_if_free(ctx, &mut lock, db);
        return Ok(Reply::Int(0));
    }
    let token = lock.token();
    if o.token.is_some_and(|wanted| token != Some(wanted)) {
        return Ok(Reply::Int(0));
    }
    observe_token(token);
    lock.delete();
    holdings::tell_change(ctx, bytes(*key), c"rlock.forced");
    stats::FORCE_RELEASES.add();
    hand_over(ctx, &mut lock, db, LockType::Plain);
    Ok(Reply::Int(1))
}

/// `RLOCK.INFO key`
fn info(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key] = argv else {
        return Err(Error::WrongArity);
    };
    let lock = LockKey::open_as(ctx, *key, false, LockType::Plain)?;
    if lock.is_free() {
        return Ok(Reply::Null);
    }
    let now = now_ms();
    let delay = lock.delay();
    // In its lock-delay the lock is held by nobody: no owner, `ttl` is the delay left.
    let holder = match lock.holder() {
        Some(holder) => holder,
        None if lock.in_delay() => Holder {
            owner: Vec::new(),
            holds: 0,
            token: lock.token(),
        },
        None => return Ok(Reply::Null),
    };
    let ttl = lock.expire_at().map_or(-1, |at| (at - now).max(0));
    let ttl = match delay {
        Some(delay) if holder.holds > 0 => (ttl - delay).max(0),
        _ => ttl,
    };
    let db = selected_db(ctx);
    let waiters = queue::count(db, bytes(*key));
    let held = (holder.holds > 0)
        .then_some(holder.token)
        .flatten()
        .map(|token| crate::clock::held_ms(token, now));
    let watchdog = lifetime::with_watchdog(|w| {
        w.get(db, bytes(*key), &holder.owner)
            .filter(|b| b.token == holder.token)
            .map(|b| b.client)
    });
    let info = Info {
        holder,
        ttl,
        waiters,
        held,
        watchdog,
        delay,
    };
    Ok(Reply::With(Box::new(move |ctx| {
        // SAFETY: replies go to the context of the command being executed.
        unsafe { reply_info(ctx, info) }
    })))
}

/// What `RLOCK.INFO` replies.
struct Info {
    holder: Holder,
    ttl: i64,
    waiters: usize,
    held: Option<i64>,
    watchdog: Option<u64>,
    delay: Option<i64>,
}

/// A map in RESP3, a flat field/value array in RESP2.
unsafe fn reply_info(ctx: Ctx, info: Info) -> c_int {
    // SAFETY: as the caller promises, `ctx` is the command's.
    let out = unsafe { Out::new(ctx) };
    out.map(8);
    match info.holder.holds {
        0 => out.int_or_nil_field(b"owner", None),
        _ => out.text_field(b"owner", &info.holder.owner),
    }
    out.int_field(b"holds", info.holder.holds);
    out.int_field(b"ttl", info.ttl);
    out.int_or_nil_field(b"token", info.holder.token);
    out.int_field(b"waiters", info.waiters as i64);
    out.int_or_nil_field(b"held", info.held);
    out.int_or_nil_field(b"watchdog", info.watchdog.map(|id| id as i64));
    out.int_or_nil_field(b"lockdelay", info.delay);
    crate::api::OK
}

/// `RLOCK.LEADER key`: the holder's owner id, its token (a leader's term) and the ms left of
/// its lease; nil when free. A lock taken by a Redisson client has no token (nil).
fn leader(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key] = argv else {
        return Err(Error::WrongArity);
    };
    let lock = LockKey::open_as(ctx, *key, false, LockType::Plain)?;
    let Some(holder) = lock.holder() else {
        return Ok(Reply::Null);
    };
    let ttl = lock.expire_at().map_or(-1, |at| (at - now_ms()).max(0));
    Ok(Reply::With(Box::new(move |ctx| {
        // SAFETY: replies go to the context of the command being executed.
        let out = unsafe { Out::new(ctx) };
        out.map(3);
        out.text_field(b"owner", &holder.owner);
        out.int_or_nil_field(b"token", holder.token);
        out.int_field(b"ttl", ttl);
        crate::api::OK
    })))
}

crate::reply::entry_points!(
    leader_command => leader,
    acquire_command => acquire,
    release_command => release,
    renew_command => renew,
    force_release_command => force_release,
    info_command => info,
);
