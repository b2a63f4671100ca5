//! Keyspace and server events that free a lock behind the module's back (lease expiry, DEL,
//! eviction, RENAME, FLUSHDB, an overwrite by another type) and the deferred checks that hand
//! such a lock to the next waiter.
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

#[derive(Default)]
struct Pending {
    keys: Vec<(i32, Rc<[u8]>)>,
    timer_armed: bool,
}

thread_local! {
    static PENDING: RefCell<Pending> = RefCell::default();
}

/// Subscribes to the events. Call last in OnLoad: nothing may fail after it (a module that
/// fails to load keeps its subscriptions on 7.0, and the next event would crash the server).
pub fn subscribe(ctx: Ctx) -> bool {
    let flush = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_FLUSHDB,
        dataver: 1,
    };
    let events = raw::REDISMODULE_NOTIFY_GENERIC
        | raw::REDISMODULE_NOTIFY_STRING
        | raw::REDISMODULE_NOTIFY_LIST
        | raw::REDISMODULE_NOTIFY_SET
        | raw::REDISMODULE_NOTIFY_HASH
        | raw::REDISMODULE_NOTIFY_ZSET
        | raw::REDISMODULE_NOTIFY_EXPIRED
        | raw::REDISMODULE_NOTIFY_EVICTED
        | raw::REDISMODULE_NOTIFY_STREAM;
    // SAFETY: called from OnLoad with the load context; the callbacks live as long as the module.
    unsafe {
        api!(RedisModule_SubscribeToServerEvent)(ctx, flush, Some(on_flush)) == OK
            && api!(RedisModule_SubscribeToKeyspaceEvents)(
                ctx,
                events as c_int,
                Some(on_keyspace_event),
            ) == OK
    }
}

extern "C" fn on_keyspace_event(ctx: Ctx, _type: c_int, _event: *const c_char, key: RStr) -> c_int {
    guarded("a keyspace event", OK, || {
        // Cheap exit first: this runs for every write on the server.
        if waiters::total() == 0 || !is_writable_master(ctx) {
            return OK;
        }
        let db = selected_db(ctx);
        let key = bytes(key);
        if waiters::count(db, key) > 0 {
            schedule(ctx, vec![(db, Rc::from(key))]);
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
        let keys = waiters::queued_keys((dbnum >= 0).then_some(dbnum));
        if !keys.is_empty() {
            schedule(ctx, keys);
        }
    })
}

fn schedule(ctx: Ctx, keys: Vec<(i32, Rc<[u8]>)>) {
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
        for (db, key) in keys {
            check(ctx, db, &key, false);
        }
    })
}

/// Looks at a lock that has waiters: free → the next waiter gets it; still held → watch its
/// lease; now another type → its waiters get WRONGTYPE.
pub fn check(ctx: Ctx, db: i32, key: &[u8], lease_timer: bool) {
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
            if grant_next(ctx, &mut lock, db) && lease_timer {
                stats::EXPIRY_WAKEUPS.add();
            }
        }
        Ok(lock) => waiters::watch_lease(ctx, db, key, lock.expire_at()),
    }
}
