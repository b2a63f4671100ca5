//! A link to one server: one multiplexed connection, opened on first use and replaced by a
//! fresh one when it breaks, with the crate's retry rule: a call that fails on a broken
//! connection is sent once more, unchanged (same request id), on a fresh connection.

use redis::aio::{AsyncPushSender, MultiplexedConnection};
use redis::{AsyncConnectionConfig, Client, Cmd, FromRedisValue, RedisResult};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a link whose connections carry state does around opening each one. Such links speak
/// RESP3: the protocol in which redis-rs reports a dropped connection at once (a
/// `Disconnection` push) and delivers pub/sub messages next to replies.
pub(crate) trait Hooks: Send + Sync + 'static {
    /// Where the connection numbered `generation` (1 for the first) sends its pushes.
    fn push_sender(&self, generation: u64) -> Arc<dyn AsyncPushSender>;

    /// Runs on the fresh connection numbered `generation` before anything else is sent on it.
    fn setup<'a>(
        &'a self,
        conn: &'a mut MultiplexedConnection,
        generation: u64,
    ) -> BoxFuture<'a, RedisResult<()>>;
}

pub(crate) struct Link {
    client: Client,
    /// How long a reply may take beyond the time a `WAIT` asks for. The connections are opened
    /// without redis-rs's own response timeout so that a long `WAIT` is not cut short.
    response_timeout: Duration,
    hooks: Option<Arc<dyn Hooks>>,
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
            hooks: None,
            slot: Mutex::default(),
        }
    }

    /// A RESP3 link whose every connection is prepared by `hooks` before it is used.
    pub(crate) fn with_hooks(
        client: &Client,
        response_timeout: Duration,
        hooks: Arc<dyn Hooks>,
    ) -> Link {
        Link {
            hooks: Some(hooks),
            ..Link::new(&resp3(client), response_timeout)
        }
    }

    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    pub(crate) fn response_timeout(&self) -> Duration {
        self.response_timeout
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
                let (mut conn, _) = self.replace(generation).await?;
                self.send(&mut conn, cmd, extra).await
            }
            reply => reply,
        }
    }

    /// Sends `cmd` once, for calls without a request id, which the server could not tell from
    /// a second call if retried. After a connection error the next call opens a fresh
    /// connection; the error is returned (whether the call took effect is unknown).
    pub(crate) async fn call_once<T: FromRedisValue>(
        &self,
        cmd: &Cmd,
        extra: Duration,
    ) -> RedisResult<T> {
        let (mut conn, generation) = self.current().await?;
        let reply = self.send(&mut conn, cmd, Some(extra)).await;
        if reply.as_ref().is_err_and(is_connection_error) {
            let mut slot = self.slot.lock().await;
            if slot.generation == generation {
                slot.conn = None;
            }
        }
        reply
    }

    /// Sends `cmd` on `conn` once, bounded by the response timeout plus `extra`.
    pub(crate) async fn send<T: FromRedisValue>(
        &self,
        conn: &mut MultiplexedConnection,
        cmd: &Cmd,
        extra: Option<Duration>,
    ) -> RedisResult<T> {
        let Some(extra) = extra else {
            return cmd.query_async(conn).await;
        };
        let limit = self.response_timeout + extra;
        within(
            limit,
            "(rlock-client response timeout)",
            cmd.query_async(conn),
        )
        .await
    }

    /// The current connection (opened when there is none) and its generation.
    pub(crate) async fn current(&self) -> RedisResult<(MultiplexedConnection, u64)> {
        let mut slot = self.slot.lock().await;
        if slot.conn.is_none() {
            self.open(&mut slot).await?;
        }
        let conn = slot.conn.clone().expect("just opened");
        Ok((conn, slot.generation))
    }

    /// The generation of the current connection (0 before the first).
    pub(crate) async fn generation(&self) -> u64 {
        self.slot.lock().await.generation
    }

    /// Replaces the connection of generation `failed`, unless another caller already did.
    pub(crate) async fn replace(&self, failed: u64) -> RedisResult<(MultiplexedConnection, u64)> {
        let mut slot = self.slot.lock().await;
        match &slot.conn {
            Some(conn) if slot.generation != failed => Ok((conn.clone(), slot.generation)),
            _ => {
                let conn = self.open(&mut slot).await?;
                Ok((conn, slot.generation))
            }
        }
    }

    async fn open(&self, slot: &mut Slot) -> RedisResult<MultiplexedConnection> {
        slot.conn = None;
        let generation = slot.generation + 1;
        let mut config = AsyncConnectionConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(Some(self.response_timeout));
        if let Some(hooks) = &self.hooks {
            config = config.set_push_sender(hooks.push_sender(generation));
        }
        let mut conn = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        if let Some(hooks) = &self.hooks {
            hooks.setup(&mut conn, generation).await?;
        }
        slot.generation = generation;
        slot.conn = Some(conn.clone());
        Ok(conn)
    }
}

/// What `work` answers, or after `limit` a timed-out I/O error (a connection error: the
/// connection is not to be trusted), saying `no reply in time <what>`.
pub(crate) async fn within<T>(
    limit: Duration,
    what: &str,
    work: impl Future<Output = RedisResult<T>>,
) -> RedisResult<T> {
    match tokio::time::timeout(limit, work).await {
        Ok(done) => done,
        Err(_elapsed) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no reply in time {what}"),
        )
        .into()),
    }
}

/// The same server and settings, spoken in RESP3.
fn resp3(client: &Client) -> Client {
    let info = client.get_connection_info().clone();
    let resp3 = info
        .redis_settings()
        .clone()
        .set_protocol(redis::ProtocolVersion::RESP3);
    Client::open(info.set_redis_settings(resp3))
        .expect("the same connection info with RESP3 is valid")
}

/// Errors after which the connection is not to be trusted, and a retry on a fresh one is the
/// right answer: I/O errors (dropped, reset, timed out) and what redis-rs says needs a
/// reconnect. Server replies such as `ERR` or `WRONGTYPE` are final.
pub(crate) fn is_connection_error(err: &redis::RedisError) -> bool {
    err.is_io_error() || err.is_unrecoverable_error()
}
