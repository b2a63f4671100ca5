//! Request ids: what makes a retried call answer as the first one did instead of counting
//! twice. Pure: time comes in as an argument.
//!
//! Calls that changed a hold count are remembered in the lock hash itself (field `rlock:ids`),
//! written and replicated in the same HSET as the change, so the memory survives a failover
//! exactly as far as the change does. A full release deletes the hash (Redisson's layout has no
//! place for a tombstone), so those are remembered in the server's memory only (`Released`).

use crate::numbers::NumberMap;
use std::collections::hash_map::{Entry as Slot, RandomState};
use std::collections::VecDeque;
use std::hash::{BuildHasher, Hash, Hasher};
use std::rc::Rc;
use std::sync::OnceLock;

/// The hash field that keeps the request ids of the current holding.
pub const IDS_FIELD: &[u8] = b"rlock:ids";

/// Where the request ids of one owner's holdings are kept in a hash of several owners (a
/// read-write lock, a semaphore's holders): `rlock:ids:<owner>`, entries starting with a
/// letter, never a number (Redisson's scripts read numeric fields as hold counts).
pub fn ids_field(owner: &[u8]) -> Vec<u8> {
    [IDS_FIELD, b":", owner].concat()
}

/// Longest request id accepted, in bytes.
pub const MAX_ID_LEN: usize = 64;

/// Most ids one holding remembers; the oldest go first (a holding re-entered this often
/// within one retry window is not a pattern we need to protect).
const MAX_ENTRIES: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An acquire; the value is the token it replied.
    Acquire,
    /// A partial release; the value is the hold count it replied.
    Release,
}

impl Kind {
    fn tag(self) -> u8 {
        match self {
            Kind::Acquire => b'A',
            Kind::Release => b'R',
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    kind: Kind,
    value: i64,
    at_ms: i64,
    id: Vec<u8>,
}

/// The ids remembered by one holding, as stored in `rlock:ids`: entries of the form
/// `<A|R><value>,<at_ms>,<id length>:<id>`, numbers in base 36, back to back (ids may hold
/// any byte). Base 36 keeps one entry with a UUID id at 60 bytes, under Redis's default
/// `hash-max-listpack-value` (64): a longer value turns the whole lock hash into a hash table,
/// which costs ~300 bytes more.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Memory {
    entries: Vec<Entry>,
}

impl Memory {
    /// Reads a stored value; anything unreadable counts as no memory (never an error: the
    /// memory only ever saves a retry from counting twice).
    pub fn parse(mut blob: &[u8]) -> Memory {
        let mut entries = Vec::new();
        while let Some(entry) = next_entry(&mut blob) {
            entries.push(entry);
        }
        Memory { entries }
    }

    pub fn find(&self, kind: Kind, id: &[u8]) -> Option<i64> {
        self.entries
            .iter()
            .find(|e| e.kind == kind && e.id == id)
            .map(|e| e.value)
    }

    /// Adds a call, dropping entries older than `window_ms` and the oldest beyond the limit.
    pub fn remember(&mut self, kind: Kind, id: &[u8], value: i64, now_ms: i64, window_ms: i64) {
        self.entries.retain(|e| now_ms - e.at_ms < window_ms);
        if self.entries.len() >= MAX_ENTRIES {
            self.entries.remove(0);
        }
        self.entries.push(Entry {
            kind,
            value,
            at_ms: now_ms,
            id: id.to_vec(),
        });
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.entries.len() * 48);
        for e in &self.entries {
            push_entry(&mut out, e.kind, e.value, e.at_ms, &e.id);
        }
        out
    }
}

/// The stored memory of one call, as `Memory::encode` writes it: what a fresh holding
/// remembers, without a memory built first (and its copy of the id).
pub fn encode_one(kind: Kind, id: &[u8], value: i64, now_ms: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(40 + id.len());
    push_entry(&mut out, kind, value, now_ms, id);
    out
}

fn push_entry(out: &mut Vec<u8>, kind: Kind, value: i64, at_ms: i64, id: &[u8]) {
    out.push(kind.tag());
    push_base36(out, value);
    out.push(b',');
    push_base36(out, at_ms);
    out.push(b',');
    push_base36(out, id.len() as i64);
    out.push(b':');
    out.extend_from_slice(id);
}

/// The value remembered for a call of `kind` with `id` in a stored memory (`rlock:ids`), read
/// in place: a release reads the memory only to find a retried call, and building it (a
/// vector, and a copy of every id) was a twentieth of an uncontended release.
pub fn find_in(mut blob: &[u8], kind: Kind, id: &[u8]) -> Option<i64> {
    while let Some((found, value, _, found_id)) = next_raw(&mut blob) {
        if found == kind && found_id == id {
            return Some(value);
        }
    }
    None
}

fn next_entry(blob: &mut &[u8]) -> Option<Entry> {
    let (kind, value, at_ms, id) = next_raw(blob)?;
    Some(Entry {
        kind,
        value,
        at_ms,
        id: id.to_vec(),
    })
}

