//! Waiters told by message (`NOTIFY`): queue entries whose outcome goes to a connection's
//! channel. They leave when their connection closes or stops listening (a retried call takes
//! an entry over: `retry.rs`).

use super::ask::Ask;
use super::deadlines::arm_wake_timer;
use super::deliver::deliver;
use super::registry::{serve_departed, with};
use super::waiter::{Outcome, Via, Waiter};
use crate::api::Ctx;
use crate::args::Wait;
use crate::error::Error;
use crate::notify;
use crate::stats;

/// Queues a waiter (for each of `keys`, one request) that is told by a message to its
/// `notify` connection.
pub fn enqueue(ctx: Ctx, db: i32, keys: &[&[u8]], ask: Ask, wait: Wait) {
    with(|r| {
        r.push_all(db, keys, ask, Via::Message, wait);
        arm_wake_timer(ctx, r);
    });
}

/// Every waiter told by message is failed with `error` (the server turned replica).
pub fn fail_notified(error: Error) {
    let taken: Vec<Waiter> = with(|r| {
        let seqs: Vec<u64> = r
            .waiters
            .iter()
            .filter(|(_, w)| w.via == Via::Message)
            .map(|(seq, _)| seq)
            .collect();
        seqs.into_iter().filter_map(|seq| r.take(seq)).collect()
    });
    for waiter in taken {
        deliver(waiter, Outcome::Failed(error.clone()));
    }
    // A request for several keys may have headed queues of blocked waiters.
    serve_departed(crate::notify::own_ctx());
}

/// A connection closed: the waiters told through it leave their queues.
pub fn receiver_closed(ctx: Ctx, client: u64) {
    with(|r| {
        let Some((seqs, _)) = r.receivers.remove(&client) else {
            return;
        };
        for seq in seqs {
            if r.waiters
                .get(seq)
                .is_some_and(|w| w.receiver() == Some(client))
            {
                // Already out of `receivers`: `depart` finds nothing more to drop there.
                r.depart(seq);
            }
        }
    });
    serve_departed(ctx);
}

/// After an `UNSUBSCRIBE` or `RESET` somewhere: the waiters of connections no longer
/// subscribed to their channel leave their queues, as if those connections had closed.
pub fn unsubscribed(ctx: Ctx) {
    let clients: Vec<u64> = with(|r| r.receivers.keys().copied().collect());
    for client in clients {
        if notify::check_subscribed(ctx, client).is_err() {
            stats::NOTIFY_SKIPPED.add();
            receiver_closed(ctx, client);
        }
    }
}

/// Whether any waiter is told through connection `client`.
pub fn is_receiver(client: u64) -> bool {
    with(|r| r.receivers.contains_key(&client))
}
