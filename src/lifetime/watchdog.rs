//! Watchdog bindings: which holding the server keeps renewing, for which connection, and
//! when each renewal is due. Pure bookkeeping, time as an argument; `upkeep` does the writes.
//!
//! One binding per lock, and it belongs to the holding (owner and token): a renewal or a
//! disconnect only touches the lock if the holder is still that owner with that token, so a
//! later holding at the same key (after a DEL, a flush, SWAPDB) is never renewed or released
//! by an old binding. Every operation is O(log n) in the number of bindings.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::rc::Rc;

pub type LockId = (i32, Rc<[u8]>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub owner: Rc<[u8]>,
    /// None for a lock a Redisson-protocol client took (its scripts issue no token).
    pub token: Option<i64>,
    pub client: u64,
    /// The lease each renewal sets (the holding's `PX`).
    pub lease_ms: i64,
    /// Tells this binding's schedule entry from those of earlier bindings of the lock.
    generation: u64,
}

#[derive(Default)]
pub struct Watchdog {
    /// db -> key -> binding: looked up by a borrowed key, with no allocation.
    bindings: HashMap<i32, HashMap<Rc<[u8]>, Binding>>,
    count: usize,
    by_client: HashMap<u64, HashSet<LockId>>,
    /// (due ms, generation, lock); entries whose generation no longer matches are skipped.
    schedule: BinaryHeap<Reverse<(i64, u64, LockId)>>,
    next_generation: u64,
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

impl Watchdog {
    /// Binds the lock's holding (`owner`, `token`) to `client`, replacing any earlier binding.
    pub fn bind(
        &mut self,
        lock: LockId,
        owner: Rc<[u8]>,
        token: Option<i64>,
        client: u64,
        lease_ms: i64,
        now_ms: i64,
    ) {
        self.unbind(lock.0, &lock.1);
        let generation = self.next_generation;
        self.next_generation += 1;
        let due = next_due(now_ms, lease_ms, &lock.1);
        self.schedule.push(Reverse((due, generation, lock.clone())));
        self.by_client
            .entry(client)
            .or_default()
            .insert(lock.clone());
        self.count += 1;
        self.bindings.entry(lock.0).or_default().insert(
            lock.1,
            Binding {
                owner,
                token,
                client,
                lease_ms,
                generation,
            },
        );
    }

    pub fn unbind(&mut self, db: i32, key: &[u8]) -> Option<Binding> {
        let keys = self.bindings.get_mut(&db)?;
        let (key, binding) = keys.remove_entry(key)?;
        if keys.is_empty() {
            self.bindings.remove(&db);
        }
        self.count -= 1;
        if let Some(locks) = self.by_client.get_mut(&binding.client) {
            locks.remove(&(db, key));
            if locks.is_empty() {
                self.by_client.remove(&binding.client);
            }
        }
        Some(binding)
    }

    pub fn get(&self, db: i32, key: &[u8]) -> Option<&Binding> {
        self.bindings.get(&db)?.get(key)
    }

    /// A plain `RENEW ... PX n` sets the lease the watchdog keeps renewing.
    pub fn set_lease(&mut self, db: i32, key: &[u8], lease_ms: i64) {
        if let Some(b) = self
            .bindings
            .get_mut(&db)
            .and_then(|keys| keys.get_mut(key))
        {
            b.lease_ms = lease_ms;
        }
    }

    /// Every binding of a connection that closed, removed.
    pub fn take_client(&mut self, client: u64) -> Vec<(LockId, Binding)> {
        let locks = self.by_client.remove(&client).unwrap_or_default();
        locks
            .into_iter()
            .filter_map(|lock| self.unbind(lock.0, &lock.1).map(|b| (lock, b)))
            .collect()
    }

    /// Every binding, removed (the server turned replica).
    pub fn take_all(&mut self) -> Vec<(LockId, Binding)> {
        self.by_client.clear();
        self.schedule.clear();
        self.count = 0;
        self.bindings
            .drain()
            .flat_map(|(db, keys)| keys.into_iter().map(move |(k, b)| ((db, k), b)))
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
            let Some(Reverse((_, generation_taken, lock))) = self.schedule.pop() else {
                break;
            };
            let Some(binding) = self.get(lock.0, &lock.1).cloned() else {
                continue;
            };
            if binding.generation != generation_taken {
                continue;
            }
            let next = next_due(now_ms, binding.lease_ms, &lock.1);
            self.schedule
                .push(Reverse((next, binding.generation, lock.clone())));
            out.push((lock, binding));
        }
        out
    }

