//! Server events, subscribed at load: a flush or `SWAPDB` frees locks behind the module's back
//! (they only note the keys: upkeep looks at them from a timer), a closed connection ends its
//! watchdog holdings, and a master turned replica drops its own. The events subscribed to on
//! first need (keyspace, string, `UNSUBSCRIBE`) are `subscriptions`'.

use crate::api::{api, guarded, is_writable_master, Ctx, OK};
use crate::lifetime;
use crate::queue;
use crate::upkeep;
use crate::watch;
use redis_module::raw;
use std::os::raw::c_void;

/// Subscribes to flush, client-change and role-change events. Call last in OnLoad: nothing
/// may fail after it (a module that fails to load keeps its subscriptions on 7.0, and the next
/// event would crash the server).
pub fn subscribe_server_events(ctx: Ctx) -> bool {
    let events: [(u64, raw::RedisModuleEventCallback); 4] = [
        (raw::REDISMODULE_EVENT_FLUSHDB as u64, Some(on_flush)),
        (raw::REDISMODULE_EVENT_SWAPDB as u64, Some(on_swapdb)),
        (
            raw::REDISMODULE_EVENT_CLIENT_CHANGE as u64,
            Some(on_client_change),
        ),
        (
            raw::REDISMODULE_EVENT_REPLICATION_ROLE_CHANGED as u64,
            Some(on_role_change),
        ),
    ];
    events.into_iter().all(|(id, callback)| {
        let event = raw::RedisModuleEvent { id, dataver: 1 };
        // SAFETY: called from OnLoad with the load context; callbacks live as long as the module.
        unsafe { api!(RedisModule_SubscribeToServerEvent)(ctx, event, callback) == OK }
    })
}

/// A connection closed: the watchdog holdings bound to it end, and it is no longer known to
/// listen on its channel (nor anyone else, if it was subscribed: it may have been the
/// subscriber another connection's check counted).
extern "C" fn on_client_change(
    ctx: Ctx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    guarded("a client event", (), || {
        if subevent != raw::REDISMODULE_SUBEVENT_CLIENT_CHANGE_DISCONNECTED as u64 {
            return;
        }
        // SAFETY: client-change events carry a RedisModuleClientInfo (version 1).
        let info = unsafe { &*data.cast::<raw::RedisModuleClientInfo>() };
        let client = info.id;
        // Redis fires this event before it unsubscribes the connection.
        let subscribed = info.flags & raw::REDISMODULE_CLIENTINFO_FLAG_PUBSUB as u64 != 0;
        lifetime::with_listening(|l| l.closed(client, subscribed));
        // Asked of every connection: one that bound a holding keeps its (maybe empty) list of
        // bound holdings until now, and it goes here.
        upkeep::client_closed(ctx, client);
        if queue::is_receiver(client) {
            queue::receiver_closed(ctx, client);
        }
    })
}

extern "C" fn on_role_change(
    ctx: Ctx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    guarded("a role change", (), || {
        if subevent == raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_REPLICA as u64 {
            upkeep::turned_replica(ctx);
            crate::floor::learn_when_needed(ctx);
            // Redis unblocks the blocked waiters itself; the notified ones are told.
            queue::fail_notified(crate::error::Error::TurnedReplica);
        }
    })
}

/// `SWAPDB a b`: a waiter waits for its key in its own db, whatever that now holds (as Redis's
/// blocking commands do), so the queues of both dbs are looked at again: a key that is free
/// now goes to its first waiter at once.
extern "C" fn on_swapdb(ctx: Ctx, _event: raw::RedisModuleEvent, _sub: u64, data: *mut c_void) {
    guarded("a swapdb event", (), || {
        if !is_writable_master(ctx) {
            return;
        }
        // SAFETY: SwapDB events carry a RedisModuleSwapDbInfo.
        let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
        let mut keys = Vec::new();
        for db in [info.dbnum_first, info.dbnum_second] {
            keys.extend(queue::queued_keys(Some(db)));
            keys.extend(lifetime::with_notices(|n| n.keys(Some(db))));
        }
        watch::schedule(ctx, keys.into_iter().map(|(db, key)| (db, key, false)), 0);
    })
}

extern "C" fn on_flush(ctx: Ctx, _event: raw::RedisModuleEvent, subevent: u64, data: *mut c_void) {
    guarded("a flush event", (), || {
        if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_END as u64 || !is_writable_master(ctx) {
            return;
        }
        // SAFETY: FlushDB events carry a RedisModuleFlushInfo.
        let dbnum = unsafe { (*data.cast::<raw::RedisModuleFlushInfo>()).dbnum };
        let db = (dbnum >= 0).then_some(dbnum);
        let mut keys = queue::queued_keys(db);
        keys.extend(lifetime::with_notices(|n| n.keys(db)));
        watch::schedule(ctx, keys.into_iter().map(|(db, key)| (db, key, false)), 0);
    })
}
