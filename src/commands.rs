//! The RLOCK commands: parse, apply to the lock, reply. Writes replicate from `store`.

use crate::api::{api, bytes, guarded, now_ms, Ctx, RStr};
use crate::args::{self, AcquireOptions};
use crate::config;
use crate::error::{Error, Result};
use crate::grants::{self, observe_token, selected_db};
use crate::lock::{self, Acquire, Release, View};
use crate::stats;
use crate::store::{Holder, LockKey};
use crate::upkeep::{hand_over, serve_queue_if_free, watch_lease};
use crate::waiters;
use redis_module::raw;
use std::os::raw::{c_int, c_long};

enum Reply {
    Int(i64),
    Null,
    /// The client is blocked; its reply comes later, from `waiters`.
    Blocked,
    Info {
        holder: Holder,
        ttl: i64,
        waiters: usize,
    },
}

type Handler = fn(Ctx, &[RStr]) -> Result<Reply>;

fn run(ctx: Ctx, argv: *mut RStr, argc: c_int, handler: Handler) -> c_int {
    // SAFETY: Redis passes `argc` live strings in `argv` for the duration of the command.
    let args = unsafe { std::slice::from_raw_parts(argv, argc.max(0) as usize) };
    let result = guarded("a command", Err(Error::Internal), || handler(ctx, args));
    // SAFETY: replies go to the context of the command being executed.
    unsafe {
        match result {
            Ok(Reply::Int(n)) => api!(RedisModule_ReplyWithLongLong)(ctx, n),
            Ok(Reply::Null) => api!(RedisModule_ReplyWithNull)(ctx),
            Ok(Reply::Blocked) => crate::api::OK,
            Ok(Reply::Info {
                holder,
                ttl,
                waiters,
            }) => reply_info(ctx, holder, ttl, waiters),
            Err(Error::WrongArity) => api!(RedisModule_WrongArity)(ctx),
            Err(e) => api!(RedisModule_ReplyWithError)(ctx, e.to_cstring().as_ptr()),
        }
    }
}

/// A map in RESP3, a flat field/value array in RESP2.
unsafe fn reply_info(ctx: Ctx, holder: Holder, ttl: i64, waiters: usize) -> c_int {
    unsafe {
        let field = |name: &str| {
            api!(RedisModule_ReplyWithStringBuffer)(ctx, name.as_ptr().cast(), name.len());
        };
        api!(RedisModule_ReplyWithMap)(ctx, 5 as c_long);
        field("owner");
        api!(RedisModule_ReplyWithStringBuffer)(
            ctx,
            holder.owner.as_ptr().cast(),
            holder.owner.len(),
        );
        field("holds");
        api!(RedisModule_ReplyWithLongLong)(ctx, holder.holds);
        field("ttl");
        api!(RedisModule_ReplyWithLongLong)(ctx, ttl);
        field("token");
        match holder.token {
            Some(token) => api!(RedisModule_ReplyWithLongLong)(ctx, token),
            None => api!(RedisModule_ReplyWithNull)(ctx),
        };
        field("waiters");
        api!(RedisModule_ReplyWithLongLong)(ctx, waiters as i64)
    }
}

/// Parses the options with their bytes on the stack for the usual short argument lists.
fn with_bytes<R>(args: &[RStr], parse: impl FnOnce(&[&[u8]]) -> R) -> R {
    let mut buf: [&[u8]; 4] = [&[]; 4];
    if args.len() <= buf.len() {
        for (slot, arg) in buf.iter_mut().zip(args) {
            *slot = bytes(*arg);
        }
        parse(&buf[..args.len()])
    } else {
        parse(&args.iter().map(|a| bytes(*a)).collect::<Vec<_>>())
    }
}

fn may_block(ctx: Ctx) -> bool {
    let flags = crate::api::context_flags(ctx);
    let no_block = raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING
        | raw::REDISMODULE_CTX_FLAGS_MULTI
        | raw::REDISMODULE_CTX_FLAGS_LUA
        | raw::REDISMODULE_CTX_FLAGS_REPLICATED;
    flags & no_block == 0
}

/// Opens the lock for a write command, serving its queue first if the lock is free.
fn open_for_write(ctx: Ctx, key: RStr) -> Result<(LockKey, i32)> {
    let mut lock = LockKey::open(ctx, key, true)?;
    let db = selected_db(ctx);
    serve_queue_if_free(ctx, &mut lock, db);
    Ok((lock, db))
}

/// The lock as `owner` sees it, with any token it reveals fed to the token clock.
fn view(lock: &LockKey, owner: RStr) -> Result<View> {
    let view = lock.view(owner)?;
    if let View::Mine { token, .. } = view {
        observe_token(token);
    }
    Ok(view)
}

