//! Watchdog bindings: which holdings the server keeps renewing, for which connection, and
//! when each renewal is due. Pure bookkeeping, time as an argument; `upkeep` does the writes.
//!
//! A binding belongs to a holding: a lock, an owner and the holding's token. A plain lock has
//! one holding at a time; a read-write lock one per reader (or its writer). A renewal or a
//! disconnect only touches the lock if that owner still holds it with that token, so a later
//! holding at the same key (after a DEL, a flush, SWAPDB) is never renewed or released by an old
//! binding. Every operation is O(log n) in the number of bindings (and O(holders) of one lock).

use super::spare::{keep_spare, take_one};
use crate::kinds::LockType;
use crate::numbers::NumberMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::rc::Rc;

pub type LockId = (i32, Rc<[u8]>);
/// A holding: its lock (db, key) and its owner.
type HoldingId = (i32, Rc<[u8]>, Rc<[u8]>);

/// A binding as kept: what was bound, and which schedule entries are its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    bind: Bind,
    /// Tells this binding's schedule entry from those of earlier bindings of the holding.
    generation: u64,
}

impl std::ops::Deref for Binding {
    type Target = Bind;

    fn deref(&self) -> &Bind {
        &self.bind
    }
}

#[derive(Default)]
pub struct Watchdog {
    /// db -> key -> the lock's bound holdings: looked up by a borrowed key, no allocation.
    bindings: NumberMap<i32, HashMap<Rc<[u8]>, Vec<Binding>>>,
    count: usize,
    /// connection -> its bound holdings (a list: a holding is bound to one connection at a
    /// time, unbound before it is bound again, and looked for only to be dropped). A
    /// connection's list stays, empty, until it closes: an uncontended pair with `WATCHDOG`
    /// freed it and built it again.
    by_client: NumberMap<u64, Vec<HoldingId>>,
    /// (due ms, generation, holding); entries whose generation no longer matches are skipped.
    schedule: BinaryHeap<Reverse<(i64, u64, HoldingId)>>,
    /// The generations of the bindings kept now: a schedule entry is live if its generation
    /// is here (each binding has a generation of its own), told without hashing its key.
    live: NumberMap<u64, ()>,
    next_generation: u64,
    /// A lock's emptied list, kept for the next lock bound (`spare_list`).
    spare: Vec<Binding>,
}

/// When the renewal after one at `now_ms` is due: about every third of the lease, minus a
/// spread taken from the key so that locks taken in one burst do not renew in one burst.
pub fn next_due(now_ms: i64, lease_ms: i64, key: &[u8]) -> i64 {
    let spread = (lease_ms / 12).max(1);
    let hash = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    now_ms + (lease_ms / 3).max(1) - (hash % spread as u64) as i64
}

/// What a binding holds: the holding (owner, token), its connection, and how to renew it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bind {
    pub owner: Rc<[u8]>,
    /// None for a lock a Redisson-protocol client took (its scripts issue no token).
    pub token: Option<i64>,
    pub client: u64,
    /// The lease each renewal sets (the holding's `PX`).
    pub lease_ms: i64,
    pub kind: LockType,
    /// False for a grant told by message until its owner confirms it: the connection's close
    /// ends it, but nothing renews it.
    pub renewing: bool,
}

impl Watchdog {
    /// Binds a holding of `lock` to a connection, replacing the holding's earlier binding.
    pub fn bind(&mut self, lock: LockId, bind: Bind, now_ms: i64) {
        let (db, key) = lock;
        self.unbind(db, &key, &bind.owner);
        let generation = self.next_generation;
        self.next_generation += 1;
        let holding = (db, key.clone(), bind.owner.clone());
        if bind.renewing {
            let due = next_due(now_ms, bind.lease_ms, &key);
            self.schedule
                .push(Reverse((due, generation, holding.clone())));
        }
        self.by_client.entry(bind.client).or_default().push(holding);
        self.live.insert(generation, ());
        self.count += 1;
        self.bindings
            .entry(db)
            .or_default()
            .entry(key)
            .or_insert_with(|| std::mem::take(&mut self.spare))
            .push(Binding { bind, generation });
    }

    /// Ends the binding of `owner`'s holding of the lock.
    pub fn unbind(&mut self, db: i32, key: &[u8], owner: &[u8]) -> Option<Binding> {
        if self.count == 0 {
            return None;
        }
        // A db's map stays (16 at most by default): dropping it with its last lock made every
        // uncontended pair with `WATCHDOG` free it and build it again.
        let keys = self.bindings.get_mut(&db)?;
        let binding = take_one(keys, key, &mut self.spare, |b| *b.owner == *owner)?;
        self.forget(db, key, &binding);
        Some(binding)
    }

    /// Ends every binding of the lock (it is free, or a new holding replaces the old). Returns
    /// how many there were.
    pub fn unbind_lock(&mut self, db: i32, key: &[u8]) -> usize {
        // No binding at all (every grant of a lock unbinds it first): no key is hashed.
        if self.count == 0 {
            return 0;
        }
        // The lock's list leaves its map in the one look-up that finds it.
        let Some(taken) = self.bindings.get_mut(&db).and_then(|k| k.remove(key)) else {
            return 0;
        };
        for binding in &taken {
            self.forget(db, key, binding);
        }
        let ended = taken.len();
        keep_spare(&mut self.spare, taken);
        ended
    }

