//! Finding the primary through Sentinel, our own small discovery over `SENTINEL
//! get-master-addr-by-name` rather than redis-rs's `sentinel` feature: the primary must be
//! asked for again after *every* failure of *any* of our connections (a watchdog connection
//! re-binds on the new primary, a `NOTIFY` subscription moves there), and each connection
//! checks with `ROLE` that the node it reached is a primary, which the crate's cached
//! `SentinelClient` does not let us tie together. It is some 60 lines.

use crate::session::within;
use redis::{Client, ConnectionAddr, ConnectionInfo, RedisResult};
use std::sync::Mutex;
use std::time::Duration;

/// How long one Sentinel may take to answer.
const ASK_SENTINEL_LIMIT: Duration = Duration::from_secs(1);

pub(crate) struct Sentinel {
    master_name: String,
    sentinels: Vec<Client>,
    /// Settings for the data nodes (their address is replaced by the primary's).
    node: Option<ConnectionInfo>,
    /// The primary's address as last told, until a failure makes us ask again.
    primary: Mutex<Option<(String, u16)>>,
}

impl Sentinel {
    pub(crate) fn new(master_name: String, sentinels: Vec<Client>) -> Sentinel {
        Sentinel {
            master_name,
            sentinels,
            node: None,
            primary: Mutex::default(),
        }
    }

    pub(crate) fn with_node_settings(&self, node: ConnectionInfo) -> Sentinel {
        Sentinel {
            master_name: self.master_name.clone(),
            sentinels: self.sentinels.clone(),
            node: Some(node),
            primary: Mutex::default(),
        }
    }

    pub(crate) fn db(&self) -> i64 {
        self.node
            .as_ref()
            .map_or(0, |node| node.redis_settings().db())
    }

    /// A client for the primary: the address last told, or the first answer of a Sentinel.
    pub(crate) async fn primary(&self) -> RedisResult<Client> {
        let known = self.primary.lock().expect("primary lock").clone();
        let (host, port) = match known {
            Some(addr) => addr,
            None => {
                let addr = self.ask().await?;
                *self.primary.lock().expect("primary lock") = Some(addr.clone());
                addr
            }
        };
        let addr = ConnectionAddr::Tcp(host, port);
        let info = match &self.node {
            Some(node) => node.clone().set_addr(addr),
            None => redis::IntoConnectionInfo::into_connection_info(addr)?,
        };
        Client::open(info)
    }

    /// A connection failed or the node is no longer primary: ask the Sentinels next time.
    pub(crate) fn forget(&self) {
        *self.primary.lock().expect("primary lock") = None;
    }

    async fn ask(&self) -> RedisResult<(String, u16)> {
        let mut last_error = None;
        for sentinel in &self.sentinels {
            let asked = within(ASK_SENTINEL_LIMIT, "(SENTINEL)", async {
                let mut conn = sentinel.get_multiplexed_async_connection().await?;
                let mut cmd = redis::cmd("SENTINEL");
                cmd.arg("get-master-addr-by-name").arg(&self.master_name);
                cmd.query_async::<Option<(String, u16)>>(&mut conn).await
            });
            match asked.await {
                Ok(Some(addr)) => return Ok(addr),
                Ok(None) => {}
                Err(err) => last_error = Some(err),
            }
        }
        Err(last_error.unwrap_or_else(|| {
            (
                redis::ErrorKind::MasterNameNotFoundBySentinel,
                "no Sentinel knows the master name",
                self.master_name.clone(),
            )
                .into()
        }))
    }
}
