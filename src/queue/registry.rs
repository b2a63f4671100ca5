//! The registry of every queue and waiter, on the main thread: pushing waiters, taking them
//! out (a grant, a timeout, a disconnect, a cancel) and the queues whose head left. Telling a
//! waiter what became of it is `deliver.rs`'s.

use super::ask::Ask;
use super::group::Group;
use super::slab::{Handle, Slab};
use super::waiter::{Via, Waiter};
use crate::api::{now_ms, Ctx, TimerId};
use crate::args::Wait;
use crate::kinds::Want;
use crate::notify;
use crate::numbers::NumberMap;
use crate::stats;
use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::rc::Rc;

#[derive(Default)]
pub(super) struct Queue {
    /// Waiters' sequence numbers in arrival order. Entries of waiters that left early stay
    /// until they reach the front or the queue is compacted.
    pub(super) order: VecDeque<u64>,
    pub(super) live: usize,
    /// How many of the live waiters are part of a request for several keys.
    pub(super) grouped: usize,
}

#[derive(Default)]
pub(super) struct Registry {
    /// Every waiter, by its handle.
    pub(super) waiters: Slab<Waiter>,
    /// Blocked clients to their waiter.
    pub(super) blocked: HashMap<usize, u64>,
    /// How many of `waiters` are the further places of requests for several keys.
    pub(super) members: usize,
    /// Connections that receive grant messages to their waiters (and entries that left, until
    /// compacted): (sequence numbers, live count).
    pub(super) receivers: HashMap<u64, (Vec<u64>, usize)>,
    pub(super) queues: NumberMap<i32, HashMap<Rc<[u8]>, Queue>>,
    /// Waiters that carry a request id (blocked or told by message; a request for several keys
    /// by its first key), by a hash of (db, key, owner, id): a retried call finds its entry
    /// without walking the queue (the waiter found is checked).
    pub(super) requests: HashMap<u64, Handle>,
    /// A 32-bit hash of each waiter's (db, owner), by slot (0: empty): deadlock detection asks
    /// where the holders it meets wait, and a scan of this table answers it at a few bytes a
    /// waiter. Grown like the slab, by an eighth.
    pub(super) owner_hashes: Vec<u32>,
    /// Wait deadlines, to wake the event loop at each: Redis 7.0 notices a blocked client's
    /// timeout only in `beforeSleep`, which otherwise may run ~100 ms late; a `NOTIFY` waiter's
    /// deadline is ours to keep. Deadlines of waiters that left early are skipped.
    pub(super) deadlines: BinaryHeap<Reverse<(i64, u64)>>,
    pub(super) wake_timer: Option<(TimerId, i64)>,
    /// Queues whose head left other than by being served: whoever took it out hands them to
    /// `SERVE_AGAIN` before its callback ends.
    pub(super) to_serve: Vec<(i32, Rc<[u8]>)>,
}

/// Serves queues again after their head left (set at load by the layer that serves: a
/// departure lets those behind in exactly as a release does).
pub type ServeAgain = fn(Ctx, Vec<(i32, Rc<[u8]>)>);

thread_local! {
    // Redis calls every callback of this module on its main thread.
    static REGISTRY: RefCell<Registry> = RefCell::default();
    static SERVE_AGAIN: Cell<Option<ServeAgain>> = const { Cell::new(None) };
}

/// Names who serves a queue again after a waiter left it.
pub fn on_departure(serve_again: ServeAgain) {
    SERVE_AGAIN.with(|s| s.set(Some(serve_again)));
}

/// Hands the queues whose head left to `SERVE_AGAIN`. Every entry point that takes waiters
/// out other than by serving them calls it before it returns.
pub(super) fn serve_departed(ctx: Ctx) {
    let keys = with(|r| std::mem::take(&mut r.to_serve));
    if keys.is_empty() {
        return;
    }
    if let Some(serve_again) = SERVE_AGAIN.with(Cell::get) {
        serve_again(ctx, keys);
    }
}

/// Runs `f` on the registry. `f` must not call back into code that uses the registry.
pub(super) fn with<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    REGISTRY.with(|r| f(&mut r.borrow_mut()))
}

impl Registry {
    pub(super) fn queue(&self, db: i32, key: &[u8]) -> Option<&Queue> {
        self.queues.get(&db)?.get(key)
    }

