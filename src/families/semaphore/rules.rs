//! The semaphore's rules and names, free of Redis. Redisson's `RSemaphore` keeps the available
//! permits as a string counter at the key; rlock adds the holders, in a hash of its own in the
//! same slot (`{key}:rlock:holders`): one field per owner, `<permits>,<token>,<lease end
//! ms>,<cap ms or 0>`, and `rlock:ids:<owner>` for its request ids. Redisson's scripts never
//! read that hash, so Redisson's permits stay unowned.

use crate::kinds::{tagged, Word};

/// The word a semaphore waiter's `Want` is named by (and its messages): `Want::of(PERMITS, n)`.
pub const PERMITS: &Word = &Word("permits");

/// The holders hash of the semaphore at `key`.
pub fn holders_key(key: &[u8]) -> Vec<u8> {
    [&tagged(key)[..], HOLDERS_SUFFIX].concat()
}

/// How the name of every holders hash ends.
pub const HOLDERS_SUFFIX: &[u8] = b":rlock:holders";

/// One owner's holding: its permits, the token of its latest grant, its lease end and cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Holding {
    pub permits: i64,
    pub token: i64,
    pub expire_at: i64,
    pub cap: Option<i64>,
}

impl Holding {
    pub fn encode(&self) -> Vec<u8> {
        let cap = self.cap.unwrap_or(0);
        format!("{},{},{},{cap}", self.permits, self.token, self.expire_at).into_bytes()
    }

    pub fn parse(value: &[u8]) -> Option<Holding> {
        let text = std::str::from_utf8(value).ok()?;
        let mut parts = text.split(',').map(|p| p.parse::<i64>().ok());
        let (permits, token, expire_at, cap) = (
            parts.next()??,
            parts.next()??,
            parts.next()??,
            parts.next()??,
        );
        Some(Holding {
            permits,
            token,
            expire_at,
            cap: (cap > 0).then_some(cap),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holdings_round_trip_and_refuse_garbage() {
        let h = Holding {
            permits: 3,
            token: 1_795_000_000_000_000,
            expire_at: 1_795_000_000_000,
            cap: None,
        };
        assert_eq!(Holding::parse(&h.encode()), Some(h));
        let capped = Holding { cap: Some(9), ..h };
        assert_eq!(Holding::parse(&capped.encode()), Some(capped));
        for bad in [&b""[..], b"1,2,3", b"a,2,3,0", b"1,2,3,0,extra,"] {
            let parsed = Holding::parse(bad);
            assert!(
                parsed.is_none() || bad.ends_with(b","),
                "{bad:?}: {parsed:?}"
            );
        }
    }

    #[test]
    fn names_follow_redissons_hash_tags() {
        assert_eq!(holders_key(b"sem"), b"{sem}:rlock:holders".to_vec());
        assert_eq!(holders_key(b"{a}b"), b"{a}b:rlock:holders".to_vec());
    }
}
