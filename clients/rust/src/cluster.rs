//! Redis Cluster routing of our own: a key's slot (CRC16 of its hash tag), and the map of
//! slots to primaries (`CLUSTER SLOTS`), read again when a node says the slot moved. Our own
//! rather than redis-rs's cluster connection because a watchdog holding and a `NOTIFY`
//! subscription must stay on one connection to the node that owns the key, which a cluster
//! connection (that reconnects and routes by itself) does not promise.

use crate::session::within;
use redis::{Client, ConnectionAddr, RedisResult, Value};
use std::sync::Mutex;
use std::time::Duration;

const SLOTS: u16 = 16384;
/// How long one node may take to answer `CLUSTER SLOTS`.
const ASK_NODE_LIMIT: Duration = Duration::from_secs(1);

/// The slot of `key`: CRC16 (XMODEM) of its hash tag (the part between the first `{` and
/// the next `}`, when not empty), else of the whole key, modulo 16384.
pub(crate) fn slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) % SLOTS
}

fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&b| b == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= (byte as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// Which primary serves which slots, as far as we know.
pub(crate) struct SlotMap {
    seeds: Vec<Client>,
    known: Mutex<Known>,
}

#[derive(Default)]
struct Known {
    /// (first slot, last slot, primary `host:port`), from the last `CLUSTER SLOTS`.
    ranges: Vec<(u16, u16, String)>,
    /// Set when a node said a slot moved or a primary failed: read the map again.
    stale: bool,
}

impl SlotMap {
    pub(crate) fn new(seeds: Vec<Client>) -> SlotMap {
        SlotMap {
            seeds,
            known: Mutex::default(),
        }
    }

    /// A client for the primary of `slot`, reading the map first when it is stale or lacks it.
    pub(crate) async fn primary(&self, slot: u16) -> RedisResult<Client> {
        if let Some(addr) = self.lookup(slot) {
            return self.client_at(&addr);
        }
        self.refresh().await?;
        let addr = self.lookup(slot).ok_or_else(|| {
            redis::RedisError::from((
                redis::ErrorKind::Server(redis::ServerErrorKind::ClusterDown),
                "no primary serves the slot",
                slot.to_string(),
            ))
        })?;
        self.client_at(&addr)
    }

    fn lookup(&self, slot: u16) -> Option<String> {
        let known = self.known.lock().expect("slot map lock");
        if known.stale {
            return None;
        }
        known
            .ranges
            .iter()
            .find(|(first, last, _)| (*first..=*last).contains(&slot))
            .map(|(_, _, addr)| addr.clone())
    }

    /// A node said the map is wrong (a `MOVED` names where the slot went) or a primary
    /// failed: the next lookup reads the map again.
    pub(crate) fn forget(&self, _moved_to: Option<(&str, u16)>) {
        self.known.lock().expect("slot map lock").stale = true;
    }

    /// Asks the known primaries, then the seeds, for `CLUSTER SLOTS` until one answers.
    async fn refresh(&self) -> RedisResult<()> {
        let known: Vec<String> = {
            let known = self.known.lock().expect("slot map lock");
            known
                .ranges
                .iter()
                .map(|(_, _, addr)| addr.clone())
                .collect()
        };
        let mut candidates: Vec<Client> = known
            .iter()
            .filter_map(|addr| self.client_at(addr).ok())
            .collect();
        candidates.extend(self.seeds.iter().cloned());
        let mut last_error = None;
        for client in candidates {
            match within(ASK_NODE_LIMIT, "(CLUSTER SLOTS)", cluster_slots(&client)).await {
                Ok(ranges) if !ranges.is_empty() => {
                    *self.known.lock().expect("slot map lock") = Known {
                        ranges,
                        stale: false,
                    };
                    return Ok(());
                }
                Ok(_) => {}
                Err(err) => last_error = Some(err),
            }
        }
        Err(last_error.unwrap_or_else(|| {
            (
                redis::ErrorKind::Client,
                "no cluster node answered CLUSTER SLOTS",
            )
                .into()
        }))
    }

    /// A client for the node at `host:port`, with the seeds' settings.
    pub(crate) fn client_at(&self, addr: &str) -> RedisResult<Client> {
        let (host, port) = addr
            .rsplit_once(':')
            .and_then(|(host, port)| Some((host, port.parse::<u16>().ok()?)))
            .ok_or_else(|| {
                redis::RedisError::from((redis::ErrorKind::Client, "bad node address"))
            })?;
        let template = self.seeds.first().ok_or_else(|| {
            redis::RedisError::from((redis::ErrorKind::Client, "a cluster needs a node"))
        })?;
        let info = template.get_connection_info().clone();
        let addr = match info.addr() {
            ConnectionAddr::TcpTls {
                insecure,
                tls_params,
                ..
            } => ConnectionAddr::TcpTls {
                host: host.to_string(),
                port,
                insecure: *insecure,
                tls_params: tls_params.clone(),
            },
            _ => ConnectionAddr::Tcp(host.to_string(), port),
        };
        Client::open(info.set_addr(addr))
    }
}

/// `CLUSTER SLOTS` of one node: (first, last, primary `host:port`) per range.
async fn cluster_slots(client: &Client) -> RedisResult<Vec<(u16, u16, String)>> {
    let mut conn = client.get_multiplexed_async_connection().await?;
    let reply: Value = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut conn)
        .await?;
    let Value::Array(ranges) = reply else {
        return Ok(Vec::new());
    };
    let mut parsed = Vec::new();
    for range in ranges {
        let Value::Array(fields) = range else {
            continue;
        };
        let (Some(Value::Int(first)), Some(Value::Int(last)), Some(Value::Array(primary))) =
            (fields.first(), fields.get(1), fields.get(2))
        else {
            continue;
        };
        let host: String = match primary.first() {
            Some(value) => redis::from_redis_value(value.clone())?,
            None => continue,
        };
        let port: u16 = match primary.get(1) {
            Some(value) => redis::from_redis_value(value.clone())?,
            None => continue,
        };
        parsed.push((*first as u16, *last as u16, format!("{host}:{port}")));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::slot;

    #[test]
    fn slots_match_redis() {
        // CLUSTER KEYSLOT answers, from Redis 7.0.
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"{user1000}.followers"));
        assert_eq!(slot(b"123456789"), 12739);
        assert_eq!(slot(b"foo{}{bar}"), slot(b"foo{}{bar}"));
        assert_eq!(slot(b"{}foo"), slot(b"{}foo"));
    }
}