    /// The live waiters of (db, key), in queue order.
    pub(super) fn in_order<'a>(
        &'a self,
        db: i32,
        key: &[u8],
    ) -> impl Iterator<Item = (u64, &'a Waiter)> {
        self.queue(db, key)
            .into_iter()
            .flat_map(|q| q.order.iter())
            .filter_map(|seq| self.waiters.get(*seq).map(|w| (*seq, w)))
    }

    /// Puts a waiter at the back of the queue for (db, key).
    pub(super) fn push(&mut self, db: i32, key: &[u8], ask: Ask, via: Via, wait: Wait) -> Handle {
        let queues = self.queues.entry(db).or_default();
        // One shared copy of the key name for the queue and all its waiters.
        let key = queues
            .get_key_value(key)
            .map_or_else(|| Rc::from(key), |(k, _)| k.clone());
        let receiver = ask.notify();
        let deadline = match (wait, via) {
            (_, Via::Member) | (Wait::Forever, _) => None,
            (Wait::Ms(ms), _) => Some(now_ms() + ms + 1),
        };
        let seq = self.waiters.insert(Waiter {
            db,
            key: key.clone(),
            ask,
            via,
            group: None,
            deadline,
        });
        // Most locks have one waiter: room for one, not the four a first push makes.
        let queue = queues.entry(key).or_insert_with(|| Queue {
            order: VecDeque::with_capacity(1),
            live: 0,
            grouped: 0,
        });
        queue.order.push_back(seq);
        queue.live += 1;
        match (via, receiver) {
            (Via::Blocked(bc), _) => {
                self.blocked.insert(bc.get(), seq);
            }
            (Via::Message, Some(client)) => self.add_receiver(client, seq),
            (Via::Member, _) => self.members += 1,
            (Via::Message, None) => {}
        }
        if let Some(at) = deadline {
            self.deadlines.push(Reverse((at, seq)));
        }
        if let Some(request) = self.waiters.get(seq).and_then(Waiter::request) {
            self.requests.insert(request, seq);
        }
        if let Some(hash) = self.waiters.get(seq).map(Waiter::owner_hash) {
            let index = Slab::<Waiter>::index(seq);
            if index >= self.owner_hashes.len() {
                let more = (index + 1 - self.owner_hashes.len()).max(self.owner_hashes.len() / 8);
                self.owner_hashes.reserve_exact(more);
                self.owner_hashes.resize(index + 1, 0);
            }
            self.owner_hashes[index] = hash;
        }
        seq
    }

    pub(super) fn add_receiver(&mut self, client: u64, seq: u64) {
        let (seqs, live) = self.receivers.entry(client).or_default();
        seqs.push(seq);
        *live += 1;
    }

    /// Takes a waiter out of the registry and its queues, the whole request when it asks for
    /// several keys: returns the entry to answer (a request's lead). The other queues such a
    /// request headed are served again (`to_serve`): their next waiters may enter now.
    pub(super) fn take(&mut self, seq: Handle) -> Option<Waiter> {
        let Some(group) = self.waiters.get(seq)?.group.clone() else {
            return self.take_entry(seq);
        };
        let heads: Vec<(i32, Rc<[u8]>)> = group
            .members()
            .filter(|(_, member)| *member != seq && self.heads(*member))
            .filter_map(|(_, member)| self.waiters.get(member).map(|w| (w.db, w.key.clone())))
            .collect();
        let mut lead = None;
        for (index, member) in group.members() {
            let taken = self.take_entry(member);
            if index == 0 {
                lead = taken;
            }
        }
        for (db, key) in heads {
            if self.queue(db, &key).is_some() {
                self.to_serve.push((db, key));
            }
        }
        lead
    }

    /// Whether `seq` is the first live waiter of its queue.
    pub(super) fn heads(&self, seq: Handle) -> bool {
        self.waiters
            .get(seq)
            .and_then(|w| self.queue(w.db, &w.key))
            .is_some_and(|q| q.order.front() == Some(&seq))
    }

    /// Takes one entry out of the registry and its queue.
    pub(super) fn take_entry(&mut self, seq: Handle) -> Option<Waiter> {
        let waiter = self.waiters.remove(seq)?;
        if let Some(request) = waiter.request() {
            if self.requests.get(&request) == Some(&seq) {
                self.requests.remove(&request);
            }
        }
        if let Some(hash) = self.owner_hashes.get_mut(Slab::<Waiter>::index(seq)) {
            *hash = 0;
        }
        match (waiter.via, waiter.receiver()) {
            (Via::Blocked(bc), _) => {
                self.blocked.remove(&bc.get());
            }
            (Via::Message, Some(client)) => self.drop_receiver(client),
            (Via::Member, _) => self.members -= 1,
            (Via::Message, None) => {}
        }
        let (db, key) = (waiter.db, waiter.key.clone());
        if let Some(queue) = self.queues.get_mut(&db).and_then(|q| q.get_mut(&key)) {
            queue.live -= 1;
            queue.grouped -= usize::from(waiter.group.is_some());
            if queue.live == 0 {
                drop_queue(self, db, &key);
            } else {
                // The front entry is always a live waiter: the head is found in O(1).
                let waiters = &self.waiters;
                while queue.order.front().is_some_and(|s| !waiters.contains(*s)) {
                    queue.order.pop_front();
                }
                if queue.order.len() > 2 * queue.live + 16 {
                    queue.order.retain(|seq| waiters.contains(*seq));
                }
            }
        }
        Some(waiter)
    }

    /// Takes a waiter out that leaves unserved (timeout, disconnect, cancel, unblock, a
    /// receiver gone): if it headed a queue that others still wait in, that queue is served
    /// again, since its new head may be let in now.
    pub(super) fn depart(&mut self, seq: Handle) -> Option<Waiter> {
        let (db, key) = self.waiters.get(seq).map(|w| (w.db, w.key.clone()))?;
        let was_head = self.heads(seq);
        let waiter = self.take(seq)?;
        if was_head && self.queue(db, &key).is_some() {
            self.to_serve.push((db, key));
        }
        Some(waiter)
    }

    /// The entry that answers for `waiter`: its request's lead, or itself.
    pub(super) fn lead_of<'a>(&'a self, waiter: &'a Waiter) -> &'a Waiter {
        waiter
            .group
            .as_ref()
            .and_then(|g| self.waiters.get(g.lead()))
            .unwrap_or(waiter)
    }

    pub(super) fn drop_receiver(&mut self, client: u64) {
        let Some((seqs, live)) = self.receivers.get_mut(&client) else {
            return;
        };
        *live -= 1;
        if *live == 0 {
            self.receivers.remove(&client);
        } else if seqs.len() > 2 * *live + 16 {
            let waiters = &self.waiters;
            seqs.retain(|seq| {
                waiters
                    .get(*seq)
                    .is_some_and(|w| w.receiver() == Some(client))
            });
        }
    }
}

