//! The RLOCK commands: parse, apply to the lock, reply. Writes replicate from `store`.

use crate::api::{api, bytes, context_flags, guarded, now_ms, Ctx, RStr};
use crate::args;
use crate::config;
use crate::error::{Error, Result};
use crate::grants::{self, grant_fresh, observe_token, selected_db};
use crate::lifetime::{self, retries, retries::Kind, retries::Memory};
use crate::lock::{self, lease_end, Acquire, Release, View, Want};
use crate::notify;
use crate::stats;
use crate::store::{Extra, Holder, LockKey, LockType};
use crate::upkeep::{arm_renewals, hand_over, serve_queue_if_free, watch_lease};
use crate::waiters::{self, Ask, Request};
use redis_module::raw;
use std::os::raw::{c_int, c_long};

pub enum Reply {
    Int(i64),
    Null,
    /// A reply of a shape of its own, written by the closure.
    With(Box<dyn FnOnce(Ctx) -> c_int>),
    /// The client is blocked; its reply comes later, from `waiters`.
    Blocked,
    /// Queued with `NOTIFY`: the outcome comes later, as a message.
    Waiting,
    Info {
        holder: Holder,
        ttl: i64,
        waiters: usize,
        /// ms since the holding was granted; None for a Redisson-protocol lock.
        held: Option<i64>,
        /// The client id the holding is bound to.
        watchdog: Option<u64>,
    },
}

pub type Handler = fn(Ctx, &[RStr]) -> Result<Reply>;

/// Runs a command handler under the panic guard and writes its reply.
pub fn run(ctx: Ctx, argv: *mut RStr, argc: c_int, handler: Handler) -> c_int {
    // SAFETY: Redis passes `argc` live strings in `argv` for the duration of the command.
    let args = unsafe { std::slice::from_raw_parts(argv, argc.max(0) as usize) };
    notify::set_command(Some(ctx));
    let result = guarded("a command", Err(Error::Internal), || handler(ctx, args));
    notify::set_command(None);
    // SAFETY: replies go to the context of the command being executed.
    unsafe {
        match result {
            Ok(Reply::Int(n)) => api!(RedisModule_ReplyWithLongLong)(ctx, n),
            Ok(Reply::Null) => api!(RedisModule_ReplyWithNull)(ctx),
            Ok(Reply::With(write)) => write(ctx),
            Ok(Reply::Blocked) => crate::api::OK,
            Ok(Reply::Waiting) => api!(RedisModule_ReplyWithSimpleString)(ctx, c"WAITING".as_ptr()),
            Ok(Reply::Info {
                holder,
                ttl,
                waiters,
                held,
                watchdog,
            }) => reply_info(ctx, holder, ttl, waiters, held, watchdog),
            Err(Error::WrongArity) => api!(RedisModule_WrongArity)(ctx),
            Err(e) => api!(RedisModule_ReplyWithError)(ctx, e.to_cstring().as_ptr()),
        }
    }
}

/// A map in RESP3, a flat field/value array in RESP2.
unsafe fn reply_info(
    ctx: Ctx,
    holder: Holder,
    ttl: i64,
    waiters: usize,
    held: Option<i64>,
    watchdog: Option<u64>,
) -> c_int {
    // SAFETY: as the caller promises, `ctx` is the command's.
    let out = unsafe { Out::new(ctx) };
    out.map(7);
    out.text(b"owner");
    out.text(&holder.owner);
    out.text(b"holds");
    out.int(holder.holds);
    out.text(b"ttl");
    out.int(ttl);
    out.text(b"token");
    out.int_or_nil(holder.token);
    out.text(b"waiters");
    out.int(waiters as i64);
    out.text(b"held");
    out.int_or_nil(held);
    out.text(b"watchdog");
    out.int_or_nil(watchdog.map(|id| id as i64));
    crate::api::OK
}

/// A reply written piece by piece: maps are maps in RESP3, flat field/value arrays in RESP2.
pub struct Out(Ctx);

impl Out {
    /// # Safety
    /// `ctx` is the context of the command being replied to, live while `Out` is used.
    pub unsafe fn new(ctx: Ctx) -> Out {
        Out(ctx)
    }

    pub fn text(&self, text: &[u8]) {
        // SAFETY: `new`'s promise.
        unsafe { reply_text(self.0, text) };
    }

    pub fn int(&self, n: i64) {
        // SAFETY: `new`'s promise.
        unsafe { api!(RedisModule_ReplyWithLongLong)(self.0, n) };
    }

