//! Full releases with a request id, remembered in the server's memory for the retry window
//! (`retries` says why a full release cannot be remembered in its hash).

use crate::numbers::NumberMap;
use std::collections::hash_map::{Entry as Slot, RandomState};
use std::collections::VecDeque;
use std::hash::{BuildHasher, Hash, Hasher};
use std::rc::Rc;
use std::sync::OnceLock;

/// A call with a request id as the memory of full releases keeps it: its bytes, and their
/// keyed hash (SipHash, as the maps keyed by names use), computed once. A release looks its
/// call up and then remembers it, and the map grows and drops it later: each hashed the ~80
/// bytes again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallId {
    hash: u64,
    bytes: Box<[u8]>,
}

impl CallId {
    fn new(bytes: Vec<u8>) -> CallId {
        static KEYS: OnceLock<RandomState> = OnceLock::new();
        let hash = KEYS.get_or_init(RandomState::new).hash_one(&bytes[..]);
        CallId {
            hash,
            bytes: bytes.into_boxed_slice(),
        }
    }
}

impl Hash for CallId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// A full release with a request id: db, key, owner and id, flattened into one byte string
/// (length-prefixed, so no two calls share one).
pub fn release_call(db: i32, key: &[u8], owner: &[u8], id: &[u8]) -> CallId {
    let mut call = Vec::with_capacity(12 + key.len() + owner.len() + id.len());
    call.extend_from_slice(&db.to_le_bytes());
    for part in [key, owner] {
        call.extend_from_slice(&(part.len() as u32).to_le_bytes());
        call.extend_from_slice(part);
    }
    call.extend_from_slice(id);
    CallId::new(call)
}

/// A call with a request id that belongs to no owner (`RCSEM.ADDPERMITS`, `RSEM.RELEASEMANY`):
/// the owner slot holds `rlock:<command>`, a reserved name no owner can have, so these never
/// meet an owner's release nor another command's call.
pub fn command_call(db: i32, key: &[u8], command: &str, id: &[u8]) -> CallId {
    release_call(
        db,
        key,
        [b"rlock:", command.as_bytes()].concat().as_slice(),
        id,
    )
}

/// Full releases with a request id, kept in the server's memory for the retry window: the
/// hash they emptied is gone, and the lock may since be free or someone else's. Keyed by the
/// call's own keyed hash (`CallId`), so the map only spreads it.
#[derive(Debug, Default)]
pub struct Released {
    /// call -> (remembered until, its reply)
    until: NumberMap<Rc<CallId>, (i64, i64)>,
    order: VecDeque<(i64, Rc<CallId>)>,
}

impl Released {
    /// Remembers a call and its reply for `window_ms`.
    pub fn remember(&mut self, call: CallId, reply: i64, now_ms: i64, window_ms: i64) {
        self.forget_expired(now_ms);
        let until = now_ms + window_ms;
        let call = Rc::new(call);
        self.until.insert(call.clone(), (until, reply));
        self.order.push_back((until, call));
    }

    /// The reply of a remembered call.
    pub fn reply(&mut self, call: &CallId, now_ms: i64) -> Option<i64> {
        self.forget_expired(now_ms);
        self.until.get(call).map(|(_, reply)| *reply)
    }

    pub fn len(&self) -> usize {
        self.until.len()
    }

    fn forget_expired(&mut self, now_ms: i64) {
        while self
            .order
            .front()
            .is_some_and(|(until, _)| *until <= now_ms)
        {
            if let Some((until, call)) = self.order.pop_front() {
                // A later release with the same id (rare) keeps its own, later deadline. One
                // look-up of the call (its hash is most of the cost), not two.
                if let Slot::Occupied(entry) = self.until.entry(call) {
                    if entry.get().0 == until {
                        entry.remove();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_releases_are_remembered_for_the_window() {
        let mut r = Released::default();
        let call = release_call(0, b"k", b"o", b"id");
        r.remember(call.clone(), 7, 1_000, 500);
        assert_eq!(r.reply(&call, 1_499), Some(7), "with the reply it gave");
        assert_eq!(r.reply(&release_call(1, b"k", b"o", b"id"), 1_499), None);
        assert_eq!(
            r.reply(&release_call(0, b"ko", b"", b"id"), 1_499),
            None,
            "parts stay apart"
        );
        let many = command_call(0, b"k", "rsem.releasemany", b"id");
        assert_ne!(many, command_call(0, b"k", "rsem.addpermits", b"id"));
        assert_ne!(many, release_call(0, b"k", b"rsem.releasemany", b"id"));
        assert_eq!(
            many,
            release_call(0, b"k", b"rlock:rsem.releasemany", b"id")
        );
        assert_eq!(r.reply(&call, 1_500), None);
        assert_eq!(r.len(), 0);
    }
}
