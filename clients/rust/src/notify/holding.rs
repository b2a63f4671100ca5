//! Holdings taken through the shared connection: what the dispatcher keeps of each (to report
//! its loss and to re-bind it), and the [`NotifiedHolding`] that the guards of one lock handle share.

use super::Subscriber;
use crate::commands::Family;
use crate::session::Session;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// What the dispatcher keeps of a holding: enough to report its loss and to re-bind it.
pub(crate) struct HoldingState {
    id: u64,
    pub(super) kind: Family,
    pub(super) key: Vec<u8>,
    pub(super) owner: Vec<u8>,
    pub(super) token: u64,
    pub(super) lease: Duration,
    pub(super) watchdog: bool,
    /// Guards alive on this holding: a re-bind that finds nothing is a loss only then.
    pub(super) holds: AtomicUsize,
    lost: watch::Sender<bool>,
}

impl HoldingState {
    pub(super) fn mark_lost(&self) {
        self.lost.send_replace(true);
    }

    pub(super) fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// Whether a `lost` message of this type and token ends this holding. It names the
    /// owner's latest grant, and every holding of an owner at a key ends together (the
    /// server's notice is per owner), so older holdings of the same family end with it.
    pub(super) fn ended_by(&self, word: &[u8], token: u64) -> bool {
        self.kind.same_family(word) && self.token <= token
    }
}

/// A holding taken through the shared connection, shared by the re-entrant guards of one
/// lock handle.
pub(crate) struct NotifiedHolding {
    subscriber: Arc<Subscriber>,
    state: Arc<HoldingState>,
}

impl NotifiedHolding {
    pub(crate) fn new(
        subscriber: &Arc<Subscriber>,
        kind: Family,
        key: &str,
        owner: &str,
        token: u64,
        lease: Duration,
        watchdog: bool,
    ) -> Arc<NotifiedHolding> {
        let (lost, _) = watch::channel(false);
        let (key, owner) = (key.as_bytes().to_vec(), owner.as_bytes().to_vec());
        let mut tables = subscriber
            .dispatcher
            .tables
            .lock()
            .expect("dispatcher lock");
        tables.next_id += 1;
        let state = Arc::new(HoldingState {
            id: tables.next_id,
            kind,
            key: key.clone(),
            owner: owner.clone(),
            token,
            lease,
            watchdog,
            holds: AtomicUsize::new(0),
            lost,
        });
        let place = (key, owner);
        if let Some((word, lost)) = tables.unclaimed_lost.get(&place) {
            if state.ended_by(word, *lost) {
                state.mark_lost();
            }
        }
        tables.unclaimed_lost.remove(&place);
        tables
            .holdings
            .entry(place)
            .or_default()
            .push(state.clone());
        drop(tables);
        Arc::new(NotifiedHolding {
            subscriber: subscriber.clone(),
            state,
        })
    }

    pub(crate) fn session(&self) -> &Session {
        &self.subscriber.session
    }

    pub(crate) fn token(&self) -> u64 {
        self.state.token
    }

    pub(crate) fn key(&self) -> &[u8] {
        &self.state.key
    }

    /// A guard now holds through this holding.
    pub(crate) fn held(&self) {
        self.state.holds.fetch_add(1, Ordering::SeqCst);
    }

    /// A guard released its hold (or gave up on it).
    pub(crate) fn released(&self) {
        self.state.holds.fetch_sub(1, Ordering::SeqCst);
    }

    pub(crate) fn lost(&self) -> watch::Receiver<bool> {
        self.state.lost.subscribe()
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.state.is_lost()
    }

    pub(crate) fn mark_lost(&self) {
        self.state.mark_lost();
    }
}

impl Drop for NotifiedHolding {
    fn drop(&mut self) {
        let mut tables = self
            .subscriber
            .dispatcher
            .tables
            .lock()
            .expect("dispatcher lock");
        let place = (self.state.key.clone(), self.state.owner.clone());
        if let Some(list) = tables.holdings.get_mut(&place) {
            list.retain(|holding| holding.id != self.state.id);
            if list.is_empty() {
                tables.holdings.remove(&place);
            }
        }
    }
}
