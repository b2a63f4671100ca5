//! What the queues hold, asked without changing them: counts, keys, where an owner waits and who is ahead.

use super::registry::with;
use super::waiter::owner_hash;
use crate::api::bytes;
use crate::kinds::Want;
use std::collections::HashMap;
use std::rc::Rc;

/// The queue's own copy of the key name, to share (None: nobody waits there).
pub fn shared_key(db: i32, key: &[u8]) -> Option<Rc<[u8]>> {
    with(|r| {
        r.queues
            .get(&db)?
            .get_key_value(key)
            .map(|(k, _)| k.clone())
    })
}

pub fn count(db: i32, key: &[u8]) -> usize {
    with(|r| r.queue(db, key).map_or(0, |q| q.live))
}

/// Waiting requests (one for a request for several keys, though it waits in several queues).
pub fn total() -> usize {
    with(|r| r.waiters.len() - r.members)
}

/// Waiting requests told by message (`NOTIFY`).
pub fn notified() -> usize {
    with(|r| r.waiters.len() - r.members - r.blocked.len())
}

pub fn locks_with_waiters() -> usize {
    with(|r| r.queues.values().map(HashMap::len).sum())
}

/// The keys with waiters in `db`, or in every db.
pub fn queued_keys(db: Option<i32>) -> Vec<(i32, Rc<[u8]>)> {
    with(|r| {
        r.queues
            .iter()
            .filter(|(d, _)| db.is_none_or(|db| db == **d))
            .flat_map(|(d, q)| q.keys().map(move |k| (*d, k.clone())))
            .collect()
    })
}

/// Where `owner` waits in `db`: (key, want) of each of its entries, found by a scan of the
/// waiters' owner hashes (4 bytes each).
pub fn waits_of(db: i32, owner: &[u8]) -> Vec<(Rc<[u8]>, Want)> {
    let hash = owner_hash(db, owner);
    with(|r| {
        r.owner_hashes
            .iter()
            .enumerate()
            .filter(|(_, h)| **h == hash)
            .filter_map(|(index, _)| r.waiters.at(index))
            .filter(|w| w.db == db && bytes(w.ask.owner.0) == owner)
            .map(|w| (w.key.clone(), w.ask.want))
            .collect()
    })
}

/// The owners and wants of the waiters of (db, key) ahead of `owner`'s first entry (all of
/// them when it has none), in queue order.
pub fn ahead_of(db: i32, key: &[u8], owner: &[u8]) -> Vec<(Vec<u8>, Want)> {
    with(|r| {
        r.in_order(db, key)
            .map(|(_, w)| (bytes(w.ask.owner.0), w.ask.want))
            .take_while(|(o, _)| *o != owner)
            .map(|(o, want)| (o.to_vec(), want))
            .collect()
    })
}

/// The owners of the requests for several keys that wait at (db, key) ahead of `owner`'s
/// first entry: a plain lock's waiter waits for them as for its holder, since a request
/// for several keys may head a queue whose key is free and keep it so. Free of cost where no
/// such request waits.
pub fn groups_ahead_of(db: i32, key: &[u8], owner: &[u8]) -> Vec<Vec<u8>> {
    with(|r| {
        if r.queue(db, key).is_none_or(|q| q.grouped == 0) {
            return Vec::new();
        }
        r.in_order(db, key)
            .map(|(_, w)| (bytes(w.ask.owner.0), w.group.is_some()))
            .take_while(|(o, _)| *o != owner)
            .filter(|(_, grouped)| *grouped)
            .map(|(o, _)| o.to_vec())
            .collect()
    })
}

/// What every live waiter of (db, key) asks for, in queue order (O(queue length): for INFO).
pub fn wants(db: i32, key: &[u8]) -> Vec<Want> {
    with(|r| r.in_order(db, key).map(|(_, w)| w.ask.want).collect())
}

/// How many live waiters of (db, key) want `want` (O(queue length): for `INFO` replies).
pub fn count_wanting(db: i32, key: &[u8], want: Want) -> usize {
    with(|r| {
        r.in_order(db, key)
            .filter(|(_, w)| w.ask.want == want)
            .count()
    })
}
