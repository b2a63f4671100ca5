//! A session to the primary that owns a key: one multiplexed connection, opened on first use
//! (to the node the [`Router`] names now) and replaced by a fresh one when it breaks, with
//! the crate's retry rule: a call that fails on a broken connection is sent again, unchanged
//! (same request id), on a fresh connection: once for one server; under Sentinel or Cluster,
//! also after `READONLY`, `MOVED` and the like, until the failover timeout, each time to the
//! primary named anew.

use crate::confirm::{self, Confirm, ReplicaCount, Shortfall};
use crate::router::Router;
use redis::aio::{AsyncPushSender, MultiplexedConnection};
use redis::{AsyncConnectionConfig, Client, Cmd, FromRedisValue, RedisError, RedisResult, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a session whose connections carry state does around opening each one. Such sessions speak
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

pub(crate) struct Session {
    router: Router,
    /// How long a reply may take beyond the time a `WAIT` asks for. The connections are opened
    /// without redis-rs's own response timeout so that a long `WAIT` is not cut short.
    response_timeout: Duration,
    hooks: Option<Arc<dyn Hooks>>,
    slot: Mutex<Slot>,
    /// The primary's replicas, as this session's connection last learnt them (confirmation).
    replicas: std::sync::Mutex<Option<ReplicaCount>>,
    /// The reply deadlines' timers, kept armed between calls (see [`Deadlines`]).
    deadlines: Deadlines,
}

#[derive(Default)]
struct Slot {
    conn: Option<MultiplexedConnection>,
    /// Counts the connections opened, so that callers that saw the same connection fail
    /// replace it once, not once each.
    generation: u64,
}

impl Session {
    /// A session for plain calls to the primary of `router`.
    pub(crate) fn new(router: Router, response_timeout: Duration) -> Session {
        Session {
            router,
            response_timeout,
            hooks: None,
            slot: Mutex::default(),
            replicas: std::sync::Mutex::default(),
            deadlines: Deadlines::default(),
        }
    }

    /// A RESP3 session whose every connection is prepared by `hooks` before it is used.
    pub(crate) fn with_hooks(
        router: Router,
        response_timeout: Duration,
        hooks: Arc<dyn Hooks>,
    ) -> Session {
        Session {
            hooks: Some(hooks),
            ..Session::new(router, response_timeout)
        }
    }

    pub(crate) fn router(&self) -> &Router {
        &self.router
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
        self.retrying(|mut conn, _| async move { self.send(&mut conn, cmd, extra).await })
            .await
    }

    /// Sends `cmd` pipelined with the confirmation `confirm` asks for (see `confirm`), retried
    /// as [`call`](Session::call): the reply, and the shortfall when fewer replicas than required
    /// confirmed in time. A reply that wrote nothing (nil) needs no confirmation.
    pub(crate) async fn call_confirmed<T: FromRedisValue>(
        &self,
        cmd: &Cmd,
        extra: Option<Duration>,
        confirm: &Confirm,
    ) -> RedisResult<(T, Option<Shortfall>)> {
        self.retrying(|mut conn, generation| async move {
            self.send_confirmed(&mut conn, generation, cmd, extra, confirm)
                .await
        })
        .await
    }

    /// Sends `cmd` once (with its confirmation), for calls without a request id, which the
    /// server could not tell from a second call if retried. After a connection error the next
    /// call opens a fresh connection; the error is returned (whether the call took effect is
    /// unknown).
    pub(crate) async fn call_once<T: FromRedisValue>(
        &self,
        cmd: &Cmd,
        confirm: &Confirm,
    ) -> RedisResult<(T, Option<Shortfall>)> {
        let (mut conn, generation) = self.current().await?;
        let reply = self
            .send_confirmed(&mut conn, generation, cmd, Some(Duration::ZERO), confirm)
            .await;
        if let Err(err) = &reply {
            if is_connection_error(err) || self.primary_moved(err) {
                self.router.forget_primary(err.redirect_node());
                self.discard(generation).await;
            }
        }
        reply
    }

    /// `send` (on a connection of `generation`) until it answers, or fails in a way a retry
    /// cannot mend: after a connection error (or, following failovers, a node that is no
    /// longer the key's primary) the same call goes to a fresh connection (see [`Retry`]).
    async fn retrying<T, F, Fut>(&self, mut send: F) -> RedisResult<T>
    where
        F: FnMut(MultiplexedConnection, u64) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let mut retry = Retry::new(self);
        loop {
            let (reply, generation) = match self.current().await {
                Ok((conn, generation)) => (send(conn, generation).await, Some(generation)),
                Err(err) => (Err(err), None),
            };
            let err = match reply {
                Ok(reply) => return Ok(reply),
                Err(err) => err,
            };
            if !retry.again(&err, generation).await {
                return Err(err);
            }
        }
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
        self.deadlines
            .within(limit, RESPONSE_TIMEOUT, cmd.query_async(conn))
            .await
    }

    /// Sends `cmd` and, when `confirm` asks for replicas, `WAIT` in the same round trip.
    pub(crate) async fn send_confirmed<T: FromRedisValue>(
        &self,
        conn: &mut MultiplexedConnection,
        generation: u64,
        cmd: &Cmd,
        extra: Option<Duration>,
        confirm: &Confirm,
    ) -> RedisResult<(T, Option<Shortfall>)> {
        let required = confirm::required(confirm, &self.replicas, conn, generation).await?;
        if required == 0 {
            return Ok((self.send(conn, cmd, extra).await?, None));
        }
        let mut pipe = redis::pipe();
        pipe.ignore_errors()
            .add_command(cmd.clone())
            .add_command(confirm.command(required));
        let extra = extra.map(|extra| extra + confirm.wait_time());
        let limit = extra.map_or(Duration::MAX, |extra| self.response_timeout + extra);
        let replies: Vec<Value> = self
            .deadlines
            .within(limit, RESPONSE_TIMEOUT, pipe.query_async(conn))
            .await?;
        let mut replies = replies.into_iter();
        let reply = replies.next().unwrap_or(Value::Nil).extract_error()?;
        let shortfall = match (&reply, replies.next()) {
            (Value::Nil, _) => None,
            (_, Some(wait)) => {
                // A refused WAITAOF (no `appendonly` on the primary) confirms nothing; the
                // write was made, so it is reported as a shortfall, which undoes an
                // acquisition, rather than an error, which would leave it held.
                let wait = wait.extract_error().unwrap_or_else(|err| {
                    log::warn!("rlock: the confirmation failed: {err}");
                    Value::Int(0)
                });
                let confirmed = confirm.confirmed(&wait);
                (confirmed < required).then_some(Shortfall {
                    confirmed,
                    required,
                    timeout: confirm.wait_time(),
                })
            }
            (_, None) => None,
        };
        Ok((T::from_redis_value(reply)?, shortfall))
    }

    /// The current connection (opened when there is none) and its generation.
    pub(crate) async fn current(&self) -> RedisResult<(MultiplexedConnection, u64)> {
        let mut slot = self.slot.lock().await;
        if slot.conn.is_none() {
            // Boxed: connecting is rare, and its future (several kB) would otherwise be part
            // of every call's, copied as each call's future is built.
            Box::pin(self.open(&mut slot)).await?;
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
        self.discard(failed).await;
        self.current().await
    }

    /// Drops the connection of generation `failed` (the next use opens a fresh one), unless
    /// another caller replaced it already.
    async fn discard(&self, failed: u64) {
        let mut slot = self.slot.lock().await;
        if slot.generation == failed {
            slot.conn = None;
        }
    }

    /// Whether `err` says the node is not (or no longer) the key's primary, where the session
    /// follows failovers (Sentinel, Cluster).
    pub(crate) fn primary_moved(&self, err: &RedisError) -> bool {
        self.router.follows_failover() && moved_code(err.code())
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
        let mut client = self.router.client().await?;
        if self.hooks.is_some() {
            client = resp3(&client);
        }
        let connecting = client.get_multiplexed_async_connection_with_config(&config);
        let mut conn = within(self.response_timeout, "(connecting)", connecting).await?;
        // The sentinels or the slot map may still name a node that is no longer primary.
        if self.router.follows_failover() && !is_primary(&mut conn).await? {
            self.router.forget_primary(None);
            return Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "the node named primary is not (yet) primary",
            )
            .into());
        }
        if let Some(hooks) = &self.hooks {
            hooks.setup(&mut conn, generation).await?;
        }
        slot.generation = generation;
        slot.conn = Some(conn.clone());
        Ok(conn)
    }
}

