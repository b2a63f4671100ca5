//! Holdings whose owner hears of their loss: those granted with `NOTIFY` are told on their
//! grant channel when they end other than by the owner's release (lease end, `MAXHOLD`,
//! `FORCERELEASE`, `DEL`, a flush). Pure bookkeeping; `grants` sends the messages.

use super::spare::take_one;
use crate::kinds::Want;
use crate::numbers::NumberMap;
use std::collections::HashMap;
use std::rc::Rc;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub owner: Rc<[u8]>,
    /// The holding's token: the one a `lost` message names.
    pub token: i64,
    /// The connection told.
    pub client: u64,
    pub want: Want,
}

#[derive(Default)]
pub struct Notices {
    by_lock: NumberMap<i32, HashMap<Rc<[u8]>, Vec<Notice>>>,
    count: usize,
    /// A lock's emptied list, kept for the next lock noticed (`keep_spare`).
    spare: Vec<Notice>,
}

impl Notices {
    /// Tells `notice.client` of the loss of `notice.owner`'s holding of the lock (replacing an
    /// earlier notice of the same owner's).
    pub fn watch(&mut self, db: i32, key: Rc<[u8]>, notice: Notice) {
        self.forget(db, &key, &notice.owner);
        // One look-up by key: most locks have no list yet (a plain lock's went with its last
        // holding), and the caller's copy of the key serves the entry.
        let keys = self.by_lock.entry(db).or_default();
        keys.entry(key)
            .or_insert_with(|| std::mem::take(&mut self.spare))
            .push(notice);
        self.count += 1;
    }

    /// The owner's holding ended by its own release: nobody is told.
    pub fn forget(&mut self, db: i32, key: &[u8], owner: &[u8]) -> Option<Notice> {
        // None kept (a lock freed or granted without `NOTIFY`): no key is hashed.
        if self.count == 0 {
            return None;
        }
        // A db's map stays (16 at most by default): dropping it with its last lock made every
        // uncontended pair with `NOTIFY` free and build it again.
        let keys = self.by_lock.get_mut(&db)?;
        let notice = take_one(keys, key, &mut self.spare, |n| *n.owner == *owner);
        self.count -= usize::from(notice.is_some());
        notice
    }

    /// Every notice of the lock: its holdings all ended.
    pub fn take_lock(&mut self, db: i32, key: &[u8]) -> Vec<Notice> {
        if self.count == 0 {
            return Vec::new();
        }
        let Some(keys) = self.by_lock.get_mut(&db) else {
            return Vec::new();
        };
        let taken = keys.remove(key).unwrap_or_default();
        self.count -= taken.len();
        taken
    }

    pub fn watched(&self, db: i32, key: &[u8]) -> bool {
        self.by_lock.get(&db).is_some_and(|k| k.contains_key(key))
    }

    /// The locks with notices in `db`, or in every db.
    pub fn keys(&self, db: Option<i32>) -> Vec<(i32, Rc<[u8]>)> {
        self.by_lock
            .iter()
            .filter(|(d, _)| db.is_none_or(|db| db == **d))
            .flat_map(|(d, k)| k.keys().map(move |k| (*d, k.clone())))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(owner: &str, token: i64) -> Notice {
        Notice {
            owner: Rc::from(owner.as_bytes()),
            token,
            client: 7,
            want: Want::one(&crate::kinds::Word("read")),
        }
    }

    #[test]
    fn a_release_forgets_and_an_end_takes_the_rest() {
        let mut n = Notices::default();
        n.watch(0, Rc::from(&b"rw"[..]), notice("a", 1));
        n.watch(0, Rc::from(&b"rw"[..]), notice("b", 2));
        n.watch(0, Rc::from(&b"rw"[..]), notice("a", 3));
        n.watch(1, Rc::from(&b"rw"[..]), notice("a", 4));
        assert_eq!(n.len(), 3, "a's second holding replaced its first");
        assert_eq!(n.forget(0, b"rw", b"b").map(|x| x.token), Some(2));
        assert_eq!(n.forget(0, b"rw", b"b"), None);
        assert_eq!(n.take_lock(0, b"rw"), vec![notice("a", 3)]);
        assert!(!n.watched(0, b"rw"));
        assert!(n.watched(1, b"rw"));
        assert_eq!(n.keys(Some(1)).len(), 1);
        assert_eq!(n.keys(Some(0)).len(), 0);
        assert_eq!(n.len(), 1);
        assert_eq!(n.forget(1, b"rw", b"a").map(|x| x.token), Some(4));
        assert!(n.spare.capacity() > 0, "the emptied list is kept");
        n.watch(2, Rc::from(&b"k"[..]), notice("c", 5));
        assert_eq!(n.spare.capacity(), 0, "for the next lock");
        assert!(n.watched(2, b"k"));
    }
}
