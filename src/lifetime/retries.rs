//! Request ids: what makes a retried call answer as the first one did instead of counting
//! twice. Pure: time comes in as an argument.
//!
//! Calls that changed a hold count are remembered in the lock hash itself (field `rlock:ids`),
//! written and replicated in the same HSET as the change, so the memory survives a failover
//! exactly as far as the change does. A full release deletes the hash (Redisson's layout has no
//! place for a tombstone), so those are remembered in the server's memory only (`Released`, in
//! `released`).

pub use super::released::{command_call, release_call, CallId, Released};

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
    Some((base36(&bytes[..at])?, &bytes[at + 1..]))
}

const NOT_A_DIGIT: u8 = u8::MAX;

/// Each byte's value as a base-36 digit (either case), else `NOT_A_DIGIT`.
const DIGITS_36: [u8; 256] = {
    let mut table = [NOT_A_DIGIT; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            d @ b'0'..=b'9' => d - b'0',
            l @ b'a'..=b'z' => l - b'a' + 10,
            u @ b'A'..=b'Z' => u - b'A' + 10,
            _ => NOT_A_DIGIT,
        };
        b += 1;
    }
    table
};

/// `i64::from_str_radix(text, 36)` read straight from the bytes (no UTF-8 check first: a byte
/// that is no digit fails either way): an optional sign, then digits of either case; None when
/// empty or out of range. A release reads three numbers of each remembered call.
fn base36(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() {
        return None;
    }
    let mut magnitude: u64 = 0;
    for &b in digits {
        let digit = match DIGITS_36[usize::from(b)] {
            NOT_A_DIGIT => return None,
            digit => u64::from(digit),
        };
        magnitude = magnitude.checked_mul(36)?.checked_add(digit)?;
    }
    match negative {
        true => 0i64.checked_sub_unsigned(magnitude),
        false => i64::try_from(magnitude).ok(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base36_reads_as_from_str_radix_does() {
        let std = |t: &[u8]| {
            std::str::from_utf8(t)
                .ok()
                .and_then(|t| i64::from_str_radix(t, 36).ok())
        };
        let mut cases: Vec<Vec<u8>> = [
            "",
            "-",
            "+",
            "0",
            "-0",
            "+z",
            "Zz",
            "1y2p0ij32e8e7",
            "1y2p0ij32e8e8",
            "-1y2p0ij32e8e8",
            "-1y2p0ij32e8e9",
            "3w5e11264sgsf",
            "a,b",
            " 1",
            "1_0",
            "é",
            "--1",
            "+-1",
        ]
        .iter()
        .map(|t| t.as_bytes().to_vec())
        .collect();
        // Seeded pseudo-random strings over signs, digits, letters and a few other bytes.
        let alphabet = b"+-0123456789abcxyzABCXYZ,:_\xff";
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let mut t = Vec::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            for i in 0..(seed % 16) {
                t.push(alphabet[((seed >> (4 + i * 3)) % alphabet.len() as u64) as usize]);
            }
            cases.push(t);
        }
        for n in [0, 1, 35, 36, i64::MAX, i64::MIN, -7, 1_795_368_175_156_683] {
            let mut out = Vec::new();
            push_base36(&mut out, n);
            assert_eq!(base36(&out), Some(n));
            cases.push(out);
        }
        for t in cases {
            assert_eq!(base36(&t), std(&t), "{:?}", String::from_utf8_lossy(&t));
        }
    }

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
}