    pub fn int_or_nil(&self, n: Option<i64>) {
        // SAFETY: `new`'s promise.
        unsafe { reply_int_or_nil(self.0, n) };
    }

    /// A map of `pairs` field/value pairs follows.
    pub fn map(&self, pairs: usize) {
        // SAFETY: `new`'s promise.
        unsafe { api!(RedisModule_ReplyWithMap)(self.0, pairs as c_long) };
    }

    /// An array of `len` elements follows.
    pub fn array(&self, len: usize) {
        // SAFETY: `new`'s promise.
        unsafe { api!(RedisModule_ReplyWithArray)(self.0, len as c_long) };
    }
}

/// Parses the options with their bytes on the stack for the usual short argument lists.
pub fn with_bytes<'a, R>(args: &[RStr], parse: impl FnOnce(&[&'a [u8]]) -> R) -> R {
    let mut buf: [&[u8]; 10] = [&[]; 10];
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
    let no_block = raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING
        | raw::REDISMODULE_CTX_FLAGS_MULTI
        | raw::REDISMODULE_CTX_FLAGS_LUA
        | raw::REDISMODULE_CTX_FLAGS_REPLICATED;
    context_flags(ctx) & no_block == 0
}

/// The connection a `WATCHDOG` call binds to: the client itself, also inside MULTI. None
/// where there is no such connection to watch (a replicated or AOF command); scripts are
/// refused earlier, with an error.
pub fn watchdog_client(ctx: Ctx, watchdog: bool) -> Result<Option<u64>> {
    if !watchdog {
        return Ok(None);
    }
    let flags = context_flags(ctx);
    if flags & raw::REDISMODULE_CTX_FLAGS_LUA != 0 {
        return Err(Error::WatchdogInScript);
    }
    if flags & (raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING) != 0 {
        return Ok(None);
    }
    // SAFETY: `ctx` is the live context of the command.
    Ok(Some(unsafe { api!(RedisModule_GetClientId)(ctx) }))
}

/// What an acquire asks for, from its options: the lease (default `rlock.default-lease-ms`),
/// the connection to bind (`WATCHDOG`), the request id, the hold cap and the connection told
/// by message (`NOTIFY`).
pub fn request<'a>(ctx: Ctx, owner: RStr, o: &args::Options<'a>) -> Result<Request<'a>> {
    Ok(Request {
        owner,
        lease_ms: o.lease_ms.unwrap_or_else(config::default_lease_ms),
        bind_to: watchdog_client(ctx, o.watchdog)?,
        id: o.id,
        max_hold_ms: o.max_hold_ms,
        notify: notify_target(ctx, o.notify)?,
        by_message: false,
    })
}

/// The connection a `NOTIFY` call's messages go to, checked to be here and subscribed.
pub fn notify_target(ctx: Ctx, notify: Option<args::Notify>) -> Result<Option<u64>> {
    let client = match notify {
        None => return Ok(None),
        Some(args::Notify::Client(id)) => id,
        Some(args::Notify::Caller) => {
            if context_flags(ctx) & raw::REDISMODULE_CTX_FLAGS_LUA != 0 {
                return Err(Error::NotifyInScript);
            }
            // SAFETY: `ctx` is the live context of the command.
            unsafe { api!(RedisModule_GetClientId)(ctx) }
        }
    };
    notify::check_subscribed(ctx, client)?;
    Ok(Some(client))
}

/// A holding granted at once with `NOTIFY` is watched to its lease end, so that its owner
/// hears of a loss (a `DEL` is seen through keyspace events).
pub fn watch_for_loss(ctx: Ctx, request: &Request, (db, key): (i32, &[u8]), at: Option<i64>) {
    if request.notify.is_some() && crate::events::ensure_keyspace_subscription(ctx) {
        watch_lease(ctx, db, key, at);
    }
}

/// Replies a string.
///
/// # Safety
/// `ctx` is the context of the command being replied to.
pub unsafe fn reply_text(ctx: Ctx, text: &[u8]) {
    // SAFETY: as the caller promises.
    unsafe { api!(RedisModule_ReplyWithStringBuffer)(ctx, text.as_ptr().cast(), text.len()) };
}

/// Replies an integer, or nil.
///
/// # Safety
/// `ctx` is the context of the command being replied to.
pub unsafe fn reply_int_or_nil(ctx: Ctx, n: Option<i64>) -> c_int {
    // SAFETY: as the caller promises.
    unsafe {
        match n {
            Some(n) => api!(RedisModule_ReplyWithLongLong)(ctx, n),
            None => api!(RedisModule_ReplyWithNull)(ctx),
        }
    }
}

