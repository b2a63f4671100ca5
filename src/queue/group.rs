//! Requests for several plain locks at once (`RLOCK.ACQUIREALL`): one entry in each key's
//! queue, all pushed in one step, so two requests keep the same order in every queue they
//! share. The first entry (the lead) carries the waiter's connection, deadline and request
//! id; the others (members) only hold its places. Taking any entry out takes the whole request
//! out (`Registry::take`), and it is let in only when it heads every one of its queues.

use super::slab::Handle;
use super::{Registry, Via};
use crate::args::Wait;
use crate::queue::Ask;
use std::rc::Rc;

pub struct Group {
    /// Its keys, in the request's order: the order of the tokens it is told.
    pub keys: Box<[Rc<[u8]>]>,
    seqs: Box<[Handle]>,
}

impl Group {
    /// (index, entry) of each of its entries, the lead first.
    pub(super) fn members(&self) -> impl Iterator<Item = (usize, Handle)> + '_ {
        self.seqs.iter().copied().enumerate()
    }

    pub(super) fn lead(&self) -> Handle {
        self.seqs[0]
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
