//! rlock: a native reentrant, fair, fenced lock for Redis. This file only registers things.

mod acl;
mod api;
mod args;
mod clock;
mod command;
mod config;
mod counter;
mod deadlock;
mod error;
mod events;
mod families;
mod floor;
mod heap;
mod holdings;
mod info;
mod kinds;
mod lifetime;
mod notify;
mod numbers;
mod own_writes;
mod queue;
mod reentry;
mod reply;
mod request;
mod scan;
mod stats;
mod store;
mod subscriptions;
mod upkeep;
mod watch;

use command::Command;
use redis_module::{redis_module, Context, RedisString, Status};

fn init(ctx: &Context, args: &[RedisString]) -> Status {
    let loaded = (|| {
        if let Some(name) = api::first_missing() {
            return Err(format!(
                "this server lacks {name}; rlock needs Redis 7.0 or newer"
            ));
        }
        store::init();
        families::load();
        queue::on_departure(watch::serve_again);
        watch::on_due(upkeep::DUE);
        notify::init(ctx.ctx);
        config::register(ctx, args)?;
        // Every command, by family (each table names, registers and documents its commands).
        let commands: Vec<&[Command]> = (families::COMMANDS.iter().copied())
            .chain([command::common::COMMANDS])
            .collect();
        command::create(ctx.ctx, &commands)?;
        command::document(ctx.ctx, &commands)?;
        info::register(ctx.ctx)?;
        config::warn_unless_noeviction(ctx);
        if !floor::learn_when_needed(ctx.ctx) {
            return Err("could not subscribe to hash events".into());
        }
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
