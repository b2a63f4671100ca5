//! The connections found subscribed to their own `NOTIFY` channel, so that an acquire with
//! `NOTIFY` checks its connection once rather than on every call (issue 46: the check was a
//! `getpeername` and a `PUBSUB NUMSUB` per acquire). What may make an entry untrue forgets it:
//! any `UNSUBSCRIBE`, `PUNSUBSCRIBE`, `SUNSUBSCRIBE`, `RESET` or `EXEC` on the server (Redis 7.0
//! does not tell a command filter whose command it is, and an `UNSUBSCRIBE` queued in `MULTI`
//! runs at `EXEC`) forgets every entry, and a closed connection forgets its own, or every
//! entry if it was subscribed (it may have been the subscriber another's check counted).

use crate::numbers::NumberMap;

#[derive(Default)]
pub struct Listening {
    /// Connection id -> the cluster node id its channel was named with when it was found
    /// subscribed (empty outside a cluster; `CLUSTER RESET HARD` changes it, and the name).
    seen: NumberMap<u64, Vec<u8>>,
}

impl Listening {
    /// `client` was found connected and its channel, named with `node`, subscribed, just now.
    pub fn remember(&mut self, client: u64, node: Vec<u8>) {
        self.seen.insert(client, node);
    }

    /// Whether `client` was found subscribed to its channel named with `node`, and nothing
    /// since may have changed that.
    pub fn knows(&self, client: u64, node: &[u8]) -> bool {
        self.seen.get(&client).is_some_and(|seen| seen == node)
    }

    /// Connection `client` closed; `subscribed`: it was subscribed to something then.
    pub fn closed(&mut self, client: u64, subscribed: bool) {
        if subscribed {
            self.seen.clear();
        } else {
            self.seen.remove(&client);
        }
    }

    pub fn forget_all(&mut self) {
        self.seen.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

/// Whether a command named `name` may leave some connection unsubscribed from a channel it was
/// on: checked before every command while anything is remembered, so by length first.
pub fn may_unsubscribe(name: &[u8]) -> bool {
    const NAMES: [&[u8]; 5] = [
        b"unsubscribe",
        b"punsubscribe",
        b"sunsubscribe",
        b"reset",
        b"exec",
    ];
    NAMES
        .iter()
        .any(|n| n.len() == name.len() && n.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_known_on_its_channel_until_forgotten() {
        let mut l = Listening::default();
        assert!(l.is_empty() && !l.knows(7, b""));
        l.remember(7, b"".to_vec());
        l.remember(8, b"n1".to_vec());
        assert!(l.knows(7, b"") && l.knows(8, b"n1"));
        assert!(!l.knows(7, b"n2"), "another node id is not known");
        assert!(!l.knows(9, b""));
        l.closed(7, false);
        assert!(!l.knows(7, b"") && l.knows(8, b"n1"));
        l.closed(9, true);
        assert!(
            l.is_empty(),
            "a subscriber that closed may have been another's listener"
        );
        l.remember(8, b"n1".to_vec());
        l.forget_all();
        assert!(l.is_empty() && !l.knows(8, b"n1"));
    }

    #[test]
    fn the_commands_that_may_unsubscribe_are_told_from_the_rest() {
        for name in [
            "UNSUBSCRIBE",
            "punsubscribe",
            "SUnsubscribe",
            "reset",
            "EXEC",
        ] {
            assert!(may_unsubscribe(name.as_bytes()), "{name}");
        }
        for name in [
            "subscribe",
            "rlock.acquire",
            "exe",
            "execs",
            "resets",
            "",
            "unsubscrib",
        ] {
            assert!(!may_unsubscribe(name.as_bytes()), "{name}");
        }
    }
}
