//! The waiting acquire: `<P>.ACQUIRE ... WAIT ms NOTIFY` (or `RLATCH.AWAIT key WAIT ms
//! NOTIFY`) on the shared connection, its [`Ticket`] in the dispatcher while the grant is
//! awaited, and how a wait that is given up leaves the server's queue.

use super::connection::release;
use super::{Chore, Event, Notifier, Target};
use crate::commands::{self, AcquireOptions, Family, Wait};
use crate::confirm::{Confirm, Shortfall};
use crate::error::Result;
use crate::guard::spawn_if_runtime;
use crate::link::{is_connection_error, moved_code, Link, Retry};
use redis::aio::MultiplexedConnection;
use redis::{RedisError, RedisResult, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A wait's places in the dispatcher: one per key it waits for (several for
/// `RLOCK.ACQUIREALL`, whose outcome comes as one message per key). Dropped armed (the
/// acquiring future was cancelled, or gave up at its deadline), it leaves the server's queue
/// in the background: `RLOCK.CANCEL` (of any one key: it takes a request for several keys out
/// of every queue), then a grant that raced in, or an acquire that held at once, is released.
struct Ticket {
    notifier: Arc<Notifier>,
    kind: Family,
    places: Vec<Place>,
    /// The acquire's reply while it is on its way: sent from a task of its own, so that a
    /// cancelled acquire still learns whether it held at once.
    reply: Option<JoinHandle<RedisResult<Reply>>>,
    armed: bool,
}

/// An acquire's reply and the replicas' shortfall confirming it.
type Reply = (Value, Option<Shortfall>);

/// One key's place in the dispatcher, and the event it was told (once read).
struct Place {
    target: Target,
    id: u64,
    rx: Option<oneshot::Receiver<Event>>,
    told: Option<Event>,
}

impl Place {
    /// Whether it was granted: told so, or the grant is waiting to be read.
    fn granted(&mut self) -> bool {
        if self.told.is_none() {
            self.told = self.rx.as_mut().and_then(|rx| rx.try_recv().ok());
        }
        matches!(self.told, Some(Event::Granted(_)))
    }
}

impl Ticket {
    fn new(notifier: &Arc<Notifier>, kind: Family, targets: &[Target], generation: u64) -> Ticket {
        let places = targets
            .iter()
            .map(|target| {
                let (id, rx) = notifier.state.register(target, generation);
                Place {
                    target: target.clone(),
                    id,
                    rx: Some(rx),
                    told: None,
                }
            })
            .collect();
        Ticket {
            notifier: notifier.clone(),
            kind,
            places,
            reply: None,
            armed: true,
        }
    }

    /// Sends the acquire on `conn` of `generation` (registered first, so that no message can
    /// miss it), pipelined with the replicas' confirmation of a grant at once.
    async fn send(
        &mut self,
        mut conn: MultiplexedConnection,
        generation: u64,
        cmd: redis::Cmd,
        confirm: &Confirm,
    ) -> RedisResult<Reply> {
        let link = self.notifier.link.clone();
        let confirm = confirm.clone();
        let reply = self.reply.insert(tokio::spawn(async move {
            let extra = Some(Duration::ZERO);
            link.send_confirmed::<Value>(&mut conn, generation, &cmd, extra, &confirm)
                .await
        }));
        let reply = reply.await;
        self.reply = None;
        reply.unwrap_or_else(|err| Err(std::io::Error::other(err.to_string()).into()))
    }

    /// How the wait ended: the tokens of all its keys, in order, or the first event that is
    /// not a grant.
    async fn outcome(&mut self) -> std::result::Result<Vec<u64>, Event> {
        let mut tokens = Vec::with_capacity(self.places.len());
        for place in &mut self.places {
            if place.told.is_none() {
                let event = match place.rx.as_mut() {
                    Some(rx) => rx.await.unwrap_or(Event::Disconnected),
                    None => Event::Disconnected,
                };
                place.told = Some(event);
            }
            match place.told.clone() {
                Some(Event::Granted(token)) => tokens.push(token),
                other => return Err(other.unwrap_or(Event::Disconnected)),
            }
        }
        Ok(tokens)
    }

    /// The wait is over and its outcome taken: leave the dispatcher, nothing to cancel. Grants
    /// are given back unless `kept`.
    fn forget(mut self, kept: bool) {
        self.armed = false;
        for place in &mut self.places {
            self.notifier.state.unregister(&place.target, place.id);
            if !kept && self.kind.holds() && place.granted() {
                let _ = self.notifier.state.chores.send(Chore::Release {
                    kind: self.kind,
                    key: place.target.key.clone(),
                    owner: place.target.owner.clone(),
                });
            }
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let notifier = self.notifier.clone();
        let kind = self.kind;
        let mut places = std::mem::take(&mut self.places);
        let reply = self.reply.take();
        spawn_if_runtime(async move {
            let link = notifier.link.clone();
            let unregister = |places: &[Place]| {
                for place in places {
                    notifier.state.unregister(&place.target, place.id);
                }
            };
            if let Some(reply) = reply {
                match reply.await {
                    // Held at once (or re-entered): give that hold back. (An open latch.)
                    Ok(Ok((Value::Int(_) | Value::Array(_), _))) => {
                        unregister(&places);
                        if kind.holds() {
                            for place in places {
                                let Target { key, owner, .. } = place.target;
                                release(link.clone(), kind, key, owner).await;
                            }
                        }
                        return;
                    }
                    // Not queued: nothing to cancel.
                    Ok(Ok((Value::Nil, _))) => {
                        unregister(&places);
                        return;
                    }
                    Ok(Err(err)) if !is_connection_error(&err) => {
                        unregister(&places);
                        return;
                    }
                    _ => {}
                }
            }
            let Some(first) = places.first() else { return };
            let target = first.target.clone();
            // An error means the connection is gone (its waits went with it) or the server
            // cannot be reached: the wait's own timeout or the connection's close ends it.
            let cancel = commands::cancel(&target.key, &target.owner);
            if kind == Family::Latch {
                // A latch's `RLOCK.CANCEL` names no owner: it takes out every wait of the
                // latch on this connection. So the last of them to leave sends it (the others
                // keep this one's entry, harmless: the latch opens for all at once), and the
                // waits that came since send themselves again.
                if notifier.state.unregister(&target, first.id) {
                    return;
                }
                let _: RedisResult<i64> = link.call(&cancel, Some(Duration::ZERO)).await;
                notifier.state.requeue(&target);
                return;
            }
            let _: RedisResult<i64> = link.call(&cancel, Some(Duration::ZERO)).await;
            // Whatever the server sent this wait before the CANCEL's reply has been
            // dispatched to its places by now; what comes after finds no waiter and is
            // released.
            unregister(&places);
            for place in &mut places {
                if place.granted() {
                    let Target { key, owner, .. } = place.target.clone();
                    release(link.clone(), kind, key, owner).await;
                }
            }
        });
    }
}

/// An acquire that holds: its tokens (one per key, in order), whether it was granted by a
/// message (after a wait) rather than at once, the connection that answered, and (granted at
/// once) the replicas' shortfall.
pub(crate) struct Held {
    pub(crate) tokens: Vec<u64>,
    pub(crate) granted: bool,
    pub(crate) generation: u64,
    pub(crate) shortfall: Option<Shortfall>,
}

/// `<P>.ACQUIRE ... WAIT ms NOTIFY` on the shared connection, and the wait for its message.
/// `None`: not granted (the wait ran out). Gives up locally at the wait plus the response
/// timeout, in case the server's `timeout` message never comes.
///
/// A latch waits differently: its `timeout` messages name no owner and could not be told
/// apart, so it asks the server to wait for ever (`WAIT 0`) and keeps its own deadline.
pub(crate) async fn acquire(
    notifier: &Arc<Notifier>,
    kind: Family,
    key: &str,
    owner: &str,
    options: &AcquireOptions,
    confirm: &Confirm,
) -> Result<Option<Held>> {
    let (asked, slack) = match kind {
        Family::Latch => (Wait::Forever, Duration::ZERO),
        _ => (options.wait, notifier.link.response_timeout()),
    };
    let until = deadline(options.wait, slack);
    let options = AcquireOptions {
        wait: asked,
        ..options.clone()
    };
    let cmd = commands::acquire(kind, key, owner, &options, &commands::request_id(), true);
    let target = Target::new(kind, key, owner);
    wait_for(notifier, kind, &[target], cmd, until, confirm).await
}

/// `RLOCK.ACQUIREALL ... WAIT ms NOTIFY` on the shared connection, and the wait for its
/// messages (one per key): as [`acquire`], for every key or none.
pub(crate) async fn acquire_all(
    notifier: &Arc<Notifier>,
    keys: &[String],
    owner: &str,
    options: &AcquireOptions,
    confirm: &Confirm,
) -> Result<Option<Held>> {
    let cmd = commands::acquire_all(keys, owner, options, &commands::request_id(), true);
    let targets: Vec<Target> = keys
        .iter()
        .map(|key| Target::new(Family::Lock, key, owner))
        .collect();
    let slack = notifier.link.response_timeout();
    let until = deadline(options.wait, slack);
    wait_for(notifier, Family::Lock, &targets, cmd, until, confirm).await
}

fn deadline(wait: Wait, slack: Duration) -> Option<Instant> {
    wait.extra_time().map(|wait| Instant::now() + wait + slack)
}

/// The tokens of an acquire's reply that holds: one, or (`ACQUIREALL`) one per key.
fn tokens(reply: &Value) -> Option<Vec<u64>> {
    match reply {
        Value::Int(token) => Some(vec![*token as u64]),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Int(token) => Some(*token as u64),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// Sends `cmd`, a waiting acquire with `NOTIFY` of `targets`, and waits for its outcome.
/// After its connection drops (or, following failovers, the node turns replica: `failed
/// READONLY`), it is sent again, with its id, to the primary of now: its place in line is the
/// new primary's last.
async fn wait_for(
    notifier: &Arc<Notifier>,
    kind: Family,
    targets: &[Target],
    cmd: redis::Cmd,
    deadline: Option<Instant>,
    confirm: &Confirm,
) -> Result<Option<Held>> {
    let link = &notifier.link;
    let mut retry = Retry::new(link);
    let (mut conn, mut generation) = reconnect(link, &mut retry, None).await?;
    loop {
        let mut ticket = Ticket::new(notifier, kind, targets, generation);
        let send = ticket.send(conn.clone(), generation, cmd.clone(), confirm);
        let (reply, shortfall) = match send.await {
            Err(err) if is_connection_error(&err) || link.primary_moved(&err) => {
                // The same request id on a fresh connection: it takes over its queue entry,
                // or answers as the first send did.
                if !retry.again(&err, Some(generation)).await {
                    // Dropped armed on a connection error: it may have queued.
                    return Err(err.into());
                }
                ticket.forget(false);
                (conn, generation) = reconnect(link, &mut retry, None).await?;
                continue;
            }
            Err(err) => {
                ticket.forget(false);
                return Err(err.into());
            }
            Ok(reply) => reply,
        };
        match reply {
            Value::SimpleString(status) if status == "WAITING" => {}
            Value::Nil => {
                ticket.forget(false);
                return Ok(None);
            }
            other => {
                ticket.forget(false);
                let tokens = tokens(&other).ok_or_else(|| unexpected(other))?;
                return Ok(Some(Held {
                    tokens,
                    granted: false,
                    generation,
                    shortfall,
                }));
            }
        }
        let outcome = match deadline {
            Some(deadline) => {
                match tokio::time::timeout_at(deadline.into(), ticket.outcome()).await {
                    Ok(outcome) => outcome,
                    // The ticket leaves the queue as it drops.
                    Err(_elapsed) => return Ok(None),
                }
            }
            None => ticket.outcome().await,
        };
        let event = match outcome {
            Ok(tokens) => {
                ticket.forget(true);
                return Ok(Some(Held {
                    tokens,
                    granted: true,
                    generation,
                    shortfall: None,
                }));
            }
            Err(event) => event,
        };
        ticket.forget(false);
        let err = match event {
            Event::Granted(_) | Event::Timeout => return Ok(None),
            Event::Failed(code) if link.primary_moved(&failed(&code)) => failed(&code),
            Event::Failed(code) => return Err(failed(&code).into()),
            Event::Requeue => {
                (conn, generation) = reconnect(link, &mut retry, None).await?;
                continue;
            }
            Event::Disconnected => std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "the connection dropped while waiting",
            )
            .into(),
        };
        (conn, generation) = reconnect(link, &mut retry, Some((err, generation))).await?;
    }
}

/// The link's connection, after `failed` (an error on a connection of that generation) when
/// there was one and a retry is allowed; connecting itself is retried the same way.
async fn reconnect(
    link: &Link,
    retry: &mut Retry<'_>,
    mut failed: Option<(RedisError, u64)>,
) -> RedisResult<(MultiplexedConnection, u64)> {
    loop {
        if let Some((err, generation)) = failed.take() {
            if !retry.again(&err, Some(generation)).await {
                return Err(err);
            }
        }
        match link.current().await {
            Ok(current) => return Ok(current),
            Err(err) if is_connection_error(&err) || moved_code(err.code()) => {
                if !retry.again(&err, None).await {
                    return Err(err);
                }
            }
            Err(err) => return Err(err),
        }
    }
}

/// A `failed` message as the server error it reports (`err.code()` is its code).
fn failed(code: &str) -> RedisError {
    let code: String = code
        .chars()
        .filter(|c| !c.is_whitespace() && !c.is_control())
        .collect();
    let line = format!("-{code} the wait failed when its turn came\r\n");
    match redis::parse_redis_value(line.as_bytes()).and_then(Value::extract_error) {
        Err(err) => err,
        Ok(_) => (redis::ErrorKind::Extension, "the wait failed", code).into(),
    }
}

fn unexpected(reply: Value) -> RedisError {
    (
        redis::ErrorKind::UnexpectedReturnType,
        "unexpected reply to a waiting call (... NOTIFY)",
        format!("{reply:?}"),
    )
        .into()
}