    /// Drops the indexes of a binding just taken out of its lock's list.
    fn forget(&mut self, db: i32, key: &[u8], binding: &Binding) {
        self.count -= 1;
        self.live.remove(&binding.generation);
        if let Some(holdings) = self.by_client.get_mut(&binding.client) {
            holdings.retain(|(d, k, o)| !(*d == db && **k == *key && *o == binding.owner));
        }
    }

    pub fn get(&self, db: i32, key: &[u8], owner: &[u8]) -> Option<&Binding> {
        self.bindings
            .get(&db)?
            .get(key)?
            .iter()
            .find(|b| *b.owner == *owner)
    }

    fn get_mut(&mut self, db: i32, key: &[u8], owner: &[u8]) -> Option<&mut Binding> {
        self.bindings
            .get_mut(&db)?
            .get_mut(key)?
            .iter_mut()
            .find(|b| *b.owner == *owner)
    }

    /// The owner confirmed a grant told by message (`RENEW ... WATCHDOG`): renewals start, on
    /// the connection the grant was told to. Returns whether there was such a binding of the
    /// holding with `token`.
    pub fn confirm(
        &mut self,
        lock: LockId,
        owner: &[u8],
        token: Option<i64>,
        lease_ms: i64,
        now_ms: i64,
    ) -> bool {
        let (db, key) = lock;
        let Some(b) = self.get_mut(db, &key, owner) else {
            return false;
        };
        if b.renewing || b.token != token {
            return false;
        }
        b.bind.renewing = true;
        b.bind.lease_ms = lease_ms;
        let (generation, owner) = (b.generation, b.owner.clone());
        let due = next_due(now_ms, lease_ms, &key);
        self.schedule
            .push(Reverse((due, generation, (db, key, owner))));
        true
    }

    /// A plain `RENEW ... PX n` sets the lease the watchdog keeps renewing.
    pub fn set_lease(&mut self, db: i32, key: &[u8], owner: &[u8], lease_ms: i64) {
        if let Some(b) = self.get_mut(db, key, owner) {
            b.bind.lease_ms = lease_ms;
        }
    }

    /// The bound holding lives on under another token (a writer that downgraded keeps reading).
    pub fn retoken(&mut self, db: i32, key: &[u8], owner: &[u8], token: Option<i64>) {
        if let Some(b) = self.get_mut(db, key, owner) {
            b.bind.token = token;
        }
    }

    /// Every binding of a connection that closed, removed, and its list with them.
    pub fn take_client(&mut self, client: u64) -> Vec<(LockId, Binding)> {
        let holdings = self.by_client.remove(&client).unwrap_or_default();
        holdings
            .into_iter()
            .filter_map(|(db, key, owner)| self.unbind(db, &key, &owner).map(|b| ((db, key), b)))
            .collect()
    }

    /// Every binding, removed (the server turned replica).
    pub fn take_all(&mut self) -> Vec<(LockId, Binding)> {
        self.by_client.clear();
        self.schedule.clear();
        self.live.clear();
        self.count = 0;
        self.bindings
            .drain()
            .flat_map(|(db, keys)| {
                keys.into_iter()
                    .flat_map(move |(k, bs)| bs.into_iter().map(move |b| ((db, k.clone()), b)))
            })
            .collect()
    }

    /// Up to `limit` bindings whose renewal is due at `now_ms`, each rescheduled for its next
    /// renewal as it is taken (the caller unbinds those it finds ended).
    pub fn due(&mut self, now_ms: i64, limit: usize) -> Vec<(LockId, Binding)> {
        let mut out = Vec::new();
        while out.len() < limit {
            if self
                .schedule
                .peek()
                .is_none_or(|Reverse((due, _, _))| *due > now_ms)
            {
                break;
            }
            let Some(Reverse((_, generation, (db, key, owner)))) = self.schedule.pop() else {
                break;
            };
            // A stale entry is skipped without a look-up by key.
            let live = self.live.contains_key(&generation);
            let Some(binding) = live
                .then(|| self.get(db, &key, &owner))
                .flatten()
                .filter(|b| b.generation == generation)
                .cloned()
            else {
                continue;
            };
            let next = next_due(now_ms, binding.lease_ms, &key);
            self.schedule
                .push(Reverse((next, generation, (db, key.clone(), owner))));
            out.push(((db, key), binding));
        }
        out
    }

    /// When the next renewal is due, if any binding is left.
    pub fn next_due_at(&mut self) -> Option<i64> {
        // Drop stale entries on top so the timer is not armed for nothing: an entry is live
        // while a binding of its generation is kept (no look-up by key and owner).
        while let Some(Reverse((_, generation, _))) = self.schedule.peek() {
            if self.live.contains_key(generation) {
                break;
            }
            self.schedule.pop();
        }
        self.schedule.peek().map(|Reverse((due, _, _))| *due)
    }

    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether a holding is bound to `client` now.
    #[cfg(test)]
    pub fn has_client(&self, client: u64) -> bool {
        self.by_client.get(&client).is_some_and(|h| !h.is_empty())
    }
}

#[cfg(test)]
mod tests;
