//! Several plain locks at once: `RLOCK.ACQUIREALL` takes every key or none, and a request
//! that must wait holds one place in each key's queue (the queue's `group`), so it is let in
//! in one step, never holding part of its keys. `RLOCK.RELEASEALL` releases each key once.
//! Each key is an ordinary holding afterwards, with its own token.

use crate::api::{bytes, selected_db, Ctx, RStr};
use crate::args;
use crate::error::{Error, Result};
use crate::kinds::LockType;
use crate::lifetime::retries::Kind;
use crate::queue::{self, Ask};
use crate::reply::{run, with_bytes, Out, Reply};
use crate::request::{open_for_write, request, wait_all_or_nil};
use crate::store::LockKey;
use std::os::raw::c_int;

use super::rules::{View, WANT};
use super::take::{take_all, views};

/// `numkeys key [key ...] owner [options]` split into (keys, their names, owner, options).
fn split(argv: &[RStr]) -> Result<(&[RStr], Vec<&[u8]>, RStr, &[RStr])> {
    let [_, numkeys, rest @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let n = args::numkeys(bytes(*numkeys), rest.len())?;
    let (keys, rest) = rest.split_at(n);
    let [owner, options @ ..] = rest else {
        return Err(Error::WrongArity);
    };
    let names: Vec<&[u8]> = keys.iter().map(|k| bytes(*k)).collect();
    args::distinct(&names)?;
    args::owner(bytes(*owner))?;
    Ok((keys, names, *owner, options))
}

/// The tokens of a call with request id `id` that took all of `locks` already (a retry).
fn answered_before(locks: &[LockKey], views: &[View], id: &[u8]) -> Option<Vec<i64>> {
    locks
        .iter()
        .zip(views)
        .map(|(lock, view)| match view {
            View::Mine {
                token: Some(token), ..
            } => (lock.ids().find(Kind::Acquire, id) == Some(*token)).then_some(*token),
            _ => None,
        })
        .collect()
}

fn tokens_reply(tokens: Vec<i64>) -> Reply {
    Reply::With(Box::new(move |ctx| {
        // SAFETY: replies go to the context of the command being executed.
        let out = unsafe { Out::new(ctx) };
        out.array(tokens.len());
        for token in tokens {
            out.int(token);
        }
        crate::api::OK
    }))
}

/// `RLOCK.ACQUIREALL numkeys key [key ...] owner [PX lease-ms] [WAIT timeout-ms [NOTIFY
/// [client-id]]] [WATCHDOG] [ID id] [MAXHOLD ms] [LOCKDELAY ms]`: every key or none; replies
/// the tokens in the keys' order, or nil.
fn acquire_all(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let (keys, names, owner, options) = split(argv)?;
    let o = with_bytes(options, args::lock_acquire_options)?;
    let request = request(ctx, owner, &o)?;
    let db = selected_db(ctx);
    // Each free key's queue is served first, each key on its own: a grant there may write the
    // other keys, which must not be open here then (a handle opened before a write elsewhere
    // keeps seeing the key as it was).
    for key in keys {
        open_for_write(ctx, *key, LockType::Plain)?;
    }
    let mut locks = keys
        .iter()
        .map(|key| LockKey::open_as(ctx, *key, true, LockType::Plain))
        .collect::<Result<Vec<LockKey>>>()?;
    let views = views(&locks, owner)?;
    if let Some(tokens) = o.id.and_then(|id| answered_before(&locks, &views, id)) {
        crate::own_writes::answered_again(ctx);
        return Ok(tokens_reply(tokens));
    }
    // A key the owner holds is re-entered whoever waits for it (as `RLOCK.ACQUIRE` does); a
    // free one with waiters is theirs first.
    let queued = names
        .iter()
        .zip(&views)
        .any(|(name, view)| *view == View::Free && queue::count(db, name) > 0);
    if !queued {
        let mut refs: Vec<&mut LockKey> = locks.iter_mut().collect();
        if let Some(tokens) = take_all(ctx, &mut refs, views, db, &request)? {
            return Ok(tokens_reply(tokens));
        }
    }
    wait_all_or_nil(
        ctx,
        (db, &names),
        o.wait,
        || Ask::new(WANT, &request),
        || Ok(locks.iter().map(LockKey::expire_at).collect::<Vec<_>>()),
    )
}

/// `RLOCK.RELEASEALL numkeys key [key ...] owner [ID request-id]`: releases each key once, as `RLOCK.RELEASE`
/// does (with `ID`, each key remembers the call); replies each key's answer in the keys'
/// order (holds left, 0, or nil).
fn release_all(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let (keys, _, owner, options) = split(argv)?;
    let o = with_bytes(options, args::release_options)?;
    // Checked before any release: a refused call changes nothing.
    for key in keys {
        LockKey::open_as(ctx, *key, false, LockType::Plain)?.view_without_token(owner)?;
    }
    let mut answers = Vec::with_capacity(keys.len());
    for key in keys {
        answers.push(super::commands::release_one(ctx, *key, owner, o.id)?);
    }
    Ok(Reply::With(Box::new(move |ctx| {
        // SAFETY: replies go to the context of the command being executed.
        let out = unsafe { Out::new(ctx) };
        out.array(answers.len());
        for answer in answers {
            out.int_or_nil(answer);
        }
        crate::api::OK
    })))
}

/// Names the keys when Redis asks (`getkeys-api`): Redis 7.0's Cluster routing reads a
/// module command's keys from the first/last/step triple or from this, never from a
/// `numkeys` key spec, which serves ACL checks and `COMMAND GETKEYS`.
fn entry(ctx: Ctx, argv: *mut RStr, argc: c_int, handler: crate::reply::Handler) -> c_int {
    // SAFETY: `ctx` is the command's context.
    if unsafe { crate::api::api!(RedisModule_IsKeysPositionRequest)(ctx) } == 0 {
        return run(ctx, argv, argc, handler);
    }
    crate::api::guarded("a request's keys", (), || {
        // SAFETY: Redis passes `argc` live strings in `argv`.
        let argv = unsafe { std::slice::from_raw_parts(argv, argc.max(0) as usize) };
        let Some(numkeys) = argv.get(1) else {
            return;
        };
        let Ok(n) = args::numkeys(bytes(*numkeys), argv.len() - 2) else {
            return;
        };
        for position in 2..2 + n {
            // SAFETY: a keys-position request's context; the position is within `argv`.
            unsafe { crate::api::api!(RedisModule_KeyAtPos)(ctx, position as c_int) };
        }
    });
    crate::api::OK
}

pub extern "C" fn acquire_all_command(ctx: Ctx, argv: *mut RStr, argc: c_int) -> c_int {
    entry(ctx, argv, argc, acquire_all)
}

pub extern "C" fn release_all_command(ctx: Ctx, argv: *mut RStr, argc: c_int) -> c_int {
    entry(ctx, argv, argc, release_all)
}