/// Opens a lock of `kind` for a write command, serving its queue first if the lock is free.
/// The other kind of lock, found or just handed to a waiter of that kind, is `WRONGTYPE`.
pub fn open_for_write(ctx: Ctx, key: RStr, kind: LockType) -> Result<(LockKey, i32)> {
    let mut lock = LockKey::open_as(ctx, key, true, kind)?;
    let db = selected_db(ctx);
    serve_queue_if_free(ctx, &mut lock, db);
    if lock.kind().is_some_and(|found| found != kind) {
        return Err(Error::WrongType);
    }
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

fn plain_holding(owner: &[u8], token: Option<i64>) -> grants::Holding<'_> {
    grants::Holding {
        kind: LockType::Plain,
        owner,
        token,
    }
}

/// The ids `owner`'s holding remembers, read once, only for a call with an id by the holder.
fn memory_for(lock: &LockKey, id: Option<&[u8]>, view: View) -> Option<Memory> {
    (id.is_some() && matches!(view, View::Mine { .. })).then(|| lock.ids())
}

/// `memory` with one more call remembered, encoded for the hash.
fn remembered(memory: Option<Memory>, kind: Kind, id: &[u8], value: i64) -> Vec<u8> {
    let mut memory = memory.unwrap_or_default();
    memory.remember(kind, id, value, now_ms(), config::retry_window_ms());
    memory.encode()
}

/// `RLOCK.ACQUIRE key owner [PX lease-ms] [WAIT timeout-ms] [WATCHDOG] [ID id] [MAXHOLD ms]`
fn acquire(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    args::owner(bytes(*owner))?;
    let o = with_bytes(options, args::acquire_options)?;
    let request = request(ctx, *owner, &o)?;
    let bind_to = request.bind_to;
    let (mut lock, db) = open_for_write(ctx, *key, LockType::Plain)?;
    let view = view(&lock, *owner)?;
    let mut memory = memory_for(&lock, o.id, view);
    if let (
        Some(id),
        Some(memory),
        View::Mine {
            token: Some(token), ..
        },
    ) = (o.id, &memory, view)
    {
        if memory.find(Kind::Acquire, id) == Some(token) {
            stats::RETRIES_ANSWERED.add();
            return Ok(Reply::Int(token));
        }
    }
    let decision = grants::with_token_clock(|clock, now_us| lock::acquire(view, clock, now_us));
    match decision {
        Acquire::Fresh { token } => {
            let expire_at = grant_fresh(&mut lock, db, &request, token);
            if bind_to.is_some() {
                arm_renewals(ctx);
            }
            watch_for_loss(ctx, &request, (db, bytes(*key)), Some(expire_at));
            Ok(Reply::Int(token))
        }
        Acquire::Reentry {
            holds,
            token,
            new_token,
        } => {
            let ids =
                o.id.map(|id| remembered(memory.take(), Kind::Acquire, id, token));
            let extra = Extra {
                token: new_token.then_some(token),
                ids: ids.as_deref(),
                cap: None,
            };
            lock.set_holds(*owner, holds, extra);
            let expire_at = lease_end(now_ms(), request.lease_ms, lock.cap());
            lock.set_expire_at(expire_at);
            if let Some(client) = bind_to {
                let holding = plain_holding(bytes(*owner), Some(token));
                if grants::bind_if_unbound(db, bytes(*key), holding, client, request.lease_ms, true)
                {
                    arm_renewals(ctx);
                }
            }
            watch_lease(ctx, db, bytes(*key), Some(expire_at));
            stats::REENTRIES.add();
            Ok(Reply::Int(token))
        }
        Acquire::Overflow => Err(Error::HoldsOverflow),
        Acquire::Busy => wait_or_nil(
            ctx,
            (db, bytes(*key)),
            o.wait,
            || Ask::new(Want::Lock, &request),
            || Ok(lock.expire_at()),
        ),
    }
}

