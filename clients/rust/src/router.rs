//! Which node serves a key: the [`Router`] of one key finds the primary that owns it now (the
//! one server, the primary Sentinel names, or the Cluster slot's node), forgets it when a
//! reply says it moved, and says whether connections follow failovers.

use crate::cluster::slot;
use crate::servers::{Deployment, Servers};
use redis::{Client, ConnectionAddr, RedisResult};
use std::time::Duration;

/// The connections to the primary that owns one key: where a [`Session`](crate::session::Session)
/// opens each of its connections.
#[derive(Clone)]
pub(crate) struct Router {
    servers: Servers,
    key: Vec<u8>,
}

impl Router {
    pub(crate) fn new(servers: Servers, key: Vec<u8>) -> Router {
        Router { servers, key }
    }

    /// A client for the primary that owns the key now (discovered when unknown).
    pub(crate) async fn client(&self) -> RedisResult<Client> {
        match &self.servers.deployment {
            Deployment::Single(client) => Ok(client.clone()),
            Deployment::Sentinel(sentinel) => sentinel.primary().await,
            Deployment::Cluster(map) => map.primary(slot(&self.key)).await,
        }
    }

    /// What the connection learnt says the primary moved (a failure, `READONLY`, `MOVED`):
    /// look it up again before the next connection.
    pub(crate) fn forget_primary(&self, moved_to: Option<(&str, u16)>) {
        match &self.servers.deployment {
            Deployment::Single(_) => {}
            Deployment::Sentinel(sentinel) => sentinel.forget(),
            Deployment::Cluster(map) => map.forget(moved_to),
        }
    }

    /// Whether connections follow the primary from node to node (Sentinel, Cluster): they
    /// check that the node they reach is a primary, and calls keep trying for the failover
    /// timeout. One server: one retry, on the same address.
    pub(crate) fn follows_failover(&self) -> bool {
        !matches!(self.servers.deployment, Deployment::Single(_))
    }

    pub(crate) fn failover_timeout(&self) -> Duration {
        self.servers.failover_timeout
    }
}

/// `host:port` of a TCP address, as `MOVED` and the registry of shared connections name it.
pub(crate) fn addr_name(addr: &ConnectionAddr) -> String {
    match addr {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
            format!("{host}:{port}")
        }
        other => format!("{other:?}"),
    }
}
