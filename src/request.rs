//! What every family's commands share: the request an acquire makes (lease, watchdog
//! connection, request id, hold cap, `NOTIFY` receiver), opening a hash lock for a write
//! (serving its queue first), joining the queue (`wait_or_nil`), and answering a retried call
//! without an owner (`once`).

use crate::api::{api, bytes, context_flags, now_ms, selected_db, Ctx, RStr};
use crate::args;
use crate::config;
use crate::error::{Error, Result};
use crate::families::handover::serve_queue_if_free;
use crate::lifetime;
use crate::lifetime::retries::CallId;
use crate::notify;
use crate::own_writes::answered_again;
use crate::queue::{self, Ask, Request};
use crate::reply::Reply;
use crate::stats;
use crate::store::{LockKey, LockType};
use crate::subscriptions::{ensure_keyspace_subscription, ensure_unsubscribe_filter};
use crate::watch::watch_lease;
use redis_module::raw;

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
        lease_ms: lease_ms(o)?,
        bind_to: watchdog_client(ctx, o.watchdog)?,
        id: o.id,
        max_hold_ms: o.max_hold_ms,
        lock_delay_ms: o.lock_delay_ms,
        each: o.each,
        notify: notify_target(ctx, o.notify)?,
        by_message: false,
    })
}

/// The lease an acquire or a renewal asks for (`PX`, else `rlock.default-lease-ms`): any that
/// `SET ... PX` would take now.
pub fn lease_ms(o: &args::Options) -> Result<i64> {
    match o.lease_ms {
        Some(ms) => args::lease_within(ms, crate::api::now_ms()),
        None => Ok(config::default_lease_ms()),
    }
}

/// The connection a `NOTIFY` call's messages go to, checked to be the caller's to tell, here
/// and subscribed.
pub fn notify_target(ctx: Ctx, notify: Option<args::Notify>) -> Result<Option<u64>> {
    let client = match notify {
        None => return Ok(None),
        Some(args::Notify::Client(id)) => {
            notify::check_permitted(ctx, id)?;
            id
        }
        Some(args::Notify::Caller) => {
            if context_flags(ctx) & raw::REDISMODULE_CTX_FLAGS_LUA != 0 {
                return Err(Error::NotifyInScript);
            }
            // SAFETY: `ctx` is the live context of the command.
            unsafe { api!(RedisModule_GetClientId)(ctx) }
        }
    };
    // The filter that forgets a connection's subscription must be in place before it is
    // remembered.
    notify::check_listening(ctx, client, ensure_unsubscribe_filter(ctx))?;
    Ok(Some(client))
}

/// Opens a lock of `kind` for a write command, serving its queue first if the lock is free.
/// The other kind of lock, found or just handed to a waiter of that kind, is `WRONGTYPE`.
pub fn open_for_write(ctx: Ctx, key: RStr, kind: LockType) -> Result<(LockKey, i32)> {
    let mut lock = LockKey::open_as(ctx, key, true, kind)?;
    let db = selected_db(ctx);
    // A lock found taken was of `kind` (`open_as`) and is not served: its kind is asked again
    // (a hash read) only where a waiter of either kind may just have been handed it.
    if lock.is_free() {
        serve_queue_if_free(ctx, &mut lock, db);
        if lock.kind().is_some_and(|found| found != kind) {
            return Err(Error::WrongType);
        }
    }
    Ok((lock, db))
}

/// A request found the lock taken by others: with `WAIT`, it joins the back of the queue with
/// `ask`, blocked where a client may block or told by message (`NOTIFY`), and the lease
/// ending at `watch_at` is watched; else nil. A call retried with the same request id while
/// its first call waits takes over its entry (`queue::take_over`), blocked or by message.
pub fn wait_or_nil(
    ctx: Ctx,
    (db, key): (i32, &[u8]),
    wait: Option<args::Wait>,
    ask: impl FnOnce() -> Ask,
    watch_at: impl FnOnce() -> Result<Option<i64>>,
) -> Result<Reply> {
    let watch_at = || watch_at().map(std::iter::once);
    wait_all_or_nil(ctx, (db, &[key]), wait, ask, watch_at)
}

/// `wait_or_nil` for a request for all of `keys` at once: one place in each key's queue, taken
/// in one step; `watch_at` gives each key's lease end, in the same order.
pub fn wait_all_or_nil<W>(
    ctx: Ctx,
    (db, keys): (i32, &[&[u8]]),
    wait: Option<args::Wait>,
    ask: impl FnOnce() -> Ask,
    watch_at: impl FnOnce() -> Result<W>,
) -> Result<Reply>
where
    W: IntoIterator<Item = Option<i64>>,
{
    stats::CONTENDED.add();
    let (Some(wait), false) = (wait, keys.is_empty()) else {
        return Ok(Reply::Null);
    };
    let ask = ask();
    if ask.notify().is_none() && !may_block(ctx) {
        return Ok(Reply::Null);
    }
    if !ensure_keyspace_subscription(ctx) {
        return Err(Error::Internal);
    }
    if ask.notify().is_some() && !ensure_unsubscribe_filter(ctx) {
        return Err(Error::Internal);
    }
    let retried = queue::take_over(ctx, db, keys, &ask, wait)?;
    if !retried {
        let owner = bytes(ask.owner.0);
        for key in keys {
            crate::deadlock::check(ctx, (db, key), ask.want, owner)?;
        }
    }
    let reply = match ask.notify() {
        Some(_) => {
            if !retried {
                queue::enqueue(ctx, db, keys, ask, wait);
            }
            Reply::Waiting
        }
        None => {
            if !retried {
                queue::block(ctx, db, keys, ask, wait)?;
            }
            Reply::Blocked
        }
    };
    for (key, at) in keys.iter().zip(watch_at()?) {
        watch_lease(ctx, db, key, at);
    }
    Ok(reply)
}

/// A call with request id `call` (`retries::release_call` of its db, key, a reserved slot
/// naming the command, and the id) that no holding can remember (a count changed, several
/// owners released): within the retry window, the reply its first run gave; else `apply` runs
/// and its reply is remembered. An error is not remembered: it changed nothing.
pub fn once(ctx: Ctx, call: Option<CallId>, apply: impl FnOnce() -> Result<i64>) -> Result<i64> {
    let now = now_ms();
    if let Some(reply) = call
        .as_ref()
        .and_then(|c| lifetime::with_released(|r| r.reply(c, now)))
    {
        answered_again(ctx);
        return Ok(reply);
    }
    let reply = apply()?;
    if let Some(call) = call {
        let window = config::retry_window_ms();
        lifetime::with_released(|r| r.remember(call, reply, now, window));
    }
    Ok(reply)
}
