//! The RWLOCK commands: parse, apply the read-write lock's rules, reply. The queue, holdings
//! and lease timers are the shared rooms' (`queue`, `holdings`, `watch`).

use crate::api::{bytes, now_ms, selected_db, Ctx, RStr};
use crate::args;
use crate::clock::lease_end;
use crate::config;
use crate::error::{Error, Result};
use crate::holdings::{self, Holding};
use crate::kinds::{Access, LockType};
use crate::lifetime::{self, retries, retries::Kind};
use crate::queue::{self, Ask};
use crate::reply::{run, with_bytes, Out, Reply};
use crate::own_writes::answered_again;
use crate::request::{lease_ms, open_for_write, request, wait_or_nil, watchdog_client};
use crate::stats;
use crate::store::LockKey;
use crate::subscriptions::watch_for_loss;
use crate::families::handover::{hand_over, serve_queue_if_free};
use crate::watch::arm_renewals;
use std::os::raw::c_int;

use super::family::{serve_rw, watch_rw};
use super::rules::{self as rwlock, Mode};
use super::serve::announce_open;
use super::take::take_rw;
use super::store::{self as rwstore, Settled};

/// `RWLOCK.ACQUIRE key owner READ|WRITE [PX lease-ms] [WAIT timeout-ms] [WATCHDOG] [ID id]
/// [MAXHOLD ms]`
fn acquire(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, mode, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    args::rw_owner(bytes(*owner))?;
    let access = args::mode(bytes(*mode))?;
    let o = with_bytes(options, args::acquire_options)?;
    let request = request(ctx, *owner, &o)?;
    let bind_to = request.bind_to;
    let (mut lock, db) = open_for_write(ctx, *key, LockType::ReadWrite)?;
    let name = bytes(*key);
    let queued = queue::count(db, name) > 0;
    if let Some(token) = take_rw(&mut lock, db, &request, access, queued)? {
        // A re-entry may shorten a lease the queue is watching.
        let next = rwstore::next_lease_end(&lock)?;
        watch_rw(ctx, db, &lock);
        watch_for_loss(ctx, &request, (db, name), next);
        if bind_to.is_some() {
            arm_renewals(ctx);
        }
        return Ok(Reply::Int(token));
    }
    let ask = || Ask::new(rwlock::want(access), &request);
    wait_or_nil(ctx, (db, name), o.wait, ask, || {
        rwstore::next_lease_end(&lock)
    })
}

/// `RWLOCK.RELEASE key owner READ|WRITE [ID request-id]`
fn release(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, mode, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let owner = args::rw_owner(bytes(*owner))?;
    let access = args::mode(bytes(*mode))?;
    let o = with_bytes(options, args::release_options)?;
    let (mut lock, db) = open_for_write(ctx, *key, LockType::ReadWrite)?;
    let name = bytes(*key);
    let now = now_ms();
    let call = o.id.map(|id| retries::release_call(db, name, owner, id));
    if let Some(call) = &call {
        if lifetime::with_released(|r| r.reply(call, now).is_some()) {
            answered_again(ctx);
            return Ok(Reply::Int(0));
        }
    }
    let mine = rwstore::seen(&mut lock, owner, false, now)?.mine;
    let mut memory = o.id.map(|_| rwstore::ids(&lock, owner));
    if let (Some(id), Some(memory)) = (o.id, &memory) {
        if let Some(remaining) = memory.find(Kind::Release, id) {
            answered_again(ctx);
            return Ok(Reply::Int(remaining));
        }
    }
    let remaining = match rwlock::release(mine, access) {
        crate::kinds::Release::NotHolder => return Ok(Reply::Null),
        crate::kinds::Release::Partial { remaining } => remaining,
        crate::kinds::Release::Full => 0,
    };
    let settled = rwstore::release(&mut lock, owner, access, remaining, now)?;
    let after = rwstore::mine(&lock, owner)?;
    if after.reads > 0 || after.writes > 0 {
        if let (Some(id), Some(memory)) = (o.id, memory.as_mut()) {
            memory.remember(Kind::Release, id, remaining, now, config::retry_window_ms());
            rwstore::set_ids(&mut lock, owner, &memory.encode());
        }
        if after.writes == 0 && mine.writes > 0 {
            // A downgrade: a watchdog binding lives on with the read holding.
            lifetime::with_watchdog(|w| w.retoken(db, name, owner, after.read_token));
        }
        if after.writes == 0 && mine.writes > 0 {
            holdings::tell_change(ctx, name, c"rwlock.downgraded");
        }
    } else {
        lifetime::with_watchdog(|w| w.unbind(db, name, owner));
        holdings::released(db, name, owner);
        holdings::tell_change(ctx, name, c"rwlock.released");
        if let Some(call) = call {
            let window = config::retry_window_ms();
            lifetime::with_released(|r| r.remember(call, 0, now, window));
        }
    }
    if remaining > 0 {
        return Ok(Reply::Int(remaining));
    }
    stats::RELEASES.add();
    if access == Access::Exclusive && settled == (Settled::Held { mode: Mode::Read }) {
        // A downgrade: Redisson's readers may enter now.
        announce_open(ctx, name);
    }
    serve_rw(ctx, &mut lock, db, settled, &hand_over_rw(ctx, db));
    Ok(Reply::Int(0))
}

/// A read-write lock freed by a command goes to its queue's head, or Redisson's waiters hear
/// of it.
fn hand_over_rw(ctx: Ctx, db: i32) -> impl Fn(&mut LockKey) {
    move |lock| hand_over(ctx, lock, db, LockType::ReadWrite)
}

