//! Deadlock detection: a wait that would close a cycle of owners (O1 holds A and waits for B,
//! O2 holds B and now asks for A) is refused at once. The search is pure, over what the
//! queues and the lock hashes say (`WaitsFor`); an owner is one thread of control.
//!
//! Edges go from a waiter to the owners that keep it out: each family says which (its
//! `Family::blockers`, through the family contract: the holders its request excludes, and the
//! waiters ahead of it that keep it out too). A request for several keys waits for every key
//! it names, as one owner. Only the families whose waiters wait for owners are searched
//! (`Family::waits_for_owners`): permits and counts are held by no one owner.

use crate::acl::{Access, Caller};
use crate::api::{Ctx, OwnedStr};
use crate::config;
use crate::error::{Error, Result};
use crate::families::contract;
use crate::kinds::Want;
use crate::queue;
use crate::stats;
use crate::store::LockKey;
use std::collections::HashSet;
use std::rc::Rc;

/// How many owners a search visits at most: past that it gives up (no cycle reported).
pub const MAX_OWNERS: usize = 1000;

/// What the search asks about the server's state.
pub trait WaitsFor {
    /// The owners that keep a request for `want` of `key` by `owner` out, given the waiters
    /// ahead of it in the queue (all of them when `owner` is not queued there).
    fn blockers(&mut self, key: &[u8], want: Want, owner: &[u8]) -> Vec<Vec<u8>>;
    /// Where `owner` waits now: (key, want) of each of its queue entries.
    fn waits_of(&mut self, owner: &[u8]) -> Vec<(Rc<[u8]>, Want)>;
}

/// One step of a cycle: `waiter` waits for `key`, kept out by `blocker`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub waiter: Vec<u8>,
    pub key: Vec<u8>,
    pub blocker: Vec<u8>,
}

/// The cycle that `owner`'s wait for `key` (asking `want`) would close, from `owner` back to
/// it; None when there is none (or the search gave up after `MAX_OWNERS` owners).
pub fn cycle(world: &mut impl WaitsFor, key: &[u8], want: Want, owner: &[u8]) -> Option<Vec<Step>> {
    // Breadth first, each owner expanded once; every step found keeps the index of the step
    // it came from, so the cycle is read back from its last step.
    let mut steps: Vec<(Step, Option<usize>)> = Vec::new();
    let mut expanded: HashSet<Vec<u8>> = HashSet::new();
    for blocker in world.blockers(key, want, owner) {
        steps.push((step(owner, key, blocker), None));
    }
    let mut next = 0;
    while next < steps.len() {
        let at = next;
        next += 1;
        let last = steps[at].0.blocker.clone();
        if last == owner {
            let mut cycle = Vec::new();
            let mut index = Some(at);
            while let Some(i) = index {
                cycle.push(steps[i].0.clone());
                index = steps[i].1;
            }
            cycle.reverse();
            return Some(cycle);
        }
        if expanded.len() >= MAX_OWNERS || !expanded.insert(last.clone()) {
            continue;
        }
        for (waiting_on, wanting) in world.waits_of(&last) {
            for blocker in world.blockers(&waiting_on, wanting, &last) {
                steps.push((step(&last, &waiting_on, blocker), Some(at)));
            }
        }
    }
    None
}

fn step(waiter: &[u8], key: &[u8], blocker: Vec<u8>) -> Step {
    Step {
        waiter: waiter.to_vec(),
        key: key.to_vec(),
        blocker,
    }
}

/// The cycle as the error reply words it: `a waits for k1 held by b; b waits for k2 held by a`.
/// A step on a key the caller may not read (`visible` says) is worded without the key and its
/// holder, and a run of such steps as one: the reply names nothing outside the caller's ACL.
pub fn describe(cycle: &[Step], visible: impl Fn(&[u8]) -> bool) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut hidden_before = false;
    for s in cycle {
        let waiter = String::from_utf8_lossy(&s.waiter);
        let hidden = !visible(&s.key);
        match (hidden, hidden_before) {
            (true, true) => {}
            (true, false) => words.push(format!("{waiter} waits for a key this user may not read")),
            (false, _) => words.push(format!(
                "{waiter} waits for {} held by {}",
                String::from_utf8_lossy(&s.key),
                String::from_utf8_lossy(&s.blocker)
            )),
        }
        hidden_before = hidden;
    }
    words.join("; ")
}

/// The server's state as the search asks it: queues of `db` and the lock hashes there, read
/// through the command's context.
pub struct Server {
    pub ctx: Ctx,
    pub db: i32,
}

impl WaitsFor for Server {
    fn blockers(&mut self, key: &[u8], want: Want, owner: &[u8]) -> Vec<Vec<u8>> {
        let name = OwnedStr::new(key);
        let Ok(lock) = LockKey::open(self.ctx, name.0, false) else {
            return Vec::new();
        };
        let mut blockers = contract::serving(want)
            .map(|family| family.blockers(&lock, self.db, want, owner))
            .unwrap_or_default();
        blockers.retain(|b| b != owner);
        blockers
    }

    fn waits_of(&mut self, owner: &[u8]) -> Vec<(Rc<[u8]>, Want)> {
        queue::waits_of(self.db, owner)
    }
}

