//! The dispatcher: every push of the shared connection, handled in the task that reads it.
//! A message goes to the oldest waiter it names (a grant no waiter claims is given back) or
//! marks a holding lost; a dropped connection ends the waits queued from it. Also the lists
//! of waiters and holdings that the messages are matched against.

use super::holding::HoldingState;
use super::message::{parse, parse_token, Message};
use super::{Chore, Event, Inner, State, Target, Waiter, LOCK, UNCLAIMED_LOST_LIMIT};
use redis::{PushInfo, PushKind, Value};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::oneshot;

impl State {
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
        let mut inner = self.inner.lock().expect("dispatcher lock");
        let event = match message.event {
            b"granted" => match parse_token(message.value) {
                Some(token) => Event::Granted(token),
                None => return,
            },
            b"timeout" => Event::Timeout,
            b"failed" => Event::Failed(String::from_utf8_lossy(message.value).into_owned()),
            b"lost" if message.kind == LOCK => {
                if let Some(token) = parse_token(message.value) {
                    inner.lost(message.key, message.owner, token);
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
        let waiter = inner.waiters.get_mut(&target).and_then(VecDeque::pop_front);
        if inner.waiters.get(&target).is_some_and(VecDeque::is_empty) {
            inner.waiters.remove(&target);
        }
        drop(inner);
        let unclaimed = match waiter {
            Some(waiter) => waiter.tx.send(event).err(),
            None => Some(event),
        };
        if matches!(unclaimed, Some(Event::Granted(_))) && message.kind == LOCK {
            let _ = self.chores.send(Chore::Release {
                key: target.key,
                owner: target.owner,
            });
        }
    }

    /// Ends every wait queued from the connection `generation`: the server drops them too.
    fn disconnected(&self, generation: u64) {
        let mut inner = self.inner.lock().expect("dispatcher lock");
        let mut ended = Vec::new();
        inner.waiters.retain(|_, queue| {
            let (gone, kept) = std::mem::take(queue)
                .into_iter()
                .partition(|waiter| waiter.generation == generation);
            *queue = kept;
            ended.extend(gone);
            !queue.is_empty()
        });
        drop(inner);
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
        let mut inner = self.inner.lock().expect("dispatcher lock");
        inner.next_id += 1;
        let id = inner.next_id;
        inner
            .waiters
            .entry(target.clone())
            .or_default()
            .push_back(Waiter { id, generation, tx });
        (id, rx)
    }

    pub(super) fn unregister(&self, target: &Target, id: u64) {
        let mut inner = self.inner.lock().expect("dispatcher lock");
        if let Some(queue) = inner.waiters.get_mut(target) {
            queue.retain(|waiter| waiter.id != id);
            if queue.is_empty() {
                inner.waiters.remove(target);
            }
        }
    }

    /// Watchdog holdings that guards still hold and that are not known lost.
    pub(super) fn live_watchdog_holdings(&self) -> Vec<Arc<HoldingState>> {
        let inner = self.inner.lock().expect("dispatcher lock");
        inner
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

impl Inner {
    fn lost(&mut self, key: &[u8], owner: &[u8], token: u64) {
        let found = self
            .holdings
            .get(&(key.to_vec(), owner.to_vec()))
            .into_iter()
            .flatten()
            .filter(|holding| holding.token == token)
            .inspect(|holding| holding.mark_lost())
            .count();
        if found == 0 {
            if self.unclaimed_lost.len() >= UNCLAIMED_LOST_LIMIT {
                self.unclaimed_lost.clear();
            }
            self.unclaimed_lost
                .insert((key.to_vec(), owner.to_vec()), token);
        }
    }
}