/// `RWLOCK.RENEW key owner [PX lease-ms] [WATCHDOG]`: every holding of `owner` gets the new
/// lease (never past its hold cap); `WATCHDOG` binds them to this connection.
fn renew(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let owner = args::rw_owner(bytes(*owner))?;
    let o = with_bytes(options, args::renew_options)?;
    let bind_to = watchdog_client(ctx, o.watchdog)?;
    let lease_ms = lease_ms(&o)?;
    let (mut lock, db) = open_for_write(ctx, *key, LockType::ReadWrite)?;
    let now = now_ms();
    let mine = rwstore::seen(&mut lock, owner, false, now)?.mine;
    let at = lease_end(now, lease_ms, rwstore::cap(&lock, owner));
    if !rwstore::renew(&mut lock, owner, at, now)? {
        return Ok(Reply::Int(0));
    }
    let name = bytes(*key);
    match bind_to {
        Some(client) => {
            let holding = Holding {
                kind: LockType::ReadWrite,
                owner,
                token: mine
                    .write_token
                    .filter(|_| mine.writes > 0)
                    .or(mine.read_token),
            };
            holdings::bind_or_confirm(db, name, holding, client, lease_ms);
            arm_renewals(ctx);
        }
        None if o.lease_ms.is_some() => {
            lifetime::with_watchdog(|w| w.set_lease(db, name, owner, lease_ms));
        }
        None => {}
    }
    let held = Settled::Held { mode: Mode::Read };
    serve_rw(ctx, &mut lock, db, held, &hand_over_rw(ctx, db));
    Ok(Reply::Int(1))
}

/// `RWLOCK.FORCERELEASE key`
fn force_release(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key] = argv else {
        return Err(Error::WrongArity);
    };
    let mut lock = LockKey::open_as(ctx, *key, true, LockType::ReadWrite)?;
    let db = selected_db(ctx);
    if lock.is_free() {
        serve_queue_if_free(ctx, &mut lock, db);
        return Ok(Reply::Int(0));
    }
    rwstore::delete(&mut lock)?;
    holdings::tell_change(ctx, bytes(*key), c"rwlock.forced");
    stats::FORCE_RELEASES.add();
    hand_over(ctx, &mut lock, db, LockType::ReadWrite);
    Ok(Reply::Int(1))
}

/// One holding as `RWLOCK.INFO` shows it.
struct Shown {
    owner: Vec<u8>,
    mode: Mode,
    holds: i64,
    token: Option<i64>,
    ttl: i64,
    /// The connection the holding is bound to (`WATCHDOG`).
    watchdog: Option<u64>,
}

/// `RWLOCK.INFO key`: mode, ttl, the holdings (read holdings whose lease ended are left out),
/// and the waiters by mode; nil when free.
fn info(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key] = argv else {
        return Err(Error::WrongArity);
    };
    let lock = LockKey::open_as(ctx, *key, false, LockType::ReadWrite)?;
    if lock.is_free() {
        return Ok(Reply::Null);
    }
    let holders = rwstore::holders(&lock)?;
    let now = now_ms();
    let ttl = lock.expire_at().map_or(-1, |at| (at - now).max(0));
    let mode = match holders.writer {
        Some(_) => Mode::Write,
        None => Mode::Read,
    };
    let mut shown: Vec<Shown> = Vec::new();
    if let Some(w) = holders.writer {
        shown.push(Shown {
            owner: w.owner,
            mode: Mode::Write,
            holds: w.holds,
            token: w.token,
            ttl,
            watchdog: None,
        });
    }
    for r in holders.readers {
        if let Some(end) = rwstore::reader_lease_end(&lock, &r.owner, r.holds).filter(|&e| e > now)
        {
            shown.push(Shown {
                owner: r.owner,
                mode: Mode::Read,
                holds: r.holds,
                token: r.token,
                ttl: end - now,
                watchdog: None,
            });
        }
    }
    if shown.is_empty() {
        return Ok(Reply::Null);
    }
    let db = selected_db(ctx);
    let name = bytes(*key);
    lifetime::with_watchdog(|w| {
        for s in shown.iter_mut() {
            s.watchdog = w
                .get(db, name, &s.owner)
                .filter(|b| b.token == s.token)
                .map(|b| b.client);
        }
    });
    let readers = queue::count_wanting(db, name, rwlock::READ) as i64;
    let writers = queue::count_wanting(db, name, rwlock::WRITE) as i64;
    Ok(Reply::With(Box::new(move |ctx| {
        // SAFETY: replies go to the context of the command being executed.
        unsafe { reply_info(ctx, mode, ttl, &shown, readers, writers) }
    })))
}

/// A map in RESP3, a flat field/value array in RESP2 (holdings likewise).
unsafe fn reply_info(
    ctx: Ctx,
    mode: Mode,
    ttl: i64,
    shown: &[Shown],
    readers: i64,
    writers: i64,
) -> c_int {
    // SAFETY: as the caller promises, `ctx` is the command's.
    let out = unsafe { Out::new(ctx) };
    out.map(5);
    out.text_field(b"mode", mode.name());
    out.int_field(b"ttl", ttl);
    out.text(b"holders");
    out.array(shown.len());
    for s in shown {
        out.map(6);
        out.text_field(b"owner", &s.owner);
        out.text_field(b"mode", s.mode.name());
        out.int_field(b"holds", s.holds);
        out.int_or_nil_field(b"token", s.token);
        out.int_field(b"ttl", s.ttl);
        out.int_or_nil_field(b"watchdog", s.watchdog.map(|c| c as i64));
    }
    out.int_field(b"waiting_readers", readers);
    out.int_field(b"waiting_writers", writers);
    crate::api::OK
}

crate::reply::entry_points!(
    acquire_command => acquire,
    release_command => release,
    renew_command => renew,
    force_release_command => force_release,
    info_command => info,
);
