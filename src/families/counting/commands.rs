//! The RCSEM commands, one per method of Redisson's `RSemaphore`: permits that belong to
//! nobody once taken, on Redisson's string counter at the key, with Redisson's message (the
//! new count on `redisson_sc:{key}`) when permits are added, so Redisson's own clients can
//! share the semaphore. Waiters queue in the shared queue with the word `counting`.

use crate::api::{bytes, now_ms, selected_db, Ctx, OwnedStr, RStr};
use crate::args;
use crate::config;
use crate::counter::{self, semaphore_channel};
use crate::error::{Error, Result};
use crate::holdings::publish;
use crate::kinds::{permits_fit, Want};
use crate::lifetime;
use crate::queue::{self, Ask, Request};
use crate::reply::{run, with_bytes, Reply};
use crate::request::{notify_target, wait_or_nil};
use crate::stats;
use crate::subscriptions::ensure_string_subscription;
use std::os::raw::c_int;

use super::rules::{added, drained, remembered_call, Call, COUNTING};
use super::serve::{serve, take};

/// The reply a call with this request id got, if it was made within the retry window.
fn answered_before(db: i32, key: &[u8], call: Call, id: Option<&[u8]>) -> Option<i64> {
    let call = remembered_call(db, key, call, id?);
    let reply = lifetime::with_released(|r| r.reply(&call, now_ms()))?;
    stats::RETRIES_ANSWERED.add();
    Some(reply)
}

/// `RCSEM.ACQUIRE key [PERMITS n] [WAIT timeout-ms [NOTIFY [client-id]]] [ID request-id]`:
/// the permits taken (n, default 1), or nil when not granted. A waiter is known in the queue
/// by its request id (`RLOCK.CANCEL key <request-id>`; without one, `""` from its connection).
fn acquire(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let o = with_bytes(options, args::counting_acquire_options)?;
    let wanted = o.permits.unwrap_or(1);
    let notify = notify_target(ctx, o.notify)?;
    let (db, name) = (selected_db(ctx), bytes(*key));
    if let Some(granted) = answered_before(db, name, Call::Acquire, o.id) {
        return Ok(Reply::Int(granted));
    }
    let available = counter::get(ctx, *key)?.unwrap_or(0);
    if permits_fit(available, wanted, queue::count(db, name) > 0) {
        take(ctx, (db, *key), wanted, o.id)?;
        return Ok(Reply::Int(wanted));
    }
    // A Redisson client's release is an INCRBY on the counter: it must serve this queue.
    if o.wait.is_some() && !ensure_string_subscription(ctx) {
        return Err(Error::Internal);
    }
    let known_as = OwnedStr::new(o.id.unwrap_or_default());
    let request = Request {
        owner: known_as.0,
        lease_ms: 0,
        bind_to: None,
        id: o.id,
        max_hold_ms: None,
        lock_delay_ms: None,
        each: false,
        notify,
        by_message: false,
    };
    let ask = || Ask::new(Want::of(COUNTING, wanted), &request);
    wait_or_nil(ctx, (db, name), o.wait, ask, || Ok(None))
}

/// Adds `n` permits (negative: removes them) and tells Redisson's waiters the new count, as
/// Redisson's release does; then the queue takes what fits. Returns what is left.
fn add_and_serve(ctx: Ctx, key: RStr, n: i64) -> Result<i64> {
    added(counter::get(ctx, key)?.unwrap_or(0), n)?;
    let count = counter::add(ctx, key, n)?;
    publish(
        ctx,
        &semaphore_channel(bytes(key)),
        count.to_string().as_bytes(),
    );
    Ok(serve(ctx, selected_db(ctx), key, count))
}

/// `RCSEM.RELEASE key [PERMITS n] [ID request-id]`: adds `n` permits (default 1), whoever
/// took them, beyond any number taken; replies the permits available once the queue took
/// what fits. With `ID`, a retry within the retry window adds nothing and replies the same.
fn release(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let o = with_bytes(options, args::sem_release_options)?;
    let (db, name) = (selected_db(ctx), bytes(*key));
    if let Some(left) = answered_before(db, name, Call::Release, o.id) {
        return Ok(Reply::Int(left));
    }
    let left = add_and_serve(ctx, *key, o.permits.unwrap_or(1))?;
    if let Some(id) = o.id {
        let call = remembered_call(db, name, Call::Release, id);
        let window = config::retry_window_ms();
        lifetime::with_released(|r| r.remember(&call, left, now_ms(), window));
    }
    stats::RELEASES.add();
    Ok(Reply::Int(left))
}

/// `RCSEM.ADDPERMITS key n`: adds `n` available permits, or removes them when negative (the
/// count may go below 0: Redisson's `addPermits` and `reducePermits`); replies the permits
/// available once the queue took what fits.
fn add_permits(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, n] = argv else {
        return Err(Error::WrongArity);
    };
    let n = args::integer("permits", bytes(*n))?;
    Ok(Reply::Int(add_and_serve(ctx, *key, n)?))
}

/// `RCSEM.SETPERMITS key n`: sets the available permits when the semaphore was never set (1;
/// its queue takes what fits), else 0 and nothing changes (Redisson's `trySetPermits`).
fn set_permits(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, n] = argv else {
        return Err(Error::WrongArity);
    };
    let n = args::at_least("permits", bytes(*n), 0)?;
    if counter::get(ctx, *key)?.is_some() {
        return Ok(Reply::Int(0));
    }
    counter::set(ctx, *key, n);
    publish(
        ctx,
        &semaphore_channel(bytes(*key)),
        n.to_string().as_bytes(),
    );
    serve(ctx, selected_db(ctx), *key, n);
    Ok(Reply::Int(1))
}

/// `RCSEM.DRAIN key`: takes every available permit and replies how many (0 when never set;
/// below 0, the count goes back to 0 and the reply is negative, as Java's `drainPermits`).
/// Like Redisson's, it does not queue: it takes what is there now.
fn drain(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key] = argv else {
        return Err(Error::WrongArity);
    };
    let (taken, write) = drained(counter::get(ctx, *key)?);
    if write {
        counter::set(ctx, *key, 0);
    }
    Ok(Reply::Int(taken))
}

/// `RCSEM.AVAILABLE key`: the available permits (0 when never set; below 0 after removals).
fn available(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key] = argv else {
        return Err(Error::WrongArity);
    };
    Ok(Reply::Int(counter::get(ctx, *key)?.unwrap_or(0)))
}

crate::reply::entry_points!(
    acquire_command => acquire,
    release_command => release,
    add_permits_command => add_permits,
    set_permits_command => set_permits,
    drain_command => drain,
    available_command => available,
);
