//! The count-down latch, `RLATCH.*`, in Redisson's `RCountDownLatch` layout: a string count at
//! the key, deleted when it reaches 0, with Redisson's messages on
//! `redisson_countdownlatch__channel__{key}` (`1`: a new count, `0`: open). Waiters queue in the
//! shared queue as `serve::WANT` and are all answered when it opens (`serve::open`).

use crate::api::{bytes, selected_db, Ctx, RStr};
use crate::args;
use crate::counter;
use crate::error::{Error, Result};
use crate::holdings::publish;
use crate::lifetime::retries;
use crate::queue::Ask;
use crate::reply::{run, with_bytes, Reply};
use crate::request::{notify_target, once, wait_or_nil};
use std::os::raw::c_int;

use super::serve;

fn channel(key: &[u8]) -> Vec<u8> {
    [&b"redisson_countdownlatch__channel__{"[..], key, b"}"].concat()
}

/// `RLATCH.SET key count [ID request-id]`: 1 when the latch was not set (now it is), else 0.
/// With `ID`, a retry of the call that set it replies 1 again, within the retry window.
fn set(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, count, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let count = args::at_least("count", bytes(*count), 1)?;
    let o = with_bytes(options, args::request_id_options)?;
    let call =
        o.id.map(|id| retries::command_call(selected_db(ctx), bytes(*key), "rlatch.set", id));
    let set = once(ctx, call, || {
        if counter::get(ctx, *key)?.is_some() {
            return Ok(0);
        }
        counter::set(ctx, *key, count);
        publish(ctx, &channel(bytes(*key)), b"1");
        Ok(1)
    })?;
    Ok(Reply::Int(set))
}

/// `RLATCH.COUNTDOWN key [ID request-id]`: the remaining count; at 0 the latch opens for every
/// waiter. An unset latch replies 0 and nothing is written.
fn countdown(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let o = with_bytes(options, args::countdown_options)?;
    let db = selected_db(ctx);
    let name = bytes(*key);
    let call = o.id.map(|id| retries::release_call(db, name, b"", id));
    let remaining = once(ctx, call, || {
        if counter::get(ctx, *key)?.is_none() {
            return Ok(0);
        }
        let left = counter::add(ctx, *key, -1)?;
        if left <= 0 {
            counter::delete(ctx, *key);
        }
        if left == 0 {
            crate::holdings::tell_change(ctx, name, c"rlatch.opened");
            publish(ctx, &channel(name), b"0");
            serve::open(ctx, db, *key);
        }
        Ok(left.max(0))
    })?;
    Ok(Reply::Int(remaining))
}

/// `RLATCH.AWAIT key [WAIT timeout-ms [NOTIFY [client-id]]]`: 1 when the latch is open (or was
/// never set); else nil at once without WAIT, or 1 when it opens, nil at the timeout (with
/// `NOTIFY`: `WAITING`, and the same told by message).
fn wait(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let o = with_bytes(options, args::await_options)?;
    let notify = notify_target(ctx, o.notify)?;
    if counter::get(ctx, *key)?.is_none_or(|count| count <= 0) {
        return Ok(Reply::Int(1));
    }
    let ask = || Ask::latch(serve::WANT, notify);
    let db = selected_db(ctx);
    wait_or_nil(ctx, (db, bytes(*key)), o.wait, ask, || Ok(None))
}

/// `RLATCH.COUNT key`: the remaining count (0 when unset or open).
fn count(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key] = argv else {
        return Err(Error::WrongArity);
    };
    Ok(Reply::Int(counter::get(ctx, *key)?.unwrap_or(0).max(0)))
}

crate::reply::entry_points!(
    set_command => set,
    countdown_command => countdown,
    await_command => wait,
    count_command => count,
);
