//! Telling a waiter taken out of the queue what became of it: the one place a grant, a
//! failure or a timeout reaches a waiter, blocked (its reply, written by `blocked.rs`'s reply
//! callback from the outcome handed over here) or told by message (`NOTIFY`, one message per
//! key of its request).

use super::waiter::{Bc, Outcome, Via, Waiter};
use crate::api::{api, bytes};
use crate::notify::{self, Event};
use crate::stats;
use std::num::NonZeroUsize;
use std::os::raw::c_void;
use std::ptr::null_mut;

/// Tells a waiter taken out of the queue what became of it.
pub(super) fn deliver(waiter: Waiter, outcome: Outcome) {
    match (waiter.via, waiter.receiver()) {
        (Via::Blocked(bc), _) => unblock(bc, Some(outcome)),
        (_, Some(client)) => tell(&waiter, client, |index| match &outcome {
            Outcome::Granted(token) => Event::Granted(*token),
            Outcome::GrantedAll(tokens) => Event::Granted(tokens.get(index).copied().unwrap_or(0)),
            Outcome::Failed(error) => Event::Failed(error),
        }),
        (_, None) => {}
    }
}

/// Answers a blocked client taken out of the registry (no outcome: nil); `blocked.rs`'s reply
/// callback writes the reply from the outcome.
pub(super) fn unblock(bc: NonZeroUsize, outcome: Option<Outcome>) {
    let data = outcome.map_or(null_mut(), |o| Box::into_raw(Box::new(o)).cast::<c_void>());
    // SAFETY: the caller took the waiter out of the registry, so this is its one
    // UnblockClient; Redis hands `data` to `on_reply` and then to `free_outcome`.
    unsafe { api!(RedisModule_UnblockClient)(bc.get() as Bc, data) };
}

/// Tells a waiter told by message, taken out at its wait deadline, that its time ran out (a
/// blocked one's timeout is Redis's to reply).
pub(super) fn time_out(waiter: Waiter) {
    if let Some(client) = waiter.receiver() {
        stats::WAIT_TIMEOUTS.add();
        tell(&waiter, client, |_| Event::Timeout);
    }
}

/// Sends a waiter told by message one message per key of its request, in their order:
/// `event(index)` is what the message for the index-th key says.
fn tell<'a>(waiter: &Waiter, client: u64, event: impl Fn(usize) -> Event<'a>) {
    let owner = bytes(waiter.ask.owner.0);
    for (index, key) in waiter.keys().iter().enumerate() {
        notify::send(
            client,
            notify::message(&event(index), waiter.ask.want, key, owner),
        );
    }
}
