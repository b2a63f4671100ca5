//! The events the module subscribes to only once a client needs them, so that a server that
//! never queues a waiter never pays for them: keyspace events (a key gone or its TTL changed),
//! string events (a Redisson client's `INCRBY` on a semaphore's counter), and a command filter
//! for `UNSUBSCRIBE` and `RESET`. Their callbacks only note the key; upkeep looks at it from a
//! timer (`watch`).

use crate::api::{api, bytes, guarded, is_writable_master, selected_db, Ctx, RStr, OK};
use crate::lifetime;
use crate::lifetime::listening::may_unsubscribe;
use crate::queue;
use crate::queue::Request;
use crate::watch;
use redis_module::raw;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr::null_mut;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A holding granted at once with `NOTIFY` is watched to its lease end, so that its owner
/// hears of a loss (a `DEL` is seen through keyspace events).
pub fn watch_for_loss(ctx: Ctx, request: &Request, (db, key): (i32, &[u8]), at: Option<i64>) {
    if request.notify.is_some() && ensure_keyspace_subscription(ctx) {
        watch::watch_lease(ctx, db, key, at);
    }
}

/// `watch_for_loss` for a fresh holding of a plain lock, whose notice `tell_loss` has just
/// noted (it notes one for every holding granted with `NOTIFY` and a token), under the copy
/// of the key made then (`made`).
pub fn watch_fresh_for_loss(
    ctx: Ctx,
    request: &Request,
    (db, key): (i32, &[u8]),
    (made, at): (Option<Rc<[u8]>>, Option<i64>),
) {
    if request.notify.is_some() && ensure_keyspace_subscription(ctx) {
        watch::watch_noticed_lease(ctx, (db, key), made, at);
    }
}

static KEYSPACE_SUBSCRIBED: AtomicBool = AtomicBool::new(false);

/// Subscribes to keyspace events when the first client is about to wait: a server that never
/// queues a waiter never pays for them (Redis 7.0 has no way to unsubscribe later).
pub fn ensure_keyspace_subscription(ctx: Ctx) -> bool {
    if KEYSPACE_SUBSCRIBED.load(Ordering::Relaxed) {
        return true;
    }
    // Only the classes that mean "the key is gone or its TTL changed": Redis builds a module
    // context for every event of a subscribed class on every write, so each class costs all
    // clients of the server. An overwrite by another type is caught when the lease timer,
    // armed at the old lease end, looks at the key.
    let events = raw::REDISMODULE_NOTIFY_GENERIC
        | raw::REDISMODULE_NOTIFY_EXPIRED
        | raw::REDISMODULE_NOTIFY_EVICTED;
    // SAFETY: `ctx` is live; the callback lives as long as the module.
    let subscribed = unsafe {
        api!(RedisModule_SubscribeToKeyspaceEvents)(ctx, events, Some(on_keyspace_event))
    } == OK;
    KEYSPACE_SUBSCRIBED.store(subscribed, Ordering::Relaxed);
    subscribed
}

static STRING_SUBSCRIBED: AtomicBool = AtomicBool::new(false);

/// Subscribes to string events when the first client waits for semaphore permits: a Redisson
/// client's release is an `INCRBY` on the counter, which must serve the queue at once. Every
/// string write of the server then raises an event (a cheap exit while nobody waits), so only
/// servers that queue semaphore waiters pay for it.
pub fn ensure_string_subscription(ctx: Ctx) -> bool {
    subscribe_once(
        ctx,
        &STRING_SUBSCRIBED,
        raw::REDISMODULE_NOTIFY_STRING,
        on_keyspace_event,
    )
}

/// Subscribes `callback` to the keyspace event classes `events` unless `done` says it was:
/// Redis 7.0 cannot unsubscribe, so each subscription is made once, for good.
pub fn subscribe_once(
    ctx: Ctx,
    done: &AtomicBool,
    events: c_int,
    callback: KeyspaceCallback,
) -> bool {
    if done.load(Ordering::Relaxed) {
        return true;
    }
    // SAFETY: `ctx` is live; the callback lives as long as the module.
    let subscribed =
        unsafe { api!(RedisModule_SubscribeToKeyspaceEvents)(ctx, events, Some(callback)) } == OK;
    done.store(subscribed, Ordering::Relaxed);
    subscribed
}