/// How often a failed call is sent again: where the session follows failovers, until the
/// failover timeout (every 100 ms after the first retry); else once, after a connection
/// error only. Each retry forgets the primary where the error says it moved.
pub(crate) struct Retry<'a> {
    session: &'a Session,
    retries: u32,
    since: Instant,
}

impl<'a> Retry<'a> {
    pub(crate) fn new(session: &'a Session) -> Retry<'a> {
        Retry {
            session,
            retries: 0,
            since: Instant::now(),
        }
    }

    /// Whether to send again after `err` on the connection `generation` (`None`: none
    /// could be opened); drops that connection and pauses first as needed.
    pub(crate) async fn again(&mut self, err: &RedisError, generation: Option<u64>) -> bool {
        let router = &self.session.router;
        let busy = matches!(err.code(), Some("TRYAGAIN" | "LOADING" | "CLUSTERDOWN"));
        let moved = is_connection_error(err) || self.session.primary_moved(err);
        let follows = router.follows_failover();
        let allowed = match follows {
            true => (moved || busy) && self.since.elapsed() < router.failover_timeout(),
            false => is_connection_error(err) && self.retries == 0,
        };
        if !allowed {
            return false;
        }
        if moved {
            router.forget_primary(err.redirect_node());
            if let Some(generation) = generation {
                self.session.discard(generation).await;
            }
        }
        if self.retries > 0 || busy {
            tokio::time::sleep(RETRY_PAUSE).await;
        }
        self.retries += 1;
        true
    }
}

/// Pause between attempts to reach a primary.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Error codes that say the node does not (or no longer) serve the key as its primary.
pub(crate) fn moved_code(code: Option<&str>) -> bool {
    matches!(
        code,
        Some("MOVED" | "ASK" | "READONLY" | "MASTERDOWN" | "UNBLOCKED" | "CLUSTERDOWN")
    )
}

/// `ROLE` says `master`.
async fn is_primary(conn: &mut MultiplexedConnection) -> RedisResult<bool> {
    let role: Value = redis::cmd("ROLE").query_async(conn).await?;
    Ok(match role {
        Value::Array(fields) => matches!(
            fields.first(),
            Some(Value::BulkString(word)) if word == b"master"
        ),
        _ => false,
    })
}

const RESPONSE_TIMEOUT: &str = "(rlock-client response timeout)";

/// What `work` answers, or after `limit` a timed-out I/O error (a connection error: the
/// connection is not to be trusted), saying `no reply in time <what>`.
pub(crate) async fn within<T>(
    limit: Duration,
    what: &str,
    work: impl Future<Output = RedisResult<T>>,
) -> RedisResult<T> {
    match tokio::time::timeout(limit, work).await {
        Ok(done) => done,
        Err(_elapsed) => Err(timed_out(what)),
    }
}

fn timed_out(what: &str) -> RedisError {
    std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("no reply in time {what}"),
    )
    .into()
}

