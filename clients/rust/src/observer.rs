//! An election's observer ([`Election::observe`](crate::Election::observe)): a stream of
//! leader changes from the key's keyspace events (module class `d`), reading `RLOCK.LEADER`
//! at each event and after every reconnect, on the primary that owns the key.

use crate::election::{query_leader, Leader};
use crate::error::{Error, Result};
use crate::servers::Servers;
use crate::session::{is_connection_error, within, BoxFuture, Hooks, Session};
use crate::watchdog::RECONNECT_PAUSE;
use redis::aio::{AsyncPushSender, MultiplexedConnection};
use redis::{PushInfo, PushKind, RedisResult, Value};
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// A stream of leader changes ([`Election::observe`](crate::Election::observe)). Read it with
/// `futures::StreamExt::next`, or [`Observer::next`] without the `futures` crate.
pub struct Observer {
    rx: mpsc::UnboundedReceiver<Result<Option<Leader>>>,
    task: AbortHandle,
}

impl Observer {
    /// Follows the election `name` on the primary that owns it, on a connection of its own.
    pub(crate) fn start(servers: &Servers, name: &str, response_timeout: Duration) -> Observer {
        let (tx, rx) = mpsc::unbounded_channel();
        let (pushes_tx, pushes) = mpsc::unbounded_channel();
        let db = servers.db();
        let hooks = Keyspace {
            channel: format!("__keyspace@{db}__:{name}"),
            pushes: pushes_tx,
            response_timeout,
        };
        let router = servers.router(name);
        let session = Session::with_hooks(router, response_timeout, Arc::new(hooks));
        let task = tokio::spawn(follow(session, name.to_string(), pushes, tx));
        Observer {
            rx,
            task: task.abort_handle(),
        }
    }

    /// The next leader change: `None` when the stream has ended.
    pub async fn next(&mut self) -> Option<Result<Option<Leader>>> {
        self.rx.recv().await
    }
}

impl futures_core::Stream for Observer {
    type Item = Result<Option<Leader>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The hooks of an observer's connection: each one subscribes to the key's keyspace channel
/// before it is used, and its pushes go to the observer's task, tagged with its generation.
struct Keyspace {
    channel: String,
    pushes: mpsc::UnboundedSender<(u64, PushInfo)>,
    response_timeout: Duration,
}

impl Hooks for Keyspace {
    fn push_sender(&self, generation: u64) -> Arc<dyn AsyncPushSender> {
        let pushes = self.pushes.clone();
        Arc::new(move |info: PushInfo| {
            let _ = pushes.send((generation, info));
            Ok::<(), ()>(())
        })
    }

    fn setup<'a>(
        &'a self,
        conn: &'a mut MultiplexedConnection,
        _generation: u64,
    ) -> BoxFuture<'a, RedisResult<()>> {
        Box::pin(async move {
            let what = "while subscribing to keyspace events";
            within(self.response_timeout, what, conn.subscribe(&self.channel)).await
        })
    }
}

/// The observer's task: on each connection (subscribed first), read the leader, then again at
/// every event of the key, sending each change; when the connection drops, a fresh one
/// catches up the same way.
async fn follow(
    session: Session,
    key: String,
    mut pushes: mpsc::UnboundedReceiver<(u64, PushInfo)>,
    tx: mpsc::UnboundedSender<Result<Option<Leader>>>,
) {
    if let Err(err) = events_enabled(&session).await {
        let _ = tx.send(Err(err));
        return;
    }
    let mut last: Option<Option<(String, Option<u64>)>> = None;
    let mut emit = |leader: Option<Leader>| {
        let seen = leader.as_ref().map(|l| (l.owner.clone(), l.term));
        if last.as_ref() == Some(&seen) {
            return true;
        }
        last = Some(seen);
        tx.send(Ok(leader)).is_ok()
    };
    loop {
        let generation = match session.current().await {
            Ok((_, generation)) => generation,
            Err(_) => {
                tokio::time::sleep(RECONNECT_PAUSE).await;
                continue;
            }
        };
        // Subscribed before reading: a change after this read comes as an event.
        let mut event = true;
        while event {
            match query_leader(&session, &key).await {
                Ok(leader) if session.generation().await == generation => {
                    if !emit(leader) {
                        return;
                    }
                }
                // Read on a newer connection: catch up on it from the start.
                Ok(_) => break,
                Err(err) if is_connection_error(&err) => break,
                Err(err) => {
                    let _ = tx.send(Err(err.into()));
                    return;
                }
            }
            event = loop {
                let push = tokio::select! {
                    push = pushes.recv() => push,
                    _ = still_primary(&session) => break false,
                };
                match push {
                    None => return,
                    Some((from, _)) if from != generation => {}
                    Some((_, info)) => match info.kind {
                        PushKind::Message => break true,
                        PushKind::Disconnection => break false,
                        _ => {}
                    },
                }
            };
        }
        if session.replace(generation).await.is_err() {
            tokio::time::sleep(RECONNECT_PAUSE).await;
        }
    }
}

/// Resolves once the observer's node is no longer the key's primary (asked with `ROLE` every
/// second, where the session follows failovers): keyspace events are the node's own, so after a
/// Cluster failover, which leaves the old primary's connections open, the observer must move
/// to the new primary itself. Pending for ever for one server.
async fn still_primary(session: &Session) {
    if !session.router().follows_failover() {
        return std::future::pending().await;
    }
    loop {
        tokio::time::sleep(ROLE_CHECK_EVERY).await;
        let role: RedisResult<Value> = session
            .call(&redis::cmd("ROLE"), Some(Duration::ZERO))
            .await;
        let primary = matches!(&role, Ok(Value::Array(fields))
            if matches!(fields.first(), Some(Value::BulkString(word)) if word == b"master"));
        if !primary {
            session.router().forget_primary(None);
            return;
        }
    }
}

/// How often an observer under Sentinel or Cluster checks that its node is still primary.
const ROLE_CHECK_EVERY: Duration = Duration::from_secs(1);

/// An error unless the server publishes keyspace events of the module class (`K` and `d`;
/// `A` includes `d`). A server that does not let us read the setting is trusted.
async fn events_enabled(session: &Session) -> Result<()> {
    let mut cmd = redis::cmd("CONFIG");
    cmd.arg("GET").arg("notify-keyspace-events");
    let config: RedisResult<HashMap<String, String>> =
        session.call(&cmd, Some(Duration::ZERO)).await;
    let Some(flags) = config.ok().and_then(|config| config.into_values().next()) else {
        return Ok(());
    };
    if flags.contains('K') && (flags.contains('d') || flags.contains('A')) {
        return Ok(());
    }
    let detail = format!(
        "notify-keyspace-events is {flags:?}: observing an election needs K and d (Kd, or Kdgx)"
    );
    Err(Error::Redis(
        (redis::ErrorKind::Client, "no keyspace events", detail).into(),
    ))
}