    /// When the next renewal is due, if any binding is left.
    pub fn next_due_at(&mut self) -> Option<i64> {
        // Drop stale entries on top so the timer is not armed for nothing.
        while let Some(Reverse((_, generation, lock))) = self.schedule.peek() {
            if self
                .get(lock.0, &lock.1)
                .is_some_and(|b| b.generation == *generation)
            {
                break;
            }
            self.schedule.pop();
        }
        self.schedule.peek().map(|Reverse((due, _, _))| *due)
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn has_client(&self, client: u64) -> bool {
        self.by_client.contains_key(&client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(key: &str) -> LockId {
        (0, Rc::from(key.as_bytes()))
    }

    fn owner(o: &str) -> Rc<[u8]> {
        Rc::from(o.as_bytes())
    }

    #[test]
    fn renewals_fall_due_about_every_third_of_the_lease() {
        for key in ["a", "b", "order:42", "x"] {
            let due = next_due(1_000, 30_000, key.as_bytes());
            assert!(
                (1_000 + 7_500..=1_000 + 10_000).contains(&due),
                "{key}: {due}"
            );
        }
        assert_eq!(next_due(0, 1, b"k"), 1, "never due at once");
    }

    #[test]
    fn due_bindings_are_taken_in_order_and_rescheduled() {
        let mut w = Watchdog::default();
        w.bind(lock("a"), owner("o"), Some(1), 7, 300, 0);
        w.bind(lock("b"), owner("o"), Some(2), 7, 3_000, 0);
        assert_eq!(w.next_due_at().map(|d| d <= 100), Some(true));
        assert!(w.due(50, 10).is_empty());
        let due = w.due(100, 10);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].0, lock("a"));
        // Rescheduled: due again a third of a lease later, not before.
        assert!(w.due(150, 10).is_empty());
        assert_eq!(w.due(200, 10).len(), 1);
        assert_eq!(w.due(1_000, 10).len(), 2, "a again, and b");
    }

    #[test]
    fn the_limit_spreads_a_burst_over_ticks() {
        let mut w = Watchdog::default();
        for i in 0..10 {
            w.bind(lock(&format!("k{i}")), owner("o"), Some(i), 1, 300, 0);
        }
        assert_eq!(w.due(1_000, 4).len(), 4);
        assert_eq!(w.due(1_000, 4).len(), 4);
        assert_eq!(w.due(1_000, 4).len(), 2);
    }

    #[test]
    fn rebinding_moves_the_lock_to_the_new_client_only() {
        let mut w = Watchdog::default();
        w.bind(lock("a"), owner("o"), Some(1), 7, 300, 0);
        w.bind(lock("a"), owner("o"), Some(1), 8, 300, 10);
        assert!(w.take_client(7).is_empty());
        assert_eq!(w.due(1_000, 10).len(), 1, "one schedule entry is live");
        let taken = w.take_client(8);
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].1.client, 8);
        assert_eq!(w.len(), 0);
        assert_eq!(w.next_due_at(), None);
    }

    #[test]
    fn a_closed_connection_takes_all_of_its_bindings() {
        let mut w = Watchdog::default();
        w.bind(lock("a"), owner("o"), Some(1), 7, 300, 0);
        w.bind(lock("b"), owner("p"), Some(2), 7, 300, 0);
        w.bind(lock("c"), owner("q"), Some(3), 9, 300, 0);
        let mut taken: Vec<_> = w.take_client(7).into_iter().map(|(l, _)| l).collect();
        taken.sort();
        assert_eq!(taken, vec![lock("a"), lock("b")]);
        assert_eq!(w.len(), 1);
        assert!(w.get(0, b"c").is_some());
    }

    #[test]
    fn set_lease_changes_what_renewals_set() {
        let mut w = Watchdog::default();
        w.bind(lock("a"), owner("o"), Some(1), 7, 300, 0);
        w.set_lease(0, b"a", 9_000);
        assert_eq!(w.get(0, b"a").map(|b| b.lease_ms), Some(9_000));
        let due = w.due(1_000, 10);
        assert_eq!(due[0].1.lease_ms, 9_000);
        assert!(
            w.due(3_000, 10).is_empty(),
            "next renewal a third of 9 s later"
        );
    }
}
