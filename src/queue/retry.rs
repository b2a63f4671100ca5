//! A waiting call retried with the same request id (same owner, key(s), want and id) while its
//! first call still waits (a client's retry after a partition or a half-open connection): the
//! retry takes over the queued entry, keeping its place, so the grant is given, and counted,
//! once. The answer now goes to the retry (its blocked reply, or messages to its `NOTIFY`
//! connection); a first call still blocked ends with `RETRIED`.

use super::ask::Ask;
use super::blocked::block_client;
use super::deadlines::arm_wake_timer;
use super::deliver::unblock;
use super::registry::{with, Registry};
use super::slab::Handle;
use super::waiter::{request_hash, Outcome, Via};
use crate::api::{api, bytes, now_ms, Ctx};
use crate::args::Wait;
use crate::error::{Error, Result};
use std::cmp::Reverse;
use std::num::NonZeroU64;

/// If `ask` (for `keys` of `db`, waiting `wait`) retries a call whose entry still waits, the
/// caller takes that entry over: blocked, or told by message, as `ask` says. Returns whether
/// it did; an error (Redis handed back no blocked client) changes nothing.
pub fn take_over(ctx: Ctx, db: i32, keys: &[&[u8]], ask: &Ask, wait: Wait) -> Result<bool> {
    let Some(id) = ask.id.as_deref() else {
        return Ok(false);
    };
    if with(|r| queued(r, db, keys, ask, id)).is_none() {
        return Ok(false);
    }
    let (via, connection) = match ask.notify() {
        Some(client) => (Via::Message, client),
        // SAFETY: `ctx` is the live context of the command.
        None => (Via::Blocked(block_client(ctx, wait)?), unsafe {
            api!(RedisModule_GetClientId)(ctx)
        }),
    };
    let deadline = match wait {
        Wait::Forever => None,
        Wait::Ms(ms) => Some(now_ms() + ms + 1),
    };
    let replaced = with(|r| {
        // Nothing ran since `queued` found it: the entry is still there.
        let seq = queued(r, db, keys, ask, id)?;
        let replaced = hand_over(r, seq, via, connection, ask.notify, deadline);
        arm_wake_timer(ctx, r);
        replaced
    });
    match (replaced, via) {
        (Some(Via::Blocked(first)), _) => unblock(first, Some(Outcome::Failed(Error::Retried))),
        // Never expected; the client just blocked must still get its one answer (nil).
        (None, Via::Blocked(bc)) => unblock(bc, None),
        _ => {}
    }
    Ok(true)
}

/// The entry `ask` retries: the lead of a waiting request by the same owner for the same
/// keys, in the same order, with the same want and request id `id`.
fn queued(r: &Registry, db: i32, keys: &[&[u8]], ask: &Ask, id: &[u8]) -> Option<Handle> {
    let owner = bytes(ask.owner.0);
    let first = keys.first()?;
    let seq = *r.requests.get(&request_hash(db, first, owner, id))?;
    let waiter = r.waiters.get(seq)?;
    let same_keys = waiter.keys().len() == keys.len()
        && waiter.keys().iter().zip(keys).all(|(a, b)| **a == **b);
    let same = waiter.db == db
        && waiter.via != Via::Member
        && same_keys
        && bytes(waiter.ask.owner.0) == owner
        && waiter.ask.want == ask.want
        && waiter.ask.id.as_deref() == Some(id);
    same.then_some(seq)
}

/// Makes entry `seq` answer through `via` (`connection` the retry's blocked client or its
/// `NOTIFY` receiver), with the retry's deadline; a `WATCHDOG` binding moves to `connection`.
/// Returns how the first call was to be answered.
fn hand_over(
    r: &mut Registry,
    seq: Handle,
    via: Via,
    connection: u64,
    notify: Option<NonZeroU64>,
    deadline: Option<i64>,
) -> Option<Via> {
    let waiter = r.waiters.get_mut(seq)?;
    let (first, old_receiver) = (waiter.via, waiter.receiver());
    waiter.via = via;
    waiter.ask.notify = notify;
    if waiter.ask.bind_to.is_some() {
        waiter.ask.bind_to = NonZeroU64::new(connection);
    }
    waiter.deadline = deadline;
    let new_receiver = waiter.receiver();
    if let Via::Blocked(bc) = first {
        r.blocked.remove(&bc.get());
    }
    if let Via::Blocked(bc) = via {
        r.blocked.insert(bc.get(), seq);
    }
    if old_receiver != new_receiver {
        if let Some(old) = old_receiver {
            r.drop_receiver(old);
        }
        if let Some(new) = new_receiver {
            r.add_receiver(new, seq);
        }
    }
    if let Some(at) = deadline {
        r.deadlines.push(Reverse((at, seq)));
    }
    Some(first)
}
