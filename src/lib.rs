//! rlock: a native reentrant, fair, fenced lock for Redis. This file only registers things.

mod api;
mod args;
mod commands;
mod config;
mod counter;
mod docs;
mod error;
mod events;
mod grants;
mod heap;
mod info;
mod latch;
mod lifetime;
mod lock;
mod notify;
mod queuecommands;
mod rwcommands;
mod rwlock;
mod rwstore;
mod scan;
mod scan_args;
mod semaphore;
mod semcommands;
mod semstore;
mod sidekeys;
mod stats;
mod store;
mod upkeep;
mod waiters;

use redis_module::{redis_module, Context, RedisString, Status};
use std::ffi::CString;

/// firstkey, lastkey, keystep: the one key at argv[1], or none.
type Keys = (i32, i32, i32);
const KEY_1: Keys = (1, 1, 1);
const NO_KEY: Keys = (0, 0, 0);

/// (name, handler, flags, key positions).
const COMMANDS: [(&str, redis_module::raw::RedisModuleCmdFunc, &str, Keys); 23] = [
    (
        "rlock.acquire",
        Some(commands::acquire_command),
        "write deny-oom",
        KEY_1,
    ),
    (
        "rlock.release",
        Some(commands::release_command),
        "write",
        KEY_1,
    ),
    ("rlock.renew", Some(commands::renew_command), "write", KEY_1),
    (
        "rlock.forcerelease",
        Some(commands::force_release_command),
        "write",
        KEY_1,
    ),
    (
        "rlock.info",
        Some(commands::info_command),
        "readonly fast",
        KEY_1,
    ),
    ("rlock.scan", Some(scan::scan_command), "readonly", NO_KEY),
    (
        "rlock.cancel",
        Some(queuecommands::cancel_command),
        "fast",
        KEY_1,
    ),
    (
        "rlock.channel",
        Some(queuecommands::channel_command),
        "fast",
        NO_KEY,
    ),
    (
        "rwlock.acquire",
        Some(rwcommands::acquire_command),
        "write deny-oom",
        KEY_1,
    ),
    (
        "rwlock.release",
        Some(rwcommands::release_command),
        "write",
        KEY_1,
    ),
    (
        "rwlock.renew",
        Some(rwcommands::renew_command),
        "write",
        KEY_1,
    ),
    (
        "rwlock.forcerelease",
        Some(rwcommands::force_release_command),
        "write",
        KEY_1,
    ),
    (
        "rwlock.info",
        Some(rwcommands::info_command),
        "readonly",
        KEY_1,
    ),
    (
        "rlatch.set",
        Some(latch::set_command),
        "write deny-oom",
        KEY_1,
    ),
    (
        "rlatch.countdown",
        Some(latch::countdown_command),
        "write",
        KEY_1,
    ),
    (
        "rlatch.await",
        Some(latch::await_command),
        "readonly",
        KEY_1,
    ),
    (
        "rlatch.count",
        Some(latch::count_command),
        "readonly fast",
        KEY_1,
    ),
    (
        "rsem.acquire",
        Some(semcommands::acquire_command),
        "write deny-oom",
        KEY_1,
    ),
    (
        "rsem.release",
        Some(semcommands::release_command),
        "write",
        KEY_1,
    ),
    (
        "rsem.renew",
        Some(semcommands::renew_command),
        "write",
        KEY_1,
    ),
    (
        "rsem.setpermits",
        Some(semcommands::set_permits_command),
        "write deny-oom",
        KEY_1,
    ),
    (
        "rsem.addpermits",
        Some(semcommands::add_permits_command),
        "write deny-oom",
        KEY_1,
    ),
    (
        "rsem.info",
        Some(semcommands::info_command),
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
        waiters::on_departure(upkeep::serve_again);
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

redis_module! {
    name: "rlock",
    version: 1,
    allocator: (Allocator, ALLOCATOR),
    data_types: [],
    init: init,
}
