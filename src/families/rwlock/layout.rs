//! Redisson's `RReadWriteLock` layout, free of Redis: the names of the hash fields and side
//! keys, how rlock's values are encoded beside Redisson's counts, and reading the holders back
//! from the fields.

use crate::kinds::Access;

use super::rules::Mode;

pub use crate::kinds::MODE_FIELD;

/// A writer's hold count is kept under `<owner>:write`; a reader's under `<owner>`.
pub const WRITE_SUFFIX: &[u8] = b":write";
/// Each holding's fencing token, under `rlock:read:<owner>` or `rlock:write:<owner>`. The value
/// is `t<token>`: not a number, because Redisson's read-unlock script loops from every numeric
/// field's value down to 1 (a numeric token would make it loop ~10^15 times).
pub const READ_TOKEN_PREFIX: &[u8] = b"rlock:read:";
pub const WRITE_TOKEN_PREFIX: &[u8] = b"rlock:write:";
/// rlock's per-owner hold cap (`rlock:cap:<owner>` = `c<ms>`): not a number, for the same
/// reason as the tokens. (The request ids an owner's holdings remember are `ids_field`'s.)
pub const CAP_PREFIX: &[u8] = b"rlock:cap:";
pub use crate::lifetime::retries::ids_field;
pub fn count_field(owner: &[u8], access: Access) -> Vec<u8> {
    match access {
        Access::Shared => owner.to_vec(),
        Access::Exclusive => [owner, WRITE_SUFFIX].concat(),
    }
}

/// The hash field that keeps the token of `owner`'s holding of `access`.
pub fn token_field(owner: &[u8], access: Access) -> Vec<u8> {
    let prefix = match access {
        Access::Shared => READ_TOKEN_PREFIX,
        Access::Exclusive => WRITE_TOKEN_PREFIX,
    };
    [prefix, owner].concat()
}

pub fn cap_field(owner: &[u8]) -> Vec<u8> {
    [CAP_PREFIX, owner].concat()
}

pub fn encode_cap(at_ms: i64) -> Vec<u8> {
    format!("c{at_ms}").into_bytes()
}

pub fn decode_cap(value: &[u8]) -> Option<i64> {
    std::str::from_utf8(value.strip_prefix(b"c")?)
        .ok()?
        .parse()
        .ok()
}

pub fn encode_token(token: i64) -> Vec<u8> {
    format!("t{token}").into_bytes()
}

pub fn decode_token(value: &[u8]) -> Option<i64> {
    std::str::from_utf8(value.strip_prefix(b"t")?)
        .ok()?
        .parse()
        .ok()
}

pub use crate::kinds::tagged;

/// The timeout key of read hold `n` of `owner`: `{key}:<owner>:rwlock_timeout:<n>`, the name
/// Redisson's read-lock scripts give it (same hash-tag slot as the lock).
pub fn timeout_key(key: &[u8], owner: &[u8], n: i64) -> Vec<u8> {
    let mut name = tagged(key);
    name.push(b':');
    name.extend_from_slice(owner);
    name.extend_from_slice(format!(":rwlock_timeout:{n}").as_bytes());
    name
}

/// Where Redisson's read and write lock waiters listen: `redisson_rwlock:{key}`.
pub fn channel(key: &[u8]) -> Vec<u8> {
    [&b"redisson_rwlock:"[..], &tagged(key)].concat()
}

/// One holding as the hash stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holding {
    pub owner: Vec<u8>,
    pub holds: i64,
    pub token: Option<i64>,
}

/// Every holding of the lock, read from its hash fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Holders {
    pub mode: Option<Mode>,
    pub writer: Option<Holding>,
    pub readers: Vec<Holding>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Corrupt {
    Mode,
    Holds,
}

/// Sorts the hash's fields into holdings. Fields of rlock's own other than tokens are ignored.
pub fn holders(fields: &[(Vec<u8>, Vec<u8>)]) -> Result<Holders, Corrupt> {
    let mut out = Holders::default();
    let mut tokens: Vec<(&[u8], Access, i64)> = Vec::new();
    for (field, value) in fields {
        if field == MODE_FIELD {
            out.mode = Some(Mode::parse(value).ok_or(Corrupt::Mode)?);
        } else if let Some(owner) = field.strip_prefix(READ_TOKEN_PREFIX) {
            tokens.extend(decode_token(value).map(|t| (owner, Access::Shared, t)));
        } else if let Some(owner) = field.strip_prefix(WRITE_TOKEN_PREFIX) {
            tokens.extend(decode_token(value).map(|t| (owner, Access::Exclusive, t)));
        } else if field.starts_with(crate::kinds::RESERVED_PREFIX) {
            continue;
        } else {
            let holds = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse::<i64>().ok())
                .ok_or(Corrupt::Holds)?;
            match field.strip_suffix(WRITE_SUFFIX) {
                Some(owner) => {
                    out.writer = Some(Holding {
                        owner: owner.to_vec(),
                        holds,
                        token: None,
                    })
                }
                None => out.readers.push(Holding {
                    owner: field.clone(),
                    holds,
                    token: None,
                }),
            }
        }
    }
    for (owner, access, token) in tokens {
        let holding = match access {
            Access::Exclusive => out.writer.as_mut().filter(|w| w.owner == owner),
            Access::Shared => out.readers.iter_mut().find(|r| r.owner == owner),
        };
        if let Some(holding) = holding {
            holding.token = Some(token);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Access::{Exclusive as W, Shared as R};

    #[test]
    fn names_follow_redissons_layout() {
        assert_eq!(timeout_key(b"k", b"u:1", 2), b"{k}:u:1:rwlock_timeout:2");
        assert_eq!(timeout_key(b"a{x}", b"u", 1), b"a{x}:u:rwlock_timeout:1");
        assert_eq!(channel(b"k"), b"redisson_rwlock:{k}");
        assert_eq!(channel(b"{k}"), b"redisson_rwlock:{k}");
        assert_eq!(count_field(b"u", W), b"u:write");
        assert_eq!(token_field(b"u", R), b"rlock:read:u");
        assert_eq!(
            decode_token(&encode_token(1_795_000_000_000_001)),
            Some(1_795_000_000_000_001)
        );
        assert_eq!(decode_token(b"12"), None, "tokens are never plain numbers");
    }

    #[test]
    fn holders_are_read_from_the_fields() {
        let f = |a: &str, b: &str| (a.as_bytes().to_vec(), b.as_bytes().to_vec());
        let fields = [
            f("mode", "write"),
            f("w", "1"),
            f("w:write", "2"),
            f("rlock:write:w", "t42"),
            f("rlock:read:w", "t43"),
            f("rlock:ids", "whatever"),
        ];
        let read = holders(&fields);
        assert!(read.is_ok(), "{read:?}");
        let h = read.unwrap_or_default();
        assert_eq!(h.mode, Some(Mode::Write));
        let holding = |holds, token| Holding {
            owner: b"w".to_vec(),
            holds,
            token: Some(token),
        };
        assert_eq!(h.writer, Some(holding(2, 42)));
        assert_eq!(h.readers, vec![holding(1, 43)]);
        assert_eq!(holders(&[f("mode", "x")]), Err(Corrupt::Mode));
        assert_eq!(
            holders(&[f("mode", "read"), f("r", "x")]),
            Err(Corrupt::Holds)
        );
        assert_eq!(
            holders(&[f("mode", "read")]).map(|h| h.readers.len()),
            Ok(0)
        );
    }
}
