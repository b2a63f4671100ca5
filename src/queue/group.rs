//! Requests for several plain locks at once (`RLOCK.ACQUIREALL`): one entry in each key's
//! queue, all pushed in one step, so two requests keep the same order in every queue they
//! share. The first entry (the lead) carries the waiter's connection, deadline and request
//! id; the others (members) only hold its places. Taking any entry out takes the whole request
//! out (`Registry::take`), and it is let in only when it heads every one of its queues.

use super::slab::Handle;
use std::rc::Rc;

pub struct Group {
    /// Its keys, in the request's order: the order of the tokens it is told.
    pub keys: Box<[Rc<[u8]>]>,
    pub(super) seqs: Box<[Handle]>,
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
