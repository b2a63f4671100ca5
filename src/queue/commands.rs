//! Commands on the shared queue itself, for every lock type: `RLOCK.CANCEL` takes a waiter out,
//! `RLOCK.CHANNEL` names the channel a `NOTIFY` waiter's messages go to.

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
    let owner = bytes(*owner);
    if !owner.is_empty() {
        args::owner(owner)?;
    }
    let left = queue::cancel(ctx, selected_db(ctx), bytes(*key), owner, client_id(ctx));
    stats::CANCELLED.add_n(left as u64);
    Ok(Reply::Int(left as i64))
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