impl Registry {
    /// Puts a request at the back of the queue of each of `keys` (one key: an ordinary
    /// waiter). Returns its lead's handle (None: no keys, nothing pushed).
    pub(super) fn push_all(
        &mut self,
        db: i32,
        keys: &[&[u8]],
        ask: Ask,
        via: Via,
        wait: Wait,
    ) -> Option<Handle> {
        let (first, others) = keys.split_first()?;
        let members: Vec<Ask> = others.iter().map(|_| ask.member()).collect();
        let lead = self.push(db, first, ask, via, wait);
        if others.is_empty() {
            return Some(lead);
        }
        let mut seqs = vec![lead];
        for (key, member) in others.iter().zip(members) {
            seqs.push(self.push(db, key, member, Via::Member, wait));
        }
        let keys = seqs
            .iter()
            .filter_map(|s| self.waiters.get(*s).map(|w| w.key.clone()))
            .collect();
        let group = Rc::new(Group {
            keys,
            seqs: seqs.into_boxed_slice(),
        });
        for (_, seq) in group.members() {
            let Some(waiter) = self.waiters.get_mut(seq) else {
                continue;
            };
            waiter.group = Some(group.clone());
            let (db, key) = (waiter.db, waiter.key.clone());
            if let Some(queue) = self.queues.get_mut(&db).and_then(|q| q.get_mut(&key)) {
                queue.grouped += 1;
            }
        }
        Some(lead)
    }

    /// Whether every entry of `group` heads its queue: only then may it be let in.
    pub(super) fn heads_all(&self, group: &Group) -> bool {
        group.members().all(|(_, seq)| self.heads(seq))
    }
}

/// `next_want`, with the request for several keys the head belongs to, if it does.
pub(super) fn next_head(db: i32, key: &[u8]) -> Option<(Want, Option<Rc<Group>>)> {
    loop {
        let (seq, want, group, receiver) = with(|r| {
            let (seq, w) = r.in_order(db, key).next()?;
            Some((seq, w.ask.want, w.group.clone(), r.lead_of(w).receiver()))
        })?;
        match receiver {
            Some(client) if !notify::reachable(client) => {
                stats::NOTIFY_SKIPPED.add();
                with(|r| r.take(seq));
                serve_departed(notify::own_ctx());
            }
            _ => return Some((want, group)),
        }
    }
}

/// Takes the head of (db, key)'s queue out, as `next_want` left it: the caller must `deliver`
/// to it.
pub(super) fn take_head(db: i32, key: &[u8]) -> Option<Waiter> {
    with(|r| {
        let seq = *r.queue(db, key)?.order.front()?;
        r.take(seq)
    })
}

pub(super) fn drop_queue(r: &mut Registry, db: i32, key: &[u8]) {
    let Some(queues) = r.queues.get_mut(&db) else {
        return;
    };
    queues.remove(key);
    if queues.is_empty() {
        r.queues.remove(&db);
    }
}
