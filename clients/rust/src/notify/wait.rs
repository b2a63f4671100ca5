//! The waiting acquire: `<P>.ACQUIRE ... WAIT ms NOTIFY` (or `RLATCH.AWAIT key WAIT ms
//! NOTIFY`) on the shared connection, the wait for its message through a [`Ticket`], and
//! sending it again, with its request id, after its connection dropped.

use super::ticket::Ticket;
use super::{Event, Subscriber, Target};
use crate::commands::{self, AcquireOptions, Family, Wait};
use crate::confirm::{Confirm, Shortfall};
use crate::error::Result;
use crate::session::{is_connection_error, moved_code, Retry, Session};
use redis::aio::MultiplexedConnection;
use redis::{RedisError, RedisResult, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    subscriber: &Arc<Subscriber>,
    kind: Family,
    key: &str,
    owner: &str,
    options: &AcquireOptions,
    confirm: &Confirm,
) -> Result<Option<Held>> {
    let (asked, slack) = match kind {
        Family::Latch => (Wait::Forever, Duration::ZERO),
        _ => (options.wait, subscriber.session.response_timeout()),
    };
    let until = deadline(options.wait, slack);
    let options = AcquireOptions {
        wait: asked,
        ..options.clone()
    };
    let cmd = commands::acquire(kind, key, owner, &options, &commands::request_id(), true);
    let target = Target::new(kind, key, owner);
    wait_for(subscriber, kind, &[target], cmd, until, confirm).await
}

/// `RLOCK.ACQUIREALL ... WAIT ms NOTIFY` on the shared connection, and the wait for its
/// messages (one per key): as [`acquire`], for every key or none.
pub(crate) async fn acquire_all(
    subscriber: &Arc<Subscriber>,
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
    let slack = subscriber.session.response_timeout();
    let until = deadline(options.wait, slack);
    wait_for(subscriber, Family::Lock, &targets, cmd, until, confirm).await
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
    subscriber: &Arc<Subscriber>,
    kind: Family,
    targets: &[Target],
    cmd: redis::Cmd,
    deadline: Option<Instant>,
    confirm: &Confirm,
) -> Result<Option<Held>> {
    let session = &subscriber.session;
    let mut retry = Retry::new(session);
    let (mut conn, mut generation) = reconnect(session, &mut retry, None).await?;
    loop {
        let mut ticket = Ticket::new(subscriber, kind, targets, generation);
        let send = ticket.send(conn.clone(), generation, cmd.clone(), confirm);
        let (reply, shortfall) = match send.await {
            Err(err) if is_connection_error(&err) || session.primary_moved(&err) => {
                // The same request id on a fresh connection: it takes over its queue entry,
                // or answers as the first send did.
                if !retry.again(&err, Some(generation)).await {
                    // Dropped armed on a connection error: it may have queued.
                    return Err(err.into());
                }
                ticket.forget(false);
                (conn, generation) = reconnect(session, &mut retry, None).await?;
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
            Event::Failed(code) if session.primary_moved(&failed(&code)) => failed(&code),
            Event::Failed(code) => return Err(failed(&code).into()),
            Event::Requeue => {
                (conn, generation) = reconnect(session, &mut retry, None).await?;
                continue;
            }
            Event::Disconnected => std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "the connection dropped while waiting",
            )
            .into(),
        };
        (conn, generation) = reconnect(session, &mut retry, Some((err, generation))).await?;
    }
}

/// The session's connection, after `failed` (an error on a connection of that generation) when
/// there was one and a retry is allowed; connecting itself is retried the same way.
async fn reconnect(
    session: &Session,
    retry: &mut Retry<'_>,
    mut failed: Option<(RedisError, u64)>,
) -> RedisResult<(MultiplexedConnection, u64)> {
    loop {
        if let Some((err, generation)) = failed.take() {
            if !retry.again(&err, Some(generation)).await {
                return Err(err);
            }
        }
        match session.current().await {
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
