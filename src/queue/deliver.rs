//! Telling a waiter taken out of the queue what became of it.

use super::blocked;
use super::registry::tell;
use super::waiter::{Outcome, Via, Waiter};
use crate::notify::Event;

/// Tells a waiter taken out of the queue what became of it.
pub(super) fn deliver(waiter: Waiter, outcome: Outcome) {
    match (waiter.via, waiter.receiver()) {
        (Via::Blocked(bc), _) => blocked::unblock(bc, Some(outcome)),
        (_, Some(client)) => tell(&waiter, client, |index| match &outcome {
            Outcome::Granted(token) => Event::Granted(*token),
            Outcome::GrantedAll(tokens) => Event::Granted(tokens.get(index).copied().unwrap_or(0)),
            Outcome::Failed(error) => Event::Failed(error),
        }),
        (_, None) => {}
    }
}
