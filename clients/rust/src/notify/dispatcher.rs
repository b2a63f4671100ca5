//! The dispatcher: every push of the shared connection, handled in the task that reads it.
//! A message goes to the oldest waiter it names (every waiter of a latch; a grant no waiter
//! claims is given back) or marks holdings lost; a dropped connection ends the waits queued
//! from it. Also the lists of waiters and holdings that the messages are matched against.

use super::holding::HoldingState;
use super::message::{parse, parse_token, Message};
use super::{Chore, Event, Place, Target, Waiter, UNCLAIMED_LOST_LIMIT};
use crate::commands::Family;
use redis::{PushInfo, PushKind, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// What the dispatcher knows, shared by the connection's push sender and the waits.
pub(super) struct Dispatcher {
    pub(super) tables: Mutex<Tables>,
    /// Work the dispatcher cannot do inside the connection's reader: sending commands.
    pub(super) chores: mpsc::UnboundedSender<Chore>,
}

/// The waiters and holdings that the messages are matched against.
#[derive(Default)]
pub(super) struct Tables {
    pub(super) next_id: u64,
    /// Waits in the server's queues, by what their messages name, oldest first.
    pub(super) waiters: HashMap<Target, VecDeque<Waiter>>,
    /// Holdings taken through this connection, by key and owner, for `lost` and re-binding.
    pub(super) holdings: HashMap<Place, Vec<Arc<HoldingState>>>,
    /// `lost` notices that found no holding yet: (key, owner) -> (type word, token).
    pub(super) unclaimed_lost: HashMap<Place, (Vec<u8>, u64)>,
}

impl Dispatcher {
    /// Runs in the connection's reader, for every push of the connection `generation`.
    pub(super) fn push(&self, generation: u64, info: PushInfo) {
        match info.kind {
            PushKind::Message => {
                if let [_channel, Value::BulkString(payload)] = info.data.as_slice() {
                    if let Some(message) = parse(payload) {
                        self.deliver(message);
                    }
                }
            }
            PushKind::Disconnection => {
                self.disconnected(generation);
                let _ = self.chores.send(Chore::Reconnect);
            }
            _ => {}
        }
    }

    fn deliver(&self, message: Message<'_>) {
        let mut tables = self.tables.lock().expect("dispatcher lock");
        let event = match message.event {
            b"granted" => match parse_token(message.value) {
                Some(token) => Event::Granted(token),
                None => return,
            },
            b"timeout" => Event::Timeout,
            b"failed" => Event::Failed(String::from_utf8_lossy(message.value).into_owned()),
            b"lost" => {
                if let Some(token) = parse_token(message.value) {
                    tables.lost(message.kind, message.key, message.owner, token);
                }
                return;
            }
            _ => return,
        };
        let target = Target {
            kind: message.kind.to_vec(),
            key: message.key.to_vec(),
            owner: message.owner.to_vec(),
        };
        let mut waiters = tables.waiters.remove(&target).unwrap_or_default();
        // A latch opens for all its waiters; anything else goes to the oldest one.
        let told: Vec<Waiter> = if target.is_latch() {
            waiters.drain(..).collect()
        } else {
            waiters.pop_front().into_iter().collect()
        };
        if !waiters.is_empty() {
            tables.waiters.insert(target.clone(), waiters);
        }
        drop(tables);
        let mut unclaimed = told.is_empty().then(|| event.clone());
        for waiter in told {
            unclaimed = waiter.tx.send(event.clone()).err().or(unclaimed);
        }
        if let (Some(Event::Granted(_)), Some(kind)) = (unclaimed, Family::from_word(&target.kind))
        {
            let _ = self.chores.send(Chore::Release {
                kind,
                key: target.key,
                owner: target.owner,
            });
        }
    }

    /// Ends every wait queued from the connection `generation`: the server drops them too.
    fn disconnected(&self, generation: u64) {
        let mut tables = self.tables.lock().expect("dispatcher lock");
        let mut ended = Vec::new();
        tables.waiters.retain(|_, queue| {
            let (gone, kept) = std::mem::take(queue)
                .into_iter()
                .partition(|waiter| waiter.generation == generation);
            *queue = kept;
            ended.extend(gone);
            !queue.is_empty()
        });
        drop(tables);
        for waiter in ended {
            let _ = waiter.tx.send(Event::Disconnected);
        }
    }

    pub(super) fn register(
        &self,
        target: &Target,
        generation: u64,
    ) -> (u64, oneshot::Receiver<Event>) {
        let (tx, rx) = oneshot::channel();
        let mut tables = self.tables.lock().expect("dispatcher lock");
        tables.next_id += 1;
        let id = tables.next_id;
        tables
            .waiters
            .entry(target.clone())
            .or_default()
            .push_back(Waiter { id, generation, tx });
        (id, rx)
    }

    /// Takes the wait `id` out of the dispatcher; returns whether other waits of the same
    /// target remain.
    pub(super) fn unregister(&self, target: &Target, id: u64) -> bool {
        let mut tables = self.tables.lock().expect("dispatcher lock");
        let Some(queue) = tables.waiters.get_mut(target) else {
            return false;
        };
        queue.retain(|waiter| waiter.id != id);
        if queue.is_empty() {
            tables.waiters.remove(target);
            return false;
        }
        true
    }

    /// Tells every wait of `target` to send itself again (see [`Event::Requeue`]).
    pub(super) fn requeue(&self, target: &Target) {
        let waiters = self
            .tables
            .lock()
            .expect("dispatcher lock")
            .waiters
            .remove(target)
            .unwrap_or_default();
        for waiter in waiters {
            let _ = waiter.tx.send(Event::Requeue);
        }
    }

    /// Watchdog holdings that guards still hold and that are not known lost.
    pub(super) fn live_watchdog_holdings(&self) -> Vec<Arc<HoldingState>> {
        let tables = self.tables.lock().expect("dispatcher lock");
        tables
            .holdings
            .values()
            .flatten()
            .filter(|holding| {
                holding.watchdog && holding.holds.load(Ordering::SeqCst) > 0 && !holding.is_lost()
            })
            .cloned()
            .collect()
    }
}

impl Tables {
    fn lost(&mut self, word: &[u8], key: &[u8], owner: &[u8], token: u64) {
        let found = self
            .holdings
            .get(&(key.to_vec(), owner.to_vec()))
            .into_iter()
            .flatten()
            .filter(|holding| holding.ended_by(word, token))
            .inspect(|holding| holding.mark_lost())
            .count();
        if found == 0 {
            if self.unclaimed_lost.len() >= UNCLAIMED_LOST_LIMIT {
                self.unclaimed_lost.clear();
            }
            self.unclaimed_lost
                .insert((key.to_vec(), owner.to_vec()), (word.to_vec(), token));
        }
    }
}
