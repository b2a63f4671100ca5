//! The RWLOCK commands: parse, apply the read-write lock's rules, reply. Everything else is the
//! plain lock's machinery: the queue (`waiters`), handoff (`grants`), lease timers (`upkeep`).

use crate::api::{api, bytes, now_ms, Ctx, OwnedStr, RStr};
use crate::args;
use crate::commands::{open_for_write, run, wait_or_nil, with_bytes, Reply};
use crate::config;
use crate::error::{Error, Result};
use crate::grants::{announce, selected_db, take_rw};
use crate::lock::{lease_end, Access, Want};
use crate::rwlock::{self, Mode};
use crate::rwstore::{self, Settled};
use crate::stats;
use crate::store::{LockKey, LockType};
use crate::upkeep::{hand_over, serve_queue_if_free, serve_rw, watch_lease};
use crate::waiters::{self, Ask};
use std::os::raw::{c_int, c_long};

fn want(access: Access) -> Want {
    match access {
        Access::Shared => Want::Read,
        Access::Exclusive => Want::Write,
    }
}

/// `RWLOCK.ACQUIRE key owner READ|WRITE [PX lease-ms] [WAIT timeout-ms]`
fn acquire(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, mode, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let owner_bytes = args::rw_owner(bytes(*owner))?;
    let access = args::mode(bytes(*mode))?;
    let o = with_bytes(options, args::rw_acquire_options)?;
    let lease_ms = o.lease_ms.unwrap_or_else(config::default_lease_ms);
    let (mut lock, db) = open_for_write(ctx, *key, LockType::ReadWrite)?;
    let name = bytes(*key);
    let queued = waiters::count(db, name) > 0;
    if let Some(token) = take_rw(&mut lock, owner_bytes, access, lease_ms, queued)? {
        // A re-entry may shorten a lease the queue is watching.
        watch_lease(ctx, db, name, Some(lease_end(now_ms(), lease_ms, None)));
        return Ok(Reply::Int(token));
    }
    let ask = || Ask {
        want: want(access),
        owner: OwnedStr::hold(*owner),
        lease_ms,
        client: 0,
        watchdog: false,
        id: None,
        max_hold_ms: None,
    };
    wait_or_nil(ctx, (db, name), o.wait, ask, || {
        rwstore::next_lease_end(&lock)
    })
}

/// `RWLOCK.RELEASE key owner READ|WRITE`
fn release(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, mode, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let owner = args::rw_owner(bytes(*owner))?;
    let access = args::mode(bytes(*mode))?;
    with_bytes(options, args::rw_release_options)?;
    let (mut lock, db) = open_for_write(ctx, *key, LockType::ReadWrite)?;
    let now = now_ms();
    let mine = rwstore::seen(&mut lock, owner, false, now)?.mine;
    match rwlock::release(mine, access) {
        crate::lock::Release::NotHolder => Ok(Reply::Null),
        crate::lock::Release::Partial { remaining } => {
            rwstore::release(&mut lock, owner, access, remaining, now)?;
            Ok(Reply::Int(remaining))
        }
        crate::lock::Release::Full => {
            let settled = rwstore::release(&mut lock, owner, access, 0, now)?;
            stats::RELEASES.add();
            if access == Access::Exclusive && settled == (Settled::Held { mode: Mode::Read }) {
                // A downgrade: Redisson's readers may enter now.
                announce(ctx, bytes(*key), LockType::ReadWrite);
            }
            serve_rw(ctx, &mut lock, db, settled);
            Ok(Reply::Int(0))
        }
    }
}

/// `RWLOCK.RENEW key owner [PX lease-ms]`: every holding of `owner` gets the new lease.
fn renew(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let owner = args::rw_owner(bytes(*owner))?;
    let o = with_bytes(options, args::rw_renew_options)?;
    let lease_ms = o.lease_ms.unwrap_or_else(config::default_lease_ms);
    let (mut lock, db) = open_for_write(ctx, *key, LockType::ReadWrite)?;
    let now = now_ms();
    rwstore::seen(&mut lock, owner, false, now)?;
    let renewed = rwstore::renew(&mut lock, owner, lease_end(now, lease_ms, None), now)?;
    if renewed {
        serve_rw(ctx, &mut lock, db, Settled::Held { mode: Mode::Read });
    }
    Ok(Reply::Int(i64::from(renewed)))
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
            });
        }
    }
    if shown.is_empty() {
        return Ok(Reply::Null);
    }
    let db = selected_db(ctx);
    let name = bytes(*key);
    let readers = waiters::count_wanting(db, name, Want::Read) as i64;
    let writers = waiters::count_wanting(db, name, Want::Write) as i64;
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
    unsafe {
        let text = |t: &[u8]| {
            api!(RedisModule_ReplyWithStringBuffer)(ctx, t.as_ptr().cast(), t.len());
        };
        let int = |n: i64| {
            api!(RedisModule_ReplyWithLongLong)(ctx, n);
        };
        api!(RedisModule_ReplyWithMap)(ctx, 5 as c_long);
        text(b"mode");
        text(mode.name());
        text(b"ttl");
        int(ttl);
        text(b"holders");
        api!(RedisModule_ReplyWithArray)(ctx, shown.len() as c_long);
        for s in shown {
            api!(RedisModule_ReplyWithMap)(ctx, 5 as c_long);
            text(b"owner");
            text(&s.owner);
            text(b"mode");
            text(s.mode.name());
            text(b"holds");
            int(s.holds);
            text(b"token");
            match s.token {
                Some(token) => int(token),
                None => {
                    api!(RedisModule_ReplyWithNull)(ctx);
                }
            }
            text(b"ttl");
            int(s.ttl);
        }
        text(b"waiting_readers");
        int(readers);
        text(b"waiting_writers");
        api!(RedisModule_ReplyWithLongLong)(ctx, writers)
    }
}

crate::commands::entry_points!(
    acquire_command => acquire,
    release_command => release,
    renew_command => renew,
    force_release_command => force_release,
    info_command => info,
);
