//! Keyspace and server events that free a lock behind the module's back (lease expiry, DEL,
//! eviction, RENAME, FLUSHDB) and the deferred checks that hand such a lock to the next waiter
//! (or fail its waiters when the key now holds another type).
//!
//! Writes made inside a keyspace-event callback would replicate before the DEL that caused
//! the event, so the callback only notes the key; a 0 ms timer does the handoff afterwards.

use crate::api::{api, bytes, guarded, is_writable_master, Ctx, OwnedStr, RStr, OK};
use crate::grants::{grant_next, selected_db};
use crate::stats;
use crate::store::LockKey;
use crate::waiters;
use redis_module::raw;
use std::cell::RefCell;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr::null_mut;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Default)]
struct Pending {
    /// (db, key, whether the key expired).
    keys: Vec<(i32, Rc<[u8]>, bool)>,
    timer_armed: bool,
}

thread_local! {
    static PENDING: RefCell<Pending> = RefCell::default();
}

static KEYSPACE_SUBSCRIBED: AtomicBool = AtomicBool::new(false);

/// Subscribes to flush events. Call last in OnLoad: nothing may fail after it (a module that
/// fails to load keeps its subscriptions on 7.0, and the next event would crash the server).
pub fn subscribe_flush(ctx: Ctx) -> bool {
    let flush = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_FLUSHDB,
        dataver: 1,
    };
    // SAFETY: called from OnLoad with the load context; the callback lives as long as the module.
    unsafe { api!(RedisModule_SubscribeToServerEvent)(ctx, flush, Some(on_flush)) == OK }
}

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

extern "C" fn on_keyspace_event(ctx: Ctx, class: c_int, _event: *const c_char, key: RStr) -> c_int {
    guarded("a keyspace event", OK, || {
        // Cheap exit first: this runs for every write on the server.
        if waiters::total() == 0 || !is_writable_master(ctx) {
            return OK;
        }
        let db = selected_db(ctx);
        let key = bytes(key);
        if waiters::count(db, key) > 0 {
            let expired = class & raw::REDISMODULE_NOTIFY_EXPIRED != 0;
            schedule(ctx, vec![(db, Rc::from(key), expired)]);
        }
        OK
    })
}

extern "C" fn on_flush(ctx: Ctx, _event: raw::RedisModuleEvent, subevent: u64, data: *mut c_void) {
    guarded("a flush event", (), || {
        if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_END as u64 || !is_writable_master(ctx) {
            return;
        }
        // SAFETY: FlushDB events carry a RedisModuleFlushInfo.
        let dbnum = unsafe { (*data.cast::<raw::RedisModuleFlushInfo>()).dbnum };
        let keys: Vec<_> = waiters::queued_keys((dbnum >= 0).then_some(dbnum))
            .into_iter()
            .map(|(db, key)| (db, key, false))
            .collect();
        if !keys.is_empty() {
            schedule(ctx, keys);
        }
    })
}

fn schedule(ctx: Ctx, keys: Vec<(i32, Rc<[u8]>, bool)>) {
    let arm = PENDING.with(|p| {
        let mut p = p.borrow_mut();
        p.keys.extend(keys);
        !std::mem::replace(&mut p.timer_armed, true)
    });
    if arm {
        // SAFETY: `ctx` is live; the timer carries no data.
        unsafe { api!(RedisModule_CreateTimer)(ctx, 0, Some(on_pending_timer), null_mut()) };
    }
}

extern "C" fn on_pending_timer(ctx: Ctx, _data: *mut c_void) {
    guarded("the deferred handoff", (), || {
        let keys = PENDING.with(|p| {
            let mut p = p.borrow_mut();
            p.timer_armed = false;
            std::mem::take(&mut p.keys)
        });
        for (db, key, expired) in keys {
            check(ctx, db, &key, expired);
        }
    })
}

/// Looks at a lock that has waiters: free → the next waiter gets it; still held → watch its
/// lease; now another type → its waiters get WRONGTYPE. `expired` says a lease end led here:
/// the lease timer fired or Redis reported the key expired.
pub fn check(ctx: Ctx, db: i32, key: &[u8], expired: bool) {
    if waiters::count(db, key) == 0 || !is_writable_master(ctx) {
        return;
    }
    // SAFETY: `ctx` is a timer context, whose client we may point at any db.
    unsafe { api!(RedisModule_SelectDb)(ctx, db) };
    let name = OwnedStr::new(key);
    // Opening the key lets Redis expire it first (and replicate that DEL before our writes).
    match LockKey::open(ctx, name.0, true) {
        Err(_) => waiters::fail_all(ctx, db, key),
        Ok(mut lock) if lock.is_free() => {
            if grant_next(ctx, &mut lock, db) && expired {
                stats::EXPIRY_WAKEUPS.add();
            }
        }
        Ok(lock) => waiters::watch_lease(ctx, db, key, lock.expire_at()),
    }
}
