//! A link to one server: one multiplexed connection, opened on first use and replaced by a
//! fresh one when it breaks, with the crate's retry rule: a call that fails on a broken
//! connection is sent once more, unchanged (same request id), on a fresh connection.

use crate::watchdog::Rebind;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, Cmd, FromRedisValue, PushInfo, RedisResult};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Mutex;

pub(crate) struct Link {
    client: Client,
    /// How long a reply may take beyond the time a `WAIT` asks for. The connections are opened
    /// without redis-rs's own response timeout so that a long `WAIT` is not cut short.
    response_timeout: Duration,
    /// Watchdog links only: where the connection says that it dropped.
    disconnects: Option<UnboundedSender<PushInfo>>,
    /// Watchdog links only: what a fresh connection must do before anything else.
    rebind: Option<Rebind>,
    slot: Mutex<Slot>,
}

#[derive(Default)]
struct Slot {
    conn: Option<MultiplexedConnection>,
    /// Counts the connections opened, so that callers that saw the same connection fail
    /// replace it once, not once each.
    generation: u64,
}

impl Link {
    /// A link for plain calls.
    pub(crate) fn new(client: &Client, response_timeout: Duration) -> Link {
        Link {
            client: client.clone(),
            response_timeout,
            disconnects: None,
            rebind: None,
            slot: Mutex::default(),
        }
    }

    /// A link that carries a watchdog binding: its connections speak RESP3, the only protocol
    /// in which redis-rs reports a dropped connection at once, and every fresh connection
    /// re-binds the holding before it is used.
    pub(crate) fn watched(
        client: &Client,
        response_timeout: Duration,
        disconnects: UnboundedSender<PushInfo>,
        rebind: Rebind,
    ) -> Link {
        let info = client.get_connection_info().clone();
        let resp3 = info
            .redis_settings()
            .clone()
            .set_protocol(redis::ProtocolVersion::RESP3);
        let client = Client::open(info.set_redis_settings(resp3))
            .expect("the same connection info with RESP3 is valid");
        Link {
            disconnects: Some(disconnects),
            rebind: Some(rebind),
            ..Link::new(&client, response_timeout)
        }
    }

    pub(crate) fn rebind(&self) -> Option<&Rebind> {
        self.rebind.as_ref()
    }

    /// Sends `cmd`, allowing `extra` more time than an ordinary reply (`None`: no limit).
    pub(crate) async fn call<T: FromRedisValue>(
        &self,
        cmd: &Cmd,
        extra: Option<Duration>,
    ) -> RedisResult<T> {
        let (mut conn, generation) = self.current().await?;
        match self.send(&mut conn, cmd, extra).await {
            Err(err) if is_connection_error(&err) => {
                let mut conn = self.replace(generation).await?;
                self.send(&mut conn, cmd, extra).await
            }
            reply => reply,
        }
    }

    async fn send<T: FromRedisValue>(
        &self,
        conn: &mut MultiplexedConnection,
        cmd: &Cmd,
        extra: Option<Duration>,
    ) -> RedisResult<T> {
        let Some(extra) = extra else {
            return cmd.query_async(conn).await;
        };
        match tokio::time::timeout(self.response_timeout + extra, cmd.query_async(conn)).await {
            Ok(reply) => reply,
            Err(_elapsed) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no reply in time (rlock-client response timeout)",
            )
            .into()),
        }
    }

    async fn current(&self) -> RedisResult<(MultiplexedConnection, u64)> {
        let mut slot = self.slot.lock().await;
        if slot.conn.is_none() {
            self.open(&mut slot).await?;
        }
        let conn = slot.conn.clone().expect("just opened");
        Ok((conn, slot.generation))
    }

    /// Replaces the connection of generation `failed`, unless another caller already did.
    async fn replace(&self, failed: u64) -> RedisResult<MultiplexedConnection> {
        let mut slot = self.slot.lock().await;
        match &slot.conn {
            Some(conn) if slot.generation != failed => Ok(conn.clone()),
            _ => self.open(&mut slot).await,
        }
    }

    async fn open(&self, slot: &mut Slot) -> RedisResult<MultiplexedConnection> {
        slot.conn = None;
        let mut config = AsyncConnectionConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(Some(self.response_timeout));
        if let Some(disconnects) = &self.disconnects {
            config = config.set_push_sender(disconnects.clone());
        }
        let mut conn = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        // A first connection has nothing to re-bind yet; a replacement may carry a holding
        // that is still bound to the connection it replaces.
        if let (Some(rebind), true) = (&self.rebind, slot.generation > 0) {
            rebind.run(&mut conn).await?;
        }
        slot.generation += 1;
        slot.conn = Some(conn.clone());
        Ok(conn)
    }
}

/// Errors after which the connection is not to be trusted, and a retry on a fresh one is the
/// right answer: I/O errors (dropped, reset, timed out) and what redis-rs says needs a
/// reconnect. Server replies such as `ERR` or `WRONGTYPE` are final.
fn is_connection_error(err: &redis::RedisError) -> bool {
    err.is_io_error() || err.is_unrecoverable_error()
}
