//! Commands on the shared queue itself, for every lock type: `RLOCK.CANCEL` takes a waiter out,
//! `RLOCK.CHANNEL` names the channel a `NOTIFY` waiter's messages go to.

use crate::acl::{Access, Caller, Refused};
use crate::api::{api, bytes, selected_db, Ctx, RStr};
use crate::args;
use crate::error::{Error, Result};
use crate::notify;
use crate::queue;
use crate::reply::{reply_text, run, Reply};
use crate::stats;
use std::os::raw::c_int;

fn client_id(ctx: Ctx) -> u64 {
    // SAFETY: `ctx` is the live context of the command.
    unsafe { api!(RedisModule_GetClientId)(ctx) }
}

/// `RLOCK.CANCEL key owner`: the owner's queue entries at the key leave the queue (a blocked
/// one is answered nil); `""` for the latch waits told to this connection. Replies how many.
fn cancel(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner] = argv else {
        return Err(Error::WrongArity);
    };
    let (key, owner) = (bytes(*key), bytes(*owner));
    if !owner.is_empty() {
        args::owner(owner)?;
        may_change_waits(ctx, key)?;
    }
    let left = queue::cancel(ctx, selected_db(ctx), key, owner, client_id(ctx));
    stats::CANCELLED.add_n(left as u64);
    Ok(Reply::Int(left as i64))
}

/// An owner's waits are the lock's state: taking them out needs write access to the key,
/// though the command's own key spec (read) lets a latch waiter, which may only read the latch,
/// cancel the waits told to its own connection.
fn may_change_waits(ctx: Ctx, key: &[u8]) -> Result<()> {
    let caller = Caller::of(ctx)?;
    if caller.may(Access::Write, key) {
        return Ok(());
    }
    caller.log_refusal(ctx, Refused::Key(key));
    Err(Error::CancelNotPermitted)
}

/// `RLOCK.CHANNEL [client-id]`: the channel of this connection (or of `client-id`).
fn channel(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let client = match argv {
        [_] => client_id(ctx),
        [_, id] => args::client_id(bytes(*id)).ok_or(Error::NotAnInteger {
            option: "client-id",
        })?,
        _ => return Err(Error::WrongArity),
    };
    let name = notify::channel(client);
    Ok(Reply::With(Box::new(move |ctx| {
        // SAFETY: the reply goes to the command's own context.
        unsafe { reply_text(ctx, &name) };
        crate::api::OK
    })))
}

crate::reply::entry_points!(
    cancel_command => cancel,
    channel_command => channel,
);
