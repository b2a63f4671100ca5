//! The words every family and the queue share: what a key holds (`LockType`), what a waiter
//! asks for (`Want`, `Access`), and what an acquire or a release decides (`Acquire`,
//! `Release`). Each family's rules give them their meaning.

/// Fields of a lock hash that are not owners start with this; owner ids may not.
pub const RESERVED_PREFIX: &[u8] = b"rlock:";

/// The field that makes a lock hash a read-write lock (Redisson's layout).
pub const MODE_FIELD: &[u8] = b"mode";

/// Redisson's hash-tag wrapping, for the keys it keeps beside a lock in the lock's slot:
/// `{key}`, or the key itself when it has a `{` already.
pub fn tagged(key: &[u8]) -> Vec<u8> {
    if key.contains(&b'{') {
        key.to_vec()
    } else {
        [b"{", key, b"}"].concat()
    }
}

/// Whether the keys `tagged` names beside `key` land in `key`'s Cluster slot: when `key` has a
/// hash tag (a `{` then a `}` with something between, which the side keys keep), or has neither
/// brace (its wrapped name's tag is the whole key, which is what Redis hashes). Any other key is
/// hashed whole by Redis, but its side keys are not.
pub fn side_keys_share_slot(key: &[u8]) -> bool {
    let has_tag = key.iter().position(|&b| b == b'{').is_some_and(|open| {
        key[open + 1..]
            .iter()
            .position(|&b| b == b'}')
            .is_some_and(|len| len > 0)
    });
    has_tag || !key.iter().any(|&b| b == b'{' || b == b'}')
}

/// Which lock a key holds: a hash with a `mode` field is a read-write lock, any other hash a
/// plain lock. A key is only ever one of them; each command family refuses the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockType {
    Plain,
    ReadWrite,
    /// A semaphore's holders (only ever a watchdog binding's kind: its key is a counter).
    Semaphore,
}

/// What a request asks of a lock: the whole lock (the plain lock, a write hold), or a share of
/// it (a read hold). The shared queue knows waiters by this; each lock type's rules decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Exclusive,
    Shared,
}

/// The word that names what a family's waiters ask for, and the type their `NOTIFY` messages
/// carry (each family names its own: `lock`, `read` and `write`, `permits`, `latch`,
/// `counting`).
#[derive(Debug, PartialEq, Eq)]
pub struct Word(pub &'static str);

/// What a waiter asks for: a holding of the family whose word it names, and how much of it
/// (permits; 1 where there is nothing to count). The queue keeps it for every family alike;
/// the family whose word it is decides what it means, so a new family adds its words in its
/// own folder. The word is held by reference: a `Want`, kept by every queued waiter, stays two
/// machine words wide (as the enum it replaced was).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Want {
    pub word: &'static Word,
    pub amount: i64,
}

impl Want {
    /// A request for one holding (a lock, a read or write hold, an open latch).
    pub const fn one(word: &'static Word) -> Want {
        Want { word, amount: 1 }
    }

    /// A request for `amount` of what `word` names (permits).
    pub const fn of(word: &'static Word, amount: i64) -> Want {
        Want { word, amount }
    }

    /// How much it asks for, if it is named `word` (a family reading a waiter: its own or
    /// another family's).
    pub fn amount_if(self, word: &Word) -> Option<i64> {
        (self.word == word).then_some(self.amount)
    }
}

/// Whether a request for `wanted` permits of either semaphore may take them now: enough are
/// available and nobody waits ahead of it (a newcomer never passes the queue, and the head is
/// never passed by a smaller request behind it).
pub fn permits_fit(available: i64, wanted: i64, queued: bool) -> bool {
    !queued && wanted <= available
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// A new holding: write the owner with one hold and this new token.
    Fresh { token: i64 },
    /// A re-entry: write `holds`; `new_token` says `token` was issued now and must be stored.
    Reentry {
        holds: i64,
        token: i64,
        new_token: bool,
    },
    /// Held by another owner.
    Busy,
    /// The hold count cannot grow any further.
    Overflow,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    NotHolder,
    /// Still held, `remaining` times.
    Partial {
        remaining: i64,
    },
    /// The last hold went: the lock is free (or passes to the next waiter).
    Full,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every queued waiter keeps one: a word's reference and an amount, no wider.
    #[test]
    fn a_want_is_two_machine_words() {
        assert_eq!(
            std::mem::size_of::<Want>(),
            2 * std::mem::size_of::<usize>()
        );
    }

    #[test]
    fn permits_fit_in_queue_order() {
        let cases = [
            // (available, wanted, queued, fits)
            (3, 3, false, true),
            (2, 3, false, false),
            (5, 1, true, false),
            (0, 1, false, false),
            (-2, 1, false, false),
        ];
        for (available, wanted, queued, expected) in cases {
            let fit = permits_fit(available, wanted, queued);
            assert_eq!(fit, expected, "{available} {wanted} {queued}");
        }
    }
}

#[cfg(test)]
mod side_key_tests {
    use super::side_keys_share_slot;

    #[test]
    fn side_keys_share_the_slot_of_tagged_and_plain_keys_only() {
        for key in ["lock", "{a}b", "x{tag}y", "a{b}c{d}", "{a}{"] {
            assert!(side_keys_share_slot(key.as_bytes()), "{key}");
        }
        for key in ["a{b", "a{}b", "{}a", "a}b", "}a{", "a{b:c"] {
            assert!(!side_keys_share_slot(key.as_bytes()), "{key}");
        }
    }
}