/// `RLOCK.ACQUIRE key owner [PX lease-ms] [WAIT timeout-ms]`
fn acquire(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    args::owner(bytes(*owner))?;
    let AcquireOptions { lease_ms, wait } = with_bytes(options, args::acquire_options)?;
    let lease_ms = lease_ms.unwrap_or_else(config::default_lease_ms);
    let (mut lock, db) = open_for_write(ctx, *key)?;
    let view = view(&lock, *owner)?;
    let decision = grants::with_token_clock(|clock, now_us| lock::acquire(view, clock, now_us));
    let expire_at = now_ms() + lease_ms;
    match decision {
        Acquire::Fresh { token } => {
            lock.grant(*owner, token, expire_at);
            stats::ACQUISITIONS.add();
            Ok(Reply::Int(token))
        }
        Acquire::Reentry {
            holds,
            token,
            new_token,
        } => {
            lock.set_holds(*owner, holds, new_token.then_some(token));
            lock.set_expire_at(expire_at);
            watch_lease(ctx, db, bytes(*key), Some(expire_at));
            stats::REENTRIES.add();
            Ok(Reply::Int(token))
        }
        Acquire::Overflow => Err(Error::HoldsOverflow),
        Acquire::Busy => {
            stats::CONTENDED.add();
            match wait {
                Some(wait) if may_block(ctx) => {
                    if !crate::events::ensure_keyspace_subscription(ctx) {
                        return Err(Error::Internal);
                    }
                    waiters::block(ctx, db, bytes(*key), *owner, lease_ms, wait);
                    watch_lease(ctx, db, bytes(*key), lock.expire_at());
                    Ok(Reply::Blocked)
                }
                _ => Ok(Reply::Null),
            }
        }
    }
}

/// `RLOCK.RELEASE key owner`
fn release(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner] = argv else {
        return Err(Error::WrongArity);
    };
    args::owner(bytes(*owner))?;
    let (mut lock, db) = open_for_write(ctx, *key)?;
    match lock::release(view(&lock, *owner)?) {
        Release::NotHolder => Ok(Reply::Null),
        Release::Partial { remaining } => {
            lock.set_holds(*owner, remaining, None);
            Ok(Reply::Int(remaining))
        }
        Release::Full => {
            lock.delete();
            stats::RELEASES.add();
            hand_over(ctx, &mut lock, db);
            Ok(Reply::Int(0))
        }
    }
}

/// `RLOCK.RENEW key owner [PX lease-ms]`
fn renew(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    args::owner(bytes(*owner))?;
    let lease_ms =
        with_bytes(options, args::renew_options)?.unwrap_or_else(config::default_lease_ms);
    let (mut lock, db) = open_for_write(ctx, *key)?;
    match view(&lock, *owner)? {
        View::Mine { .. } => {
            let expire_at = now_ms() + lease_ms;
            lock.set_expire_at(expire_at);
            watch_lease(ctx, db, bytes(*key), Some(expire_at));
            Ok(Reply::Int(1))
        }
        View::Free | View::Theirs => Ok(Reply::Int(0)),
    }
}

/// `RLOCK.FORCERELEASE key`
fn force_release(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key] = argv else {
        return Err(Error::WrongArity);
    };
    let mut lock = LockKey::open(ctx, *key, true)?;
    let db = selected_db(ctx);
    if lock.is_free() {
        serve_queue_if_free(ctx, &mut lock, db);
        return Ok(Reply::Int(0));
    }
    observe_token(lock.token());
    lock.delete();
    stats::FORCE_RELEASES.add();
    hand_over(ctx, &mut lock, db);
    Ok(Reply::Int(1))
}

/// `RLOCK.INFO key`
fn info(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key] = argv else {
        return Err(Error::WrongArity);
    };
    let lock = LockKey::open(ctx, *key, false)?;
    let Some(holder) = lock.holder() else {
        return Ok(Reply::Null);
    };
    let ttl = lock.expire_at().map_or(-1, |at| (at - now_ms()).max(0));
    let waiters = waiters::count(selected_db(ctx), bytes(*key));
    Ok(Reply::Info {
        holder,
        ttl,
        waiters,
    })
}

macro_rules! entry_points {
    ($($entry:ident => $handler:ident),* $(,)?) => {
        $(pub extern "C" fn $entry(ctx: Ctx, argv: *mut RStr, argc: c_int) -> c_int {
            run(ctx, argv, argc, $handler)
        })*
    };
}

entry_points!(
    acquire_command => acquire,
    release_command => release,
    renew_command => renew,
    force_release_command => force_release,
    info_command => info,
);