/// Most calls answer well within their deadline. A fresh tokio timer per call (`timeout`) is
/// the earliest in the runtime's timer wheel whenever the runtime is idle, so registering it
/// wakes the thread parked in the I/O driver (an `eventfd` write and a context switch), twice
/// an uncontended pair. The timers here are reset to each call's deadline and kept
/// registered between calls: a reset to a later deadline than the one the driver sleeps
/// towards wakes nobody. One timer per call in flight, up to `KEPT`; those of a runtime other
/// than the caller's are not used (a timer belongs to the runtime that made it).
#[derive(Default)]
struct Deadlines {
    idle: std::sync::Mutex<Vec<(tokio::runtime::Id, Pin<Box<tokio::time::Sleep>>)>>,
}

impl Deadlines {
    /// Timers kept for the calls in flight at once on one session; more are made and dropped.
    const KEPT: usize = 4;

    /// What `work` answers, or after `limit` a timed-out I/O error, as [`within`].
    async fn within<T>(
        &self,
        limit: Duration,
        what: &str,
        work: impl Future<Output = RedisResult<T>>,
    ) -> RedisResult<T> {
        // A limit beyond any instant (`Duration::MAX`: no limit) is waited for without a timer.
        let Some(deadline) = tokio::time::Instant::now().checked_add(limit) else {
            return work.await;
        };
        let runtime = tokio::runtime::Handle::current().id();
        let kept = {
            let mut idle = self.idle.lock().expect("deadlines lock");
            let found = idle.iter().position(|(id, _)| *id == runtime);
            found.map(|at| idle.swap_remove(at).1)
        };
        let mut timer = match kept {
            Some(mut timer) => {
                timer.as_mut().reset(deadline);
                timer
            }
            None => Box::pin(tokio::time::sleep_until(deadline)),
        };
        let reply = tokio::select! {
            biased;
            done = work => done,
            () = timer.as_mut() => return Err(timed_out(what)),
        };
        let mut idle = self.idle.lock().expect("deadlines lock");
        if idle.len() < Self::KEPT {
            idle.push((runtime, timer));
        }
        reply
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