/// One entry, borrowed from the blob: kind, value, time, id.
fn next_raw<'a>(blob: &mut &'a [u8]) -> Option<(Kind, i64, i64, &'a [u8])> {
    let (&tag, rest) = blob.split_first()?;
    let kind = match tag {
        b'A' => Kind::Acquire,
        b'R' => Kind::Release,
        _ => return None,
    };
    let (value, rest) = number_until(rest, b',')?;
    let (at_ms, rest) = number_until(rest, b',')?;
    let (len, rest) = number_until(rest, b':')?;
    let len = usize::try_from(len).ok().filter(|&l| l <= rest.len())?;
    let (id, rest) = rest.split_at(len);
    *blob = rest;
    Some((kind, value, at_ms, id))
}

fn number_until(bytes: &[u8], end: u8) -> Option<(i64, &[u8])> {
    let at = bytes.iter().position(|&b| b == end)?;
    let n = i64::from_str_radix(std::str::from_utf8(&bytes[..at]).ok()?, 36).ok()?;
    Some((n, &bytes[at + 1..]))
}

fn push_base36(out: &mut Vec<u8>, n: i64) {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n < 0 {
        out.push(b'-');
    }
    let mut n = n.unsigned_abs();
    let mut digits = [0u8; 13];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = DIGITS[(n % 36) as usize];
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

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
    fn memory_round_trips_any_bytes() {
        let mut m = Memory::default();
        m.remember(
            Kind::Acquire,
            b"a,b:c\0\xff",
            1_795_000_000_000_000,
            1_000,
            60_000,
        );
        m.remember(Kind::Release, b"r1", 3, 1_001, 60_000);
        let back = Memory::parse(&m.encode());
        assert_eq!(back, m);
        assert_eq!(
            back.find(Kind::Acquire, b"a,b:c\0\xff"),
            Some(1_795_000_000_000_000)
        );
        assert_eq!(back.find(Kind::Release, b"r1"), Some(3));
        assert_eq!(back.find(Kind::Acquire, b"r1"), None, "kinds are apart");
    }

    #[test]
    fn one_entry_with_a_uuid_fits_a_listpack_value() {
        let mut m = Memory::default();
        let uuid = b"3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b";
        m.remember(
            Kind::Acquire,
            uuid,
            1_795_368_175_156_683,
            1_795_368_175_156,
            60_000,
        );
        assert!(m.encode().len() <= 64, "{}", m.encode().len());
        for n in [0, 1, 35, 36, i64::MAX, -7] {
            let mut out = Vec::new();
            push_base36(&mut out, n);
            out.push(b',');
            assert_eq!(number_until(&out, b','), Some((n, &b""[..])), "{n}");
        }
    }

    #[test]
    fn a_call_is_found_in_place_as_in_the_parsed_memory() {
        let mut m = Memory::default();
        m.remember(Kind::Acquire, b"a", 11, 1_000, 60_000);
        m.remember(Kind::Release, b"r:1", 2, 1_001, 60_000);
        m.remember(Kind::Release, b"a", 3, 1_002, 60_000);
        let blob = m.encode();
        for kind in [Kind::Acquire, Kind::Release] {
            for id in [&b"a"[..], b"r:1", b"r", b""] {
                assert_eq!(
                    find_in(&blob, kind, id),
                    m.find(kind, id),
                    "{kind:?} {id:?}"
                );
            }
        }
        assert_eq!(find_in(&blob, Kind::Release, b"a"), Some(3));
        assert_eq!(find_in(b"A1,2,99:short", Kind::Acquire, b"short"), None);
    }

    #[test]
    fn one_call_encodes_as_a_memory_of_one() {
        let uuid = b"3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b";
        for (kind, id, value) in [
            (Kind::Acquire, &uuid[..], 1_795_368_175_156_683),
            (Kind::Release, b"", -7),
            (Kind::Acquire, b"a,b:c\0\xff", 0),
        ] {
            let mut m = Memory::default();
            m.remember(kind, id, value, 1_795_368_175_156, 60_000);
            assert_eq!(encode_one(kind, id, value, 1_795_368_175_156), m.encode());
        }
    }

    #[test]
    fn unreadable_memory_is_empty_not_an_error() {
        for blob in [
            &b""[..],
            b"X1,2,3:abc",
            b"A1,2,99:short",
            b"Ao_e,2,1:x",
            b"A1,2",
        ] {
            assert_eq!(
                Memory::parse(blob).find(Kind::Acquire, b"x"),
                None,
                "{blob:?}"
            );
        }
    }

    #[test]
    fn memory_forgets_by_age_and_keeps_a_bounded_number() {
        let mut m = Memory::default();
        m.remember(Kind::Acquire, b"old", 1, 0, 100);
        m.remember(Kind::Acquire, b"new", 2, 150, 100);
        assert_eq!(m.find(Kind::Acquire, b"old"), None);
        assert_eq!(m.find(Kind::Acquire, b"new"), Some(2));
        for i in 0..100 {
            m.remember(Kind::Release, format!("r{i}").as_bytes(), i, 200, 1_000);
        }
        assert_eq!(m.entries.len(), MAX_ENTRIES);
        assert_eq!(m.find(Kind::Release, b"r99"), Some(99));
        assert_eq!(m.find(Kind::Release, b"r0"), None);
    }

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