/// A request found the lock taken by others: with `WAIT`, it joins the back of the queue with
/// `ask`, blocked where a client may block or told by message (`NOTIFY`), and the lease
/// ending at `watch_at` is watched; else nil. A `NOTIFY` retried with the same request id
/// takes over its entry.
pub fn wait_or_nil(
    ctx: Ctx,
    (db, key): (i32, &[u8]),
    wait: Option<args::Wait>,
    ask: impl FnOnce() -> Ask,
    watch_at: impl FnOnce() -> Result<Option<i64>>,
) -> Result<Reply> {
    stats::CONTENDED.add();
    let Some(wait) = wait else {
        return Ok(Reply::Null);
    };
    let ask = ask();
    if ask.notify().is_none() && !may_block(ctx) {
        return Ok(Reply::Null);
    }
    if !crate::events::ensure_keyspace_subscription(ctx) {
        return Err(Error::Internal);
    }
    let reply = match ask.notify() {
        Some(_) if !crate::events::ensure_unsubscribe_filter(ctx) => return Err(Error::Internal),
        Some(client) => {
            let owner = bytes(ask.owner.0);
            let retried = ask
                .id
                .as_deref()
                .is_some_and(|id| waiters::take_over(db, key, owner, id, client));
            if !retried {
                waiters::enqueue(ctx, db, key, ask, wait);
            }
            Reply::Waiting
        }
        None => {
            waiters::block(ctx, db, key, ask, wait)?;
            Reply::Blocked
        }
    };
    watch_lease(ctx, db, key, watch_at()?);
    Ok(reply)
}

/// `RLOCK.RELEASE key owner [ID request-id]`
fn release(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    args::owner(bytes(*owner))?;
    let o = with_bytes(options, args::release_options)?;
    let (mut lock, db) = open_for_write(ctx, *key, LockType::Plain)?;
    let call =
        o.id.map(|id| retries::release_call(db, bytes(*key), bytes(*owner), id));
    if let Some(call) = &call {
        if lifetime::with_released(|r| r.reply(call, now_ms()).is_some()) {
            stats::RETRIES_ANSWERED.add();
            return Ok(Reply::Int(0));
        }
    }
    let view = lock.view_without_token(*owner)?;
    let mut memory = memory_for(&lock, o.id, view);
    if let (Some(id), Some(memory)) = (o.id, &memory) {
        if let Some(remaining) = memory.find(Kind::Release, id) {
            stats::RETRIES_ANSWERED.add();
            return Ok(Reply::Int(remaining));
        }
    }
    match lock::release(view) {
        Release::NotHolder => Ok(Reply::Null),
        Release::Partial { remaining } => {
            let ids =
                o.id.map(|id| remembered(memory.take(), Kind::Release, id, remaining));
            let extra = Extra {
                ids: ids.as_deref(),
                ..Extra::default()
            };
            lock.set_holds(*owner, remaining, extra);
            Ok(Reply::Int(remaining))
        }
        Release::Full => {
            lock.delete();
            grants::released(db, bytes(*key), bytes(*owner));
            stats::RELEASES.add();
            if let Some(call) = call {
                let window = config::retry_window_ms();
                lifetime::with_released(|r| r.remember(&call, 0, now_ms(), window));
            }
            hand_over(ctx, &mut lock, db, LockType::Plain);
            Ok(Reply::Int(0))
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
    let lease_ms = o.lease_ms.unwrap_or_else(config::default_lease_ms);
    let (mut lock, db) = open_for_write(ctx, *key, LockType::Plain)?;
    let View::Mine { token, .. } = view(&lock, *owner)? else {
        return Ok(Reply::Int(0));
    };
    let expire_at = lease_end(now_ms(), lease_ms, lock.cap());
    lock.set_expire_at(expire_at);
    let name = bytes(*key);
    match bind_to {
        Some(client) => {
            grants::bind_or_confirm(
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
    let Some(holder) = lock.holder() else {
        return Ok(Reply::Null);
    };
    let now = now_ms();
    let ttl = lock.expire_at().map_or(-1, |at| (at - now).max(0));
    let db = selected_db(ctx);
    let waiters = waiters::count(db, bytes(*key));
    let held = holder.token.map(|token| lock::held_ms(token, now));
    let watchdog = lifetime::with_watchdog(|w| {
        w.get(db, bytes(*key), &holder.owner)
            .filter(|b| b.token == holder.token)
            .map(|b| b.client)
    });
    Ok(Reply::Info {
        holder,
        ttl,
        waiters,
        held,
        watchdog,
    })
}

macro_rules! entry_points {
    ($($entry:ident => $handler:ident),* $(,)?) => {
        $(pub extern "C" fn $entry(ctx: Ctx, argv: *mut RStr, argc: c_int) -> c_int {
            run(ctx, argv, argc, $handler)
        })*
    };
}
pub(crate) use entry_points;

entry_points!(
    acquire_command => acquire,
    release_command => release,
    renew_command => renew,
    force_release_command => force_release,
    info_command => info,
);
