//! The RCSEM commands, one per method of Redisson's `RSemaphore`: permits that belong to
//! nobody once taken, on Redisson's string counter at the key, with Redisson's message (the
//! new count on `redisson_sc:{key}`) when permits are added, so Redisson's own clients can
//! share the semaphore. Waiters queue in the shared queue with the word `counting`.

use crate::api::{bytes, now_ms, selected_db, Ctx, OwnedStr, RStr};
use crate::args;
use crate::counter::{self, semaphore_channel};
use crate::error::{Error, Result};
use crate::holdings::publish;
use crate::kinds::{permits_fit, Want};
use crate::queue::{self, Ask, Request};
use crate::reply::{run, with_bytes, Reply};
use crate::lifetime;
use crate::lifetime::retries::CallId;
use crate::own_writes::answered_again;
use crate::request::{notify_target, once, wait_or_nil};
use crate::stats;
use crate::subscriptions::ensure_string_subscription;
use std::os::raw::c_int;

use super::rules::{added, drained, remembered_call, Call, COUNTING};
use super::serve::{serve, take};

/// The permits a grant with this request id took, if it was made within the retry window (by
/// this call or told by message): the retry propagates a `PING`, so that a `WAIT` pipelined
/// after it confirms the grant (`answered_again`).
fn granted_before(ctx: Ctx, db: i32, key: &[u8], id: Option<&[u8]>) -> Option<i64> {
    let call = remembered_call(db, key, Call::Acquire, id?);
    let granted = lifetime::with_released(|r| r.reply(&call, now_ms()))?;
    answered_again(ctx);
    Some(granted)
}

/// Where a call of this kind with request id `id` (if any) is remembered.
fn retry_memory(ctx: Ctx, key: RStr, call: Call, id: Option<&[u8]>) -> Option<CallId> {
    id.map(|id| remembered_call(selected_db(ctx), bytes(key), call, id))
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
    if let Some(granted) = granted_before(ctx, db, name, o.id) {
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
    let call = retry_memory(ctx, *key, Call::Release, o.id);
    let left = once(ctx, call, || {
        let left = add_and_serve(ctx, *key, o.permits.unwrap_or(1))?;
        stats::RELEASES.add();
        Ok(left)
    })?;
    Ok(Reply::Int(left))
}

/// `RCSEM.ADDPERMITS key n [ID request-id]`: adds `n` available permits, or removes them when
/// negative (the count may go below 0: Redisson's `addPermits` and `reducePermits`); replies
/// the permits available once the queue took what fits. With `ID`, a retry within the retry
/// window adds nothing and replies the same.
fn add_permits(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, n, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let n = args::integer("permits", bytes(*n))?;
    let o = with_bytes(options, args::request_id_options)?;
    let call = retry_memory(ctx, *key, Call::AddPermits, o.id);
    Ok(Reply::Int(once(ctx, call, || add_and_serve(ctx, *key, n))?))
}

/// `RCSEM.SETPERMITS key n [ID request-id]`: sets the available permits when the semaphore was
/// never set (1; its queue takes what fits), else 0 and nothing changes (Redisson's
/// `trySetPermits`). With `ID`, a retry of the call that set them replies 1 again.
fn set_permits(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, n, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let n = args::at_least("permits", bytes(*n), 0)?;
    let o = with_bytes(options, args::request_id_options)?;
    let call = retry_memory(ctx, *key, Call::SetPermits, o.id);
    let set = once(ctx, call, || {
        if counter::get(ctx, *key)?.is_some() {
            return Ok(0);
        }
        counter::set(ctx, *key, n);
        publish(
            ctx,
            &semaphore_channel(bytes(*key)),
            n.to_string().as_bytes(),
        );
        serve(ctx, selected_db(ctx), *key, n);
        Ok(1)
    })?;
    Ok(Reply::Int(set))
}

/// `RCSEM.DRAIN key [ID request-id]`: takes every available permit and replies how many (0
/// when never set; below 0, the count goes back to 0 and the reply is negative, as Java's
/// `drainPermits`). Like Redisson's, it does not queue: it takes what is there now. With `ID`,
/// a retry within the retry window takes nothing and replies what the first call took.
fn drain(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let o = with_bytes(options, args::request_id_options)?;
    let call = retry_memory(ctx, *key, Call::Drain, o.id);
    let taken = once(ctx, call, || {
        let (taken, write) = drained(counter::get(ctx, *key)?);
        if write {
            counter::set(ctx, *key, 0);
        }
        Ok(taken)
    })?;
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