pub type KeyspaceCallback = extern "C" fn(Ctx, c_int, *const c_char, RStr) -> c_int;

extern "C" fn on_keyspace_event(ctx: Ctx, class: c_int, _event: *const c_char, key: RStr) -> c_int {
    guarded("a keyspace event", OK, || {
        // Cheap exit first: this runs for every write on the server.
        let nothing_watched = queue::total() == 0 && lifetime::with_notices(|n| n.len() == 0);
        if nothing_watched || crate::own_writes::writing() || !is_writable_master(ctx) {
            return OK;
        }
        let db = selected_db(ctx);
        let key = bytes(key);
        if queue::count(db, key) > 0 || watch::noticed(db, key) {
            let expired = class & raw::REDISMODULE_NOTIFY_EXPIRED != 0;
            watch::schedule(ctx, [(db, Rc::from(key), expired)], 0);
        }
        OK
    })
}

static UNSUBSCRIBE_FILTER: AtomicBool = AtomicBool::new(false);
static SWEEP_PENDING: AtomicBool = AtomicBool::new(false);

/// Watches for `UNSUBSCRIBE` and `RESET` once the first client calls with `NOTIFY`: a waiter
/// whose connection stops listening must leave its queue at once, not keep those behind it
/// out until its turn, and a connection remembered as listening (`lifetime::listening`) is
/// forgotten before such a command runs. Redis has no event for it, so a command filter looks
/// at every command's name (a cheap exit while nobody waits by message and nothing is
/// remembered); servers that never see `NOTIFY` pay nothing.
pub fn ensure_unsubscribe_filter(ctx: Ctx) -> bool {
    if UNSUBSCRIBE_FILTER.load(Ordering::Relaxed) {
        return true;
    }
    // SAFETY: `ctx` is live; the filter lives as long as the module.
    let registered =
        !unsafe { api!(RedisModule_RegisterCommandFilter)(ctx, Some(on_command), 0) }.is_null();
    UNSUBSCRIBE_FILTER.store(registered, Ordering::Relaxed);
    registered
}

extern "C" fn on_command(filter: *mut raw::RedisModuleCommandFilterCtx) {
    guarded("the unsubscribe filter", (), || {
        // This runs before every command of the server: the name is looked at only while a
        // connection is remembered or anyone waits by message, and the queue only once the
        // name is one that may unsubscribe.
        let remembered = lifetime::any_listening();
        if !remembered && queue::notified() == 0 {
            return;
        }
        // SAFETY: the filter context is live for this call; argument 0 is the command name.
        let name = unsafe {
            if api!(RedisModule_CommandFilterArgsCount)(filter) < 1 {
                return;
            }
            bytes(api!(RedisModule_CommandFilterArgGet)(filter, 0))
        };
        if !may_unsubscribe(name) {
            return;
        }
        if remembered {
            // Before the command runs: nothing runs between this filter and the command but
            // the command itself, so no check can find the connection still subscribed.
            lifetime::with_listening(|l| l.forget_all());
        }
        let sweep = queue::notified() > 0 && !SWEEP_PENDING.load(Ordering::Relaxed);
        if sweep
            && (name.eq_ignore_ascii_case(b"unsubscribe") || name.eq_ignore_ascii_case(b"reset"))
        {
            SWEEP_PENDING.store(true, Ordering::Relaxed);
            // The filter runs before the command: look once it has run, on the next turn.
            // SAFETY: a callback with no data, run on the main thread.
            unsafe { api!(RedisModule_EventLoopAddOneShot)(Some(on_unsubscribed), null_mut()) };
        }
    })
}

extern "C" fn on_unsubscribed(_data: *mut c_void) {
    guarded("an unsubscribe", (), || {
        SWEEP_PENDING.store(false, Ordering::Relaxed);
        let ctx = crate::notify::own_ctx();
        if !ctx.is_null() && is_writable_master(ctx) {
            queue::unsubscribed(ctx);
        }
    })
}
