//! Where the locks live: one server, a primary managed by Sentinel, or a Redis Cluster; and
//! how every connection of the crate finds the primary that owns its key (an [`Endpoint`]).

use crate::cluster::{slot, SlotMap};
use crate::confirm::Confirm;
use crate::sentinel::Sentinel;
use redis::{Client, ConnectionAddr, RedisResult};
use std::sync::Arc;
use std::time::Duration;

/// How long a call keeps looking for the primary after a failover, by default: a Sentinel
/// with `down-after-milliseconds 5000` promotes a replica within about 10 s.
const DEFAULT_FAILOVER_TIMEOUT: Duration = Duration::from_secs(15);

/// The servers the locks live on, and how acquisitions are confirmed by their replicas. Every
/// type takes it where it takes a `redis::Client` (`Lock::new(&servers, key)`), and a
/// `&redis::Client` is one server.
///
/// ```no_run
/// # fn example() -> redis::RedisResult<()> {
/// use rlock_client::{Confirm, Lock, Servers};
/// use std::time::Duration;
///
/// // One server (or a primary with replicas, addressed directly): a redis::Client.
/// let client = redis::Client::open("redis://10.0.0.1/")?;
/// let lock = Lock::new(&client, "orders:42");
///
/// // A primary found through Sentinel ("mymaster"), with the data nodes' password.
/// let sentinels = ["redis://10.0.0.1:26379", "redis://10.0.0.2:26379"]
///     .map(|url| redis::Client::open(url).unwrap());
/// let servers = Servers::sentinel("mymaster", sentinels)
///     .node_settings(&redis::Client::open("redis://:secret@ignored/")?);
/// let lock = Lock::new(&servers, "orders:42");
///
/// // A Redis Cluster, from any of its nodes; every replica must confirm within 500 ms.
/// let seeds = ["redis://10.0.0.1:7000", "redis://10.0.0.2:7000"]
///     .map(|url| redis::Client::open(url).unwrap());
/// let servers = Servers::cluster(seeds).confirm(Confirm::replicas(1).timeout(Duration::from_millis(500)));
/// let lock = Lock::new(&servers, "orders:42");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Servers {
    topology: Topology,
    confirm: Confirm,
    failover_timeout: Duration,
}

#[derive(Clone)]
enum Topology {
    Single(Client),
    Sentinel(Arc<Sentinel>),
    Cluster(Arc<SlotMap>),
}

impl Servers {
    /// One server (a primary whose replicas, if any, confirm acquisitions): what a
    /// `&redis::Client` converts to. A call that fails on a broken connection is sent once more
    /// on a fresh one, to the same address.
    pub fn single(client: &Client) -> Servers {
        Servers::with(Topology::Single(client.clone()))
    }

    /// The primary that the Sentinels (one `redis::Client` each) name for `master_name`
    /// (`SENTINEL get-master-addr-by-name`), asked again after every failure: connections
    /// follow a failover to the new primary. The data nodes are spoken to with the settings
    /// of [`node_settings`](Servers::node_settings) (default: no password, db 0).
    pub fn sentinel(
        master_name: impl Into<String>,
        sentinels: impl IntoIterator<Item = Client>,
    ) -> Servers {
        let sentinels = sentinels.into_iter().collect();
        Servers::with(Topology::Sentinel(Arc::new(Sentinel::new(
            master_name.into(),
            sentinels,
        ))))
    }

    /// A Redis Cluster, from one or more of its nodes (their settings, such as the password,
    /// are used for every node). Each key goes to the primary of its slot (`CLUSTER SLOTS`,
    /// read again after a `MOVED`, a failure or a failover; `ASK` is followed).
    pub fn cluster(nodes: impl IntoIterator<Item = Client>) -> Servers {
        let seeds: Vec<Client> = nodes.into_iter().collect();
        Servers::with(Topology::Cluster(Arc::new(SlotMap::new(seeds))))
    }

    fn with(topology: Topology) -> Servers {
        Servers {
            topology,
            confirm: Confirm::default(),
            failover_timeout: DEFAULT_FAILOVER_TIMEOUT,
        }
    }

    /// Sentinel: the settings (username, password, db, protocol, TLS) to speak to the primary
    /// with, from a client whose address is ignored. No effect on the other topologies.
    pub fn node_settings(mut self, client: &Client) -> Servers {
        if let Topology::Sentinel(sentinel) = &self.topology {
            let sentinel = sentinel.with_node_settings(client.get_connection_info().clone());
            self.topology = Topology::Sentinel(Arc::new(sentinel));
        }
        self
    }

    /// How acquisitions, releases and other writes are confirmed by the replicas (default
    /// [`Confirm::auto`]: by those connected to the primary, within 1 s). Each handle can
    /// override it with its own `.confirm(..)`.
    pub fn confirm(mut self, confirm: Confirm) -> Servers {
        self.confirm = confirm;
        self
    }

    /// Sentinel and Cluster: how long a call keeps looking for a primary (asking the
    /// Sentinels or the cluster again, every 100 ms) before it fails. Default 15 s.
    pub fn failover_timeout(mut self, timeout: Duration) -> Servers {
        self.failover_timeout = timeout;
        self
    }

    pub(crate) fn default_confirm(&self) -> &Confirm {
        &self.confirm
    }

    /// The connections of `key` (the primary that owns it).
    pub(crate) fn endpoint(&self, key: impl AsRef<[u8]>) -> Endpoint {
        Endpoint {
            servers: self.clone(),
            key: key.as_ref().to_vec(),
        }
    }

    /// The database number keys live in (keyspace events name it).
    pub(crate) fn db(&self) -> i64 {
        match &self.topology {
            Topology::Single(client) => client.get_connection_info().redis_settings().db(),
            Topology::Sentinel(sentinel) => sentinel.db(),
            Topology::Cluster(_) => 0,
        }
    }
}

impl From<&Client> for Servers {
    fn from(client: &Client) -> Servers {
        Servers::single(client)
    }
}

impl From<Client> for Servers {
    fn from(client: Client) -> Servers {
        Servers::single(&client)
    }
}

impl From<&Servers> for Servers {
    fn from(servers: &Servers) -> Servers {
        servers.clone()
    }
}

/// The connections to the primary that owns one key: where a [`Link`](crate::link::Link)
/// opens each of its connections.
#[derive(Clone)]
pub(crate) struct Endpoint {
    servers: Servers,
    key: Vec<u8>,
}

impl Endpoint {
    /// A client for the primary that owns the key now (discovered when unknown).
    pub(crate) async fn client(&self) -> RedisResult<Client> {
        match &self.servers.topology {
            Topology::Single(client) => Ok(client.clone()),
            Topology::Sentinel(sentinel) => sentinel.primary().await,
            Topology::Cluster(map) => map.primary(slot(&self.key)).await,
        }
    }

    /// What the connection learnt says the primary moved (a failure, `READONLY`, `MOVED`):
    /// look it up again before the next connection.
    pub(crate) fn forget_primary(&self, moved_to: Option<(&str, u16)>) {
        match &self.servers.topology {
            Topology::Single(_) => {}
            Topology::Sentinel(sentinel) => sentinel.forget(),
            Topology::Cluster(map) => map.forget(moved_to),
        }
    }

    /// Whether connections follow the primary from node to node (Sentinel, Cluster): they
    /// check that the node they reach is a primary, and calls keep trying for the failover
    /// timeout. One server: one retry, on the same address.
    pub(crate) fn follows_failover(&self) -> bool {
        !matches!(self.servers.topology, Topology::Single(_))
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
