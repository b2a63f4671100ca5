//! Waiters: one FIFO queue per (db, key) for every lock type and both kinds of waiter, clients
//! blocked in `... WAIT` and queue entries told by message (`NOTIFY`), and every
//! blocked-client and wait-deadline call of the module.
//!
//! Ownership rule: a waiter is in `Registry::waiters` exactly while nobody has answered it (for
//! a blocked one: called `RedisModule_UnblockClient`). Whoever removes it (a grant, its
//! timeout, its disconnect, a cancel) answers it once; a callback that finds it gone does
//! nothing more, which is what keeps a late disconnect of an already granted client from
//! unblocking it twice.

use crate::api::{bytes, Ctx};
use crate::error::Error;
use crate::kinds::Want;
use crate::notify;

mod ask;
mod blocked;
pub mod commands;
mod deadlines;
mod deliver;
mod group;
mod lookup;
mod notified;
mod registry;
mod retry;
mod serve;
mod slab;
mod waiter;

pub use ask::{Ask, Request};
pub use blocked::block;
use deliver::deliver;

pub use lookup::*;
pub use notified::{enqueue, fail_notified, is_receiver, receiver_closed, unsubscribed};
pub use registry::on_departure;
use registry::{next_head, serve_departed, take_head, with};
pub use retry::take_over;
pub use serve::{serve, Admission, Verdict};
use waiter::{Outcome, Via, Waiter};

/// What the first live waiter of (db, key) asks for, if anyone waits. A head told by message
/// whose connection is gone or no longer subscribed leaves on the way: it must not keep those
/// behind it out (the caller is serving the queue already).
pub fn next_want(db: i32, key: &[u8]) -> Option<Want> {
    next_head(db, key).map(|(want, _)| want)
}

/// `RLOCK.CANCEL`: takes `owner`'s entries out of the queue for (db, key); an empty owner (a
/// latch's waiters) takes only those of connection `caller`. Blocked ones are answered nil.
/// Returns how many left.
pub fn cancel(ctx: Ctx, db: i32, key: &[u8], owner: &[u8], caller: u64) -> usize {
    let taken: Vec<Waiter> = with(|r| {
        let seqs: Vec<u64> = r
            .in_order(db, key)
            .filter(|(_, w)| {
                bytes(w.ask.owner.0) == owner && (!owner.is_empty() || w.receiver() == Some(caller))
            })
            .map(|(seq, _)| seq)
            .collect();
        seqs.into_iter().filter_map(|seq| r.depart(seq)).collect()
    });
    let count = taken.len();
    for waiter in taken {
        if let Via::Blocked(bc) = waiter.via {
            deliver::unblock(bc, None);
        }
    }
    serve_departed(ctx);
    count
}

/// Fails every waiter of (db, key): the key now holds another type.
pub fn fail_all(db: i32, key: &[u8]) {
    fail_all_with(db, key, Error::WrongType);
}

/// Fails every waiter of (db, key) with `error`.
pub fn fail_all_with(db: i32, key: &[u8], error: Error) {
    while next_want(db, key).is_some() {
        let Some(waiter) = take_head(db, key) else {
            break;
        };
        deliver(waiter, Outcome::Failed(error.clone()));
    }
    serve_departed(notify::own_ctx());
}
