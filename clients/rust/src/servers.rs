//! Where the locks live: one server, a primary managed by Sentinel, or a Redis Cluster; and
//! how every connection of the crate finds the primary that owns its key (a [`Router`]).

use crate::cluster::SlotMap;
use crate::confirm::Confirm;
use crate::router::Router;
use crate::sentinel::Sentinel;
use redis::Client;
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
    pub(crate) deployment: Deployment,
    confirm: Confirm,
    pub(crate) failover_timeout: Duration,
}

/// The one server, the Sentinel-managed primary, or the Cluster.
#[derive(Clone)]
pub(crate) enum Deployment {
    Single(Client),
    Sentinel(Arc<Sentinel>),
    Cluster(Arc<SlotMap>),
}

impl Servers {
    /// One server (a primary whose replicas, if any, confirm acquisitions): what a
    /// `&redis::Client` converts to. A call that fails on a broken connection is sent once more
    /// on a fresh one, to the same address.
    pub fn single(client: &Client) -> Servers {
        Servers::with(Deployment::Single(client.clone()))
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
        Servers::with(Deployment::Sentinel(Arc::new(Sentinel::new(
            master_name.into(),
            sentinels,
        ))))
    }

    /// A Redis Cluster, from one or more of its nodes (their settings, such as the password,
    /// are used for every node). Each key goes to the primary of its slot (`CLUSTER SLOTS`,
    /// read again after a `MOVED`, a failure or a failover; `ASK` is followed).
    pub fn cluster(nodes: impl IntoIterator<Item = Client>) -> Servers {
        let seeds: Vec<Client> = nodes.into_iter().collect();
        Servers::with(Deployment::Cluster(Arc::new(SlotMap::new(seeds))))
    }

    fn with(deployment: Deployment) -> Servers {
        Servers {
            deployment,
            confirm: Confirm::default(),
            failover_timeout: DEFAULT_FAILOVER_TIMEOUT,
        }
    }

    /// Sentinel: the settings (username, password, db, protocol, TLS) to speak to the primary
    /// with, from a client whose address is ignored. No effect on the other topologies.
    pub fn node_settings(mut self, client: &Client) -> Servers {
        if let Deployment::Sentinel(sentinel) = &self.deployment {
            let sentinel = sentinel.with_node_settings(client.get_connection_info().clone());
            self.deployment = Deployment::Sentinel(Arc::new(sentinel));
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
    pub(crate) fn router(&self, key: impl AsRef<[u8]>) -> Router {
        Router::new(self.clone(), key.as_ref().to_vec())
    }

    /// The database number keys live in (keyspace events name it).
    pub(crate) fn db(&self) -> i64 {
        match &self.deployment {
            Deployment::Single(client) => client.get_connection_info().redis_settings().db(),
            Deployment::Sentinel(sentinel) => sentinel.db(),
            Deployment::Cluster(_) => 0,
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
