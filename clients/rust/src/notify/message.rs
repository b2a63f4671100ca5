//! The messages of a connection's `__rlock__` channel, split into their fields, and the
//! token a `granted` or `lost` message carries.

/// One message on a connection's `__rlock__` channel, split as docs/notify.md says: four
/// fields at the first four spaces, `key-length` bytes of key, one space, the rest is the
/// owner. Binary-safe: keys and owners may hold spaces or any byte.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Message<'a> {
    pub(crate) event: &'a [u8],
    pub(crate) kind: &'a [u8],
    pub(crate) value: &'a [u8],
    pub(crate) key: &'a [u8],
    pub(crate) owner: &'a [u8],
}

pub(crate) fn parse(payload: &[u8]) -> Option<Message<'_>> {
    let mut rest = payload;
    let mut fields: [&[u8]; 4] = [&[]; 4];
    for field in &mut fields {
        let space = rest.iter().position(|&byte| byte == b' ')?;
        *field = &rest[..space];
        rest = &rest[space + 1..];
    }
    let [event, kind, value, length] = fields;
    if length.is_empty() || !length.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let length: usize = std::str::from_utf8(length).ok()?.parse().ok()?;
    let key = rest.get(..length)?;
    let owner = match rest.get(length..)? {
        [] => &[][..],
        [b' ', owner @ ..] => owner,
        _ => return None,
    };
    Some(Message {
        event,
        kind,
        value,
        key,
        owner,
    })
}

pub(super) fn parse_token(value: &[u8]) -> Option<u64> {
    std::str::from_utf8(value).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_splits_as_the_protocol_says() {
        let message = parse(b"granted lock 1763900000123456 5 jobs1 worker-7").expect("parses");
        assert_eq!(
            message,
            Message {
                event: b"granted",
                kind: b"lock",
                value: b"1763900000123456",
                key: b"jobs1",
                owner: b"worker-7",
            }
        );
    }

    #[test]
    fn keys_and_owners_are_binary_safe() {
        let message = parse(b"lost lock 7 9 a b\x00 c d  owner with  spaces ").expect("parses");
        assert_eq!(message.key, b"a b\x00 c d ");
        assert_eq!(message.owner, b"owner with  spaces ");
        let message = parse(b"timeout lock - 0  ").expect("empty key");
        assert_eq!((message.key, message.owner), (&b""[..], &b""[..]));
        let latch = parse(b"granted latch 1 3 k:1 ").expect("latch");
        assert_eq!((latch.key, latch.owner), (&b"k:1"[..], &b""[..]));
        let no_space = parse(b"granted latch 1 3 k:1").expect("owner-less");
        assert_eq!(no_space.owner, b"");
    }

    #[test]
    fn malformed_messages_are_ignored() {
        for bad in [
            &b"granted lock 1"[..],
            b"granted lock 1 x key owner",
            b"granted lock 1 10 short",
            b"granted lock 1 3 keyXowner",
            b"granted lock 1 +3 key owner",
        ] {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
