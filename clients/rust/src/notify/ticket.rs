//! The waiting acquire: `<P>.ACQUIRE ... WAIT ms NOTIFY` (or `RLATCH.AWAIT key WAIT ms
//! NOTIFY`) on the shared connection, its [`Ticket`] in the dispatcher while the grant is
//! awaited, and how a wait that is given up leaves the server's queue.

use super::connection::release;
use super::{Chore, Event, Notifier, Target};
use crate::commands::{self, AcquireOptions, Kind, Wait};
use crate::error::{Error, Result};
use crate::guard::spawn_if_runtime;
use crate::link::is_connection_error;
use redis::aio::MultiplexedConnection;
use redis::{RedisError, RedisResult, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A wait's place in the dispatcher. Dropped armed (the acquiring future was cancelled, or
/// gave up at its deadline), it leaves the server's queue in the background: `RLOCK.CANCEL`,
/// then a grant that raced in, or an acquire that held at once, is released.
struct Ticket {
    notifier: Arc<Notifier>,
    kind: Kind,
    target: Target,
    id: u64,
    rx: Option<oneshot::Receiver<Event>>,
    /// The acquire's reply while it is on its way: sent from a task of its own, so that a
    /// cancelled acquire still learns whether it held at once.
    reply: Option<JoinHandle<RedisResult<Value>>>,
    armed: bool,
}

impl Ticket {
    fn new(notifier: &Arc<Notifier>, kind: Kind, target: &Target, generation: u64) -> Ticket {
        let (id, rx) = notifier.state.register(target, generation);
        Ticket {
            notifier: notifier.clone(),
            kind,
            target: target.clone(),
            id,
            rx: Some(rx),
            reply: None,
            armed: true,
        }
    }

    /// Sends the acquire on `conn` (registered first, so that no message can miss it).
    async fn send(
        &mut self,
        mut conn: MultiplexedConnection,
        cmd: redis::Cmd,
    ) -> RedisResult<Value> {
        let link = self.notifier.link.clone();
        let reply = self.reply.insert(tokio::spawn(async move {
            link.send::<Value>(&mut conn, &cmd, Some(Duration::ZERO))
                .await
        }));
        let reply = reply.await;
        self.reply = None;
        reply.unwrap_or_else(|err| Err(std::io::Error::other(err.to_string()).into()))
    }

    /// How the wait ended.
    async fn event(&mut self) -> Event {
        match self.rx.as_mut() {
            Some(rx) => rx.await.unwrap_or(Event::Disconnected),
            None => Event::Disconnected,
        }
    }

    /// The wait is over and its outcome taken: leave the dispatcher, nothing to cancel.
    fn forget(mut self) {
        self.armed = false;
        self.notifier.state.unregister(&self.target, self.id);
        let granted = self.rx.as_mut().map(oneshot::Receiver::try_recv);
        if let (Some(Ok(Event::Granted(_))), true) = (granted, self.kind.holds()) {
            // Not expected (a grant comes only after `WAITING`), but never keep one unused.
            let _ = self.notifier.state.chores.send(Chore::Release {
                kind: self.kind,
                key: self.target.key.clone(),
                owner: self.target.owner.clone(),
            });
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let notifier = self.notifier.clone();
        let (kind, target) = (self.kind, self.target.clone());
        let (id, rx, reply) = (self.id, self.rx.take(), self.reply.take());
        spawn_if_runtime(async move {
            let link = notifier.link.clone();
            if let Some(reply) = reply {
                match reply.await {
                    // Held at once (or re-entered): give that hold back. (An open latch.)
                    Ok(Ok(Value::Int(_))) => {
                        notifier.state.unregister(&target, id);
                        if kind.holds() {
                            release(link, kind, target.key, target.owner).await;
                        }
                        return;
                    }
                    // Not queued: nothing to cancel.
                    Ok(Ok(Value::Nil)) => {
                        notifier.state.unregister(&target, id);
                        return;
                    }
                    Ok(Err(err)) if !is_connection_error(&err) => {
                        notifier.state.unregister(&target, id);
                        return;
                    }
                    _ => {}
                }
            }
            // An error means the connection is gone (its waits went with it) or the server
            // cannot be reached: the wait's own timeout or the connection's close ends it.
            let cancel = commands::cancel(&target.key, &target.owner);
            if kind == Kind::Latch {
                // A latch's `RLOCK.CANCEL` names no owner: it takes out every wait of the
                // latch on this connection. So the last of them to leave sends it (the others
                // keep this one's entry, harmless: the latch opens for all at once), and the
                // waits that came since send themselves again.
                if notifier.state.unregister(&target, id) {
                    return;
                }
                let _: RedisResult<i64> = link.call(&cancel, Some(Duration::ZERO)).await;
                notifier.state.requeue(&target);
                return;
            }
            let _: RedisResult<i64> = link.call(&cancel, Some(Duration::ZERO)).await;
            // Whatever the server sent this wait before the CANCEL's reply has been
            // dispatched to `rx` by now; what comes after finds no waiter and is released.
            notifier.state.unregister(&target, id);
            if let Some(Ok(Event::Granted(_))) = rx.map(|mut rx| rx.try_recv()) {
                release(link, kind, target.key, target.owner).await;
            }
        });
    }
}

/// An acquire that holds: its token, whether it was granted by a message (after a wait)
/// rather than at once, and the connection that answered.
pub(crate) struct Held {
    pub(crate) token: u64,
    pub(crate) granted: bool,
    pub(crate) generation: u64,
}

/// `<P>.ACQUIRE ... WAIT ms NOTIFY` on the shared connection, and the wait for its message.
/// `None`: not granted (the wait ran out). Gives up locally at the wait plus the response
/// timeout, in case the server's `timeout` message never comes.
///
/// A latch waits differently: its `timeout` messages name no owner and could not be told
/// apart, so it asks the server to wait for ever (`WAIT 0`) and keeps its own deadline.
pub(crate) async fn acquire(
    notifier: &Arc<Notifier>,
    kind: Kind,
    key: &str,
    owner: &str,
    options: &AcquireOptions,
) -> Result<Option<Held>> {
    let link = &notifier.link;
    let (asked, slack) = match kind {
        Kind::Latch => (Wait::Forever, Duration::ZERO),
        _ => (options.wait, link.response_timeout()),
    };
    let deadline = options
        .wait
        .extra_time()
        .map(|wait| Instant::now() + wait + slack);
    let options = AcquireOptions {
        wait: asked,
        ..options.clone()
    };
    let cmd = commands::acquire(kind, key, owner, &options, &commands::request_id(), true);
    let target = Target::new(kind, key, owner);
    let (mut conn, mut generation) = link.current().await?;
    let mut retried = false;
    loop {
        let mut ticket = Ticket::new(notifier, kind, &target, generation);
        let reply = match ticket.send(conn.clone(), cmd.clone()).await {
            Err(err) if is_connection_error(&err) && !retried => {
                // The same request id on a fresh connection: it takes over its queue entry,
                // or answers as the first send did.
                ticket.forget();
                retried = true;
                (conn, generation) = link.replace(generation).await?;
                continue;
            }
            // Dropped armed on a connection error: it may have queued.
            Err(err) if is_connection_error(&err) => return Err(err.into()),
            Err(err) => {
                ticket.forget();
                return Err(err.into());
            }
            Ok(reply) => reply,
        };
        match reply {
            Value::Int(token) => {
                ticket.forget();
                return Ok(Some(Held {
                    token: token as u64,
                    granted: false,
                    generation,
                }));
            }
            Value::Nil => {
                ticket.forget();
                return Ok(None);
            }
            Value::SimpleString(status) if status == "WAITING" => {}
            other => {
                ticket.forget();
                return Err(unexpected(other).into());
            }
        }
        let event = match deadline {
            Some(deadline) => {
                match tokio::time::timeout_at(deadline.into(), ticket.event()).await {
                    Ok(event) => event,
                    // The ticket leaves the queue as it drops.
                    Err(_elapsed) => return Ok(None),
                }
            }
            None => ticket.event().await,
        };
        match event {
            Event::Granted(token) => {
                ticket.forget();
                return Ok(Some(Held {
                    token,
                    granted: true,
                    generation,
                }));
            }
            Event::Timeout => {
                ticket.forget();
                return Ok(None);
            }
            Event::Failed(code) => {
                ticket.forget();
                return Err(failed(&code).into());
            }
            Event::Requeue => {
                ticket.forget();
                (conn, generation) = link.current().await?;
            }
            Event::Disconnected if !retried => {
                ticket.forget();
                retried = true;
                (conn, generation) = link.replace(generation).await?;
            }
            Event::Disconnected => {
                ticket.forget();
                return Err(Error::Redis(
                    std::io::Error::new(
                        std::io::ErrorKind::ConnectionReset,
                        "the connection dropped twice while waiting",
                    )
                    .into(),
                ));
            }
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