/// Refuses a wait for `want` of `key` by `owner` that would close a cycle (`DEADLOCK`), when
/// detection is on. Cheap unless another key has waiters: a cycle needs a holder that waits.
pub fn check(ctx: Ctx, (db, key): (i32, &[u8]), want: Want, owner: &[u8]) -> Result<()> {
    let searched = contract::serving(want).is_some_and(|family| family.waits_for_owners());
    if !config::deadlock_detection() || !searched {
        return Ok(());
    }
    let others_wait = queue::locks_with_waiters() > usize::from(queue::count(db, key) > 0);
    if !others_wait {
        return Ok(());
    }
    stats::DEADLOCK_SEARCHES.add();
    match cycle(&mut Server { ctx, db }, key, want, owner) {
        Some(steps) => {
            stats::DEADLOCKS.add();
            let caller = Caller::of(ctx)?;
            let visible = |key: &[u8]| caller.may(Access::Read, key);
            Err(Error::Deadlock(describe(&steps, visible)))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::Word;

    /// A waiter's want: the search itself never looks at it (the table below answers alike).
    const LOCK: Want = Want::one(&Word("lock"));
    use std::collections::HashMap;

    /// Plain locks: key -> holder; owner -> keys it waits for.
    #[derive(Default)]
    struct Table {
        held: HashMap<&'static str, &'static str>,
        waits: HashMap<&'static str, Vec<&'static str>>,
    }

    impl WaitsFor for Table {
        fn blockers(&mut self, key: &[u8], _want: Want, owner: &[u8]) -> Vec<Vec<u8>> {
            let key = std::str::from_utf8(key).unwrap_or("");
            self.held
                .get(key)
                .filter(|h| h.as_bytes() != owner)
                .map(|h| vec![h.as_bytes().to_vec()])
                .unwrap_or_default()
        }

        fn waits_of(&mut self, owner: &[u8]) -> Vec<(Rc<[u8]>, Want)> {
            let owner = std::str::from_utf8(owner).unwrap_or("");
            self.waits
                .get(owner)
                .map(|keys| {
                    keys.iter()
                        .map(|k| (Rc::from(k.as_bytes()), LOCK))
                        .collect()
                })
                .unwrap_or_default()
        }
    }

    fn table(
        held: &[(&'static str, &'static str)],
        waits: &[(&'static str, &'static str)],
    ) -> Table {
        let mut t = Table::default();
        t.held.extend(held.iter().copied());
        for (owner, key) in waits {
            t.waits.entry(owner).or_default().push(key);
        }
        t
    }

    #[test]
    fn cycles_are_found_and_only_cycles() {
        // (held: key -> holder, waits: owner -> key, the new wait (owner, key), cycle words)
        let cases: [(&[(&str, &str)], &[(&str, &str)], (&str, &str), Option<&str>); 5] = [
            (&[("a", "o1"), ("b", "o2")], &[("o1", "b")], ("o2", "a"),
             Some("o2 waits for a held by o1; o1 waits for b held by o2")),
            (&[("a", "o1"), ("b", "o2")], &[], ("o2", "a"), None),
            (&[("a", "o1"), ("b", "o2"), ("c", "o3")], &[("o1", "b"), ("o2", "c")], ("o3", "a"),
             Some("o3 waits for a held by o1; o1 waits for b held by o2; o2 waits for c held by o3")),
            (&[("a", "o1"), ("b", "o2"), ("c", "o3")], &[("o1", "b"), ("o2", "c")], ("o4", "a"), None),
            // Its own holding never blocks an owner (a re-entry).
            (&[("a", "o1")], &[], ("o1", "a"), None),
        ];
        for (held, waits, (owner, key), expected) in cases {
            let mut world = table(held, waits);
            let found = cycle(&mut world, key.as_bytes(), LOCK, owner.as_bytes());
            assert_eq!(
                found.as_deref().map(|c| describe(c, |_| true)).as_deref(),
                expected,
                "{owner} -> {key}"
            );
        }
    }

    #[test]
    fn keys_the_caller_may_not_read_are_not_named() {
        let mut world = table(
            &[("a", "o1"), ("s1", "o2"), ("s2", "o3")],
            &[("o1", "s1"), ("o2", "s2")],
        );
        let found = cycle(&mut world, b"a", LOCK, b"o3").expect("a cycle");
        let visible = |key: &[u8]| !key.starts_with(b"s");
        assert_eq!(
            describe(&found, visible),
            "o3 waits for a held by o1; o1 waits for a key this user may not read"
        );
    }

    #[test]
    fn a_long_chain_without_a_cycle_ends() {
        let mut world = Table::default();
        let names: Vec<&'static str> = (0..3000)
            .map(|i| &*Box::leak(format!("o{i}").into_boxed_str()))
            .collect();
        let keys: Vec<&'static str> = (0..3000)
            .map(|i| &*Box::leak(format!("k{i}").into_boxed_str()))
            .collect();
        for i in 0..2999 {
            world.held.insert(keys[i], names[i]);
            world.waits.insert(names[i], vec![keys[i + 1]]);
        }
        assert_eq!(cycle(&mut world, b"k0", LOCK, b"new"), None);
    }
}
