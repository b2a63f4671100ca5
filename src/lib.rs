//! rlock: a native reentrant, fair, fenced lock for Redis. This file only registers things.

mod acl;
mod api;
mod args;
mod clock;
mod config;
mod counter;
mod deadlock;
mod docs;
mod error;
mod events;
mod families;
mod heap;
mod holdings;
mod info;
mod kinds;
mod lifetime;
mod notify;
mod queue;
mod reentry;
mod reply;
mod request;
mod scan;
mod stats;
mod store;
mod upkeep;

use families::{latch, lock, rwlock, semaphore};
use redis_module::{redis_module, Context, RedisString, Status};
use std::ffi::CString;

/// firstkey, lastkey, keystep: the one key at argv[1], or none.
type Keys = (i32, i32, i32);
const KEY_1: Keys = (1, 1, 1);
const NO_KEY: Keys = (0, 0, 0);

/// (name, handler, flags, key positions).
const COMMANDS: [(&str, redis_module::raw::RedisModuleCmdFunc, &str, Keys); 27] = [
    (
        "rlock.acquire",
        Some(lock::commands::acquire_command),
        "write deny-oom",
        KEY_1,
    ),
    // Their keys are `numkeys key [key ...]`: a key spec (docs.rs) and the module's key
    // extraction (all.rs) say so to Redis.
    (
        "rlock.acquireall",
        Some(lock::all::acquire_all_command),
        "write deny-oom getkeys-api",
        NO_KEY,
    ),
    (
        "rlock.releaseall",
        Some(lock::all::release_all_command),
        "write getkeys-api",
        NO_KEY,
    ),
    (
        "rlock.release",
        Some(lock::commands::release_command),
        "write",
        KEY_1,
    ),
    (
        "rlock.renew",
        Some(lock::commands::renew_command),
        "write",
        KEY_1,
    ),
    (
        "rlock.forcerelease",
        Some(lock::commands::force_release_command),
        "write",
        KEY_1,
    ),
    (
        "rlock.info",
        Some(lock::commands::info_command),
        "readonly fast",
        KEY_1,
    ),
    ("rlock.scan", Some(scan::scan_command), "readonly", NO_KEY),
    (
        "rlock.leader",
        Some(lock::commands::leader_command),
        "readonly fast",
        KEY_1,
    ),
    (
        "rlock.guard",
        Some(lock::guard::guard_command),
        "write deny-oom getkeys-api",
        KEY_1,
    ),
    (
        "rlock.cancel",
        Some(queue::commands::cancel_command),
        "fast",
        KEY_1,
    ),
    (
        "rlock.channel",
        Some(queue::commands::channel_command),
        "fast",
        NO_KEY,
    ),
    (
        "rwlock.acquire",
        Some(rwlock::commands::acquire_command),
        "write deny-oom",
        KEY_1,
    ),
    (
        "rwlock.release",
        Some(rwlock::commands::release_command),
        "write",
        KEY_1,
    ),
    (
        "rwlock.renew",
        Some(rwlock::commands::renew_command),
        "write",
        KEY_1,
    ),
    (
        "rwlock.forcerelease",
        Some(rwlock::commands::force_release_command),
        "write",
        KEY_1,
    ),
    (
        "rwlock.info",
        Some(rwlock::commands::info_command),
        "readonly",
        KEY_1,
    ),
    (
        "rlatch.set",
        Some(latch::commands::set_command),
        "write deny-oom",
        KEY_1,
    ),
    (
        "rlatch.countdown",
        Some(latch::commands::countdown_command),
        "write",
        KEY_1,
    ),
    (
        "rlatch.await",
        Some(latch::commands::await_command),
        "readonly",
        KEY_1,
    ),
    (
        "rlatch.count",
        Some(latch::commands::count_command),
        "readonly fast",
        KEY_1,
    ),
    (
        "rsem.acquire",
        Some(semaphore::commands::acquire_command),
        "write deny-oom",
        KEY_1,
    ),
    (
        "rsem.release",
        Some(semaphore::commands::release_command),
        "write",
        KEY_1,
    ),
    (
        "rsem.renew",
        Some(semaphore::commands::renew_command),
        "write",
        KEY_1,
    ),
    (
        "rsem.setpermits",
        Some(semaphore::commands::set_permits_command),
        "write deny-oom",
        KEY_1,
    ),
    (
        "rsem.addpermits",
        Some(semaphore::commands::add_permits_command),
        "write deny-oom",
        KEY_1,
    ),
    (
        "rsem.info",
        Some(semaphore::commands::info_command),
        "readonly",
        KEY_1,
    ),
];

fn register_commands(ctx: &Context) -> Result<(), String> {
    for (name, handler, flags, (first, last, step)) in COMMANDS {
        let (c_name, c_flags) = (CString::new(name), CString::new(flags));
        let (Ok(c_name), Ok(c_flags)) = (c_name, c_flags) else {
            return Err(format!("bad command name {name}"));
        };
        // SAFETY: called from OnLoad; Redis copies the name and flags.
        let status = unsafe {
            api::api!(RedisModule_CreateCommand)(
                ctx.ctx,
                c_name.as_ptr(),
                handler,
                c_flags.as_ptr(),
                first,
                last,
                step,
            )
        };
        if status != api::OK {
            return Err(format!("could not create command {name}"));
        }
    }
    Ok(())
}

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    let loaded = (|| {
        if let Some(name) = api::first_missing() {
            return Err(format!(
                "this server lacks {name}; rlock needs Redis 7.0 or newer"
            ));
        }
        store::init();
        lock::store::init();
        queue::on_departure(upkeep::serve_again);
        notify::init(ctx.ctx);
        config::register(ctx, args)?;
        register_commands(ctx)?;
        docs::register(ctx.ctx)?;
        info::register(ctx.ctx)?;
        config::warn_unless_noeviction(ctx);
        // Last: nothing may fail once events are subscribed.
        if !events::subscribe_server_events(ctx.ctx) {
            return Err("could not subscribe to server events".into());
        }
        Ok(())
    })();
    match loaded {
        Ok(()) => Status::Ok,
        Err(why) => {
            ctx.log_warning(&format!("rlock: not loaded: {why}"));
            Status::Err
        }
    }
}

#[cfg(not(test))]
type Allocator = heap::Counting<redis_module::alloc::RedisAlloc>;
#[cfg(not(test))]
const ALLOCATOR: Allocator = heap::Counting(redis_module::alloc::RedisAlloc);
// Unit tests run outside Redis, where its allocator does not exist.
#[cfg(test)]
type Allocator = std::alloc::System;
#[cfg(test)]
const ALLOCATOR: Allocator = std::alloc::System;

/// `MODULE LIST`'s `ver`: the crate version as major*10000 + minor*100 + patch (0.1.0 is 100),
/// Redis modules' usual encoding.
const MODULE_VERSION: i32 = info::MODULE_VERSION;

redis_module! {
    name: "rlock",
    version: MODULE_VERSION,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    init: init,
}
