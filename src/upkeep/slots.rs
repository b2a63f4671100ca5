//! In Redis Cluster, a key with waiters that disappears because its slot is moving (`MIGRATE`
//! deletes it here) must not be created again here for a waiter: the lock now lives on the
//! target node. Its waiters are answered where the slot lives now, as Redis itself redirects a
//! command (`ASK` while the slot migrates, `MOVED` once it is served elsewhere), so a cluster
//! client retries there.

use crate::api::{api, reply_bytes, Ctx};
use crate::error::Error;

/// The redirection for `slot` that `CLUSTER NODES` (`nodes`) implies for this node, if any.
pub fn redirection(nodes: &str, slot: u16) -> Option<Error> {
    let lines: Vec<Vec<&str>> = nodes.lines().map(|l| l.split(' ').collect()).collect();
    let address = |id: &str| {
        lines
            .iter()
            .find(|f| f.first() == Some(&id))
            .and_then(|f| f.get(1))
            .map(|a| a.split('@').next().unwrap_or(a).to_string())
    };
    let serves = |fields: &[&str]| {
        fields.iter().skip(8).any(|range| {
            let mut ends = range.splitn(2, '-').map(|n| n.parse::<u16>().ok());
            match (ends.next().flatten(), ends.next()) {
                (Some(a), None) => a == slot,
                (Some(a), Some(Some(b))) => (a..=b).contains(&slot),
                _ => false,
            }
        })
    };
    let myself = lines
        .iter()
        .find(|f| f.get(2).is_some_and(|flags| flags.contains("myself")))?;
    let migrating = format!("[{slot}->-");
    if let Some(target) = myself
        .iter()
        .skip(8)
        .find_map(|f| f.strip_prefix(&migrating))
    {
        let target = target.trim_end_matches(']');
        return Some(Error::Redirect(format!("ASK {slot} {}", address(target)?)));
    }
    if serves(myself) {
        return None;
    }
    let owner = lines.iter().find(|f| serves(f))?;
    Some(Error::Redirect(format!(
        "MOVED {slot} {}",
        owner.get(1)?.split('@').next()?
    )))
}

/// Where the waiters of `key` must go instead, when this node no longer serves its slot.
pub fn waiters_redirection(ctx: Ctx, key: &[u8]) -> Option<Error> {
    // SAFETY: `ctx` is a live timer context; the reply is read, then freed once.
    let nodes = unsafe {
        let reply =
            api!(RedisModule_Call)(ctx, c"CLUSTER".as_ptr(), c"c".as_ptr(), c"NODES".as_ptr());
        if reply.is_null() {
            return None;
        }
        let text = reply_bytes(reply).map(|b| String::from_utf8_lossy(b).into_owned());
        api!(RedisModule_FreeCallReply)(reply);
        text?
    };
    redirection(&nodes, key_slot(key))
}

/// The key's hash slot, as Redis Cluster computes it (CRC16 of the hash tag, or of the key):
/// Redis 7.0's module API has no call for it.
pub fn key_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let close = key[open + 1..].iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &key[open + 1..open + 1 + close])
    });
    crc16(tagged.unwrap_or(key)) % 16384
}

/// CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with.
fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| {
        (0..8).fold(crc ^ (u16::from(b) << 8), |crc, _| {
            if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str =
        "a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460 [100->-b2]\n\
b2 127.0.0.1:7002@17002 master - 0 0 2 connected 5461-10922\n\
c3 127.0.0.1:7003@17003 master - 0 0 3 connected 10923-16383 12000\n";

    #[test]
    fn key_slots_are_redis_clusters() {
        // Values from `CLUSTER KEYSLOT` on Redis 7.0.15.
        for (key, slot) in [
            (&b"foo"[..], 12182),
            (b"{user1000}.following", 3443),
            (b"{user1000}.followers", 3443),
            (b"foo{}{bar}", 8363),
            (b"", 0),
        ] {
            assert_eq!(key_slot(key), slot, "{key:?}");
        }
    }

    #[test]
    fn redirections_follow_cluster_nodes() {
        let cases = [
            (5, None),
            (100, Some("ASK 100 127.0.0.1:7002")),
            (6000, Some("MOVED 6000 127.0.0.1:7002")),
            (16000, Some("MOVED 16000 127.0.0.1:7003")),
        ];
        for (slot, expected) in cases {
            let got = redirection(NODES, slot).map(|e| e.to_string());
            assert_eq!(got.as_deref(), expected, "slot {slot}");
        }
    }
}
