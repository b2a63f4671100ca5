//! A waiting acquire's [`Ticket`] in the dispatcher while its grant is awaited (`wait` sends
//! the acquire through it), and how a wait that is given up leaves the server's queue.

use super::connection::release;
use super::{Chore, Event, Subscriber, Target};
use crate::commands::{self, Family};
use crate::confirm::{Confirm, Shortfall};
use crate::guard::spawn_if_runtime;
use crate::session::is_connection_error;
use redis::aio::MultiplexedConnection;
use redis::{RedisResult, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// A wait's places in the dispatcher: one per key it waits for (several for
/// `RLOCK.ACQUIREALL`, whose outcome comes as one message per key). Dropped armed (the
/// acquiring future was cancelled, or gave up at its deadline), it leaves the server's queue
/// in the background: `RLOCK.CANCEL` (of any one key: it takes a request for several keys out
/// of every queue), then a grant that raced in, or an acquire that held at once, is released.
pub(super) struct Ticket {
    subscriber: Arc<Subscriber>,
    kind: Family,
    places: Vec<Place>,
    /// The acquire's call while it is on its way, polled by the acquiring future itself; if
    /// that future is dropped first, the call is moved into a task that finishes it, so that a
    /// cancelled acquire still learns whether it held at once (no task per acquire otherwise).
    reply: Option<InFlight>,
    armed: bool,
}

/// An acquire's reply and the replicas' shortfall confirming it.
pub(super) type Reply = (Value, Option<Shortfall>);

type InFlight = Pin<Box<dyn Future<Output = RedisResult<Reply>> + Send>>;

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
    pub(super) fn new(
        subscriber: &Arc<Subscriber>,
        kind: Family,
        targets: &[Target],
        generation: u64,
    ) -> Ticket {
        let places = targets
            .iter()
            .map(|target| {
                let (id, rx) = subscriber.dispatcher.register(target, generation);
                Place {
                    target: target.clone(),
                    id,
                    rx: Some(rx),
                    told: None,
                }
            })
            .collect();
        Ticket {
            subscriber: subscriber.clone(),
            kind,
            places,
            reply: None,
            armed: true,
        }
    }

    /// Sends the acquire on `conn` of `generation` (registered first, so that no message can
    /// miss it), pipelined with the replicas' confirmation of a grant at once.
    pub(super) async fn send(
        &mut self,
        mut conn: MultiplexedConnection,
        generation: u64,
        cmd: redis::Cmd,
        confirm: &Confirm,
    ) -> RedisResult<Reply> {
        let session = self.subscriber.session.clone();
        let confirm = confirm.clone();
        let call = self.reply.insert(Box::pin(async move {
            let extra = Some(Duration::ZERO);
            session
                .send_confirmed::<Value>(&mut conn, generation, &cmd, extra, &confirm)
                .await
        }));
        let reply = call.await;
        self.reply = None;
        reply
    }

    /// How the wait ended: the tokens of all its keys, in order, or the first event that is
    /// not a grant.
    pub(super) async fn outcome(&mut self) -> std::result::Result<Vec<u64>, Event> {
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
    pub(super) fn forget(mut self, kept: bool) {
        self.armed = false;
        for place in &mut self.places {
            self.subscriber
                .dispatcher
                .unregister(&place.target, place.id);
            if !kept && self.kind.holds() && place.granted() {
                let _ = self.subscriber.dispatcher.chores.send(Chore::Release {
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
        let subscriber = self.subscriber.clone();
        let kind = self.kind;
        let mut places = std::mem::take(&mut self.places);
        let reply = self.reply.take();
        spawn_if_runtime(async move {
            let session = subscriber.session.clone();
            let unregister = |places: &[Place]| {
                for place in places {
                    subscriber.dispatcher.unregister(&place.target, place.id);
                }
            };
            if let Some(reply) = reply {
                match reply.await {
                    // Held at once (or re-entered): give that hold back. (An open latch.)
                    Ok((Value::Int(_) | Value::Array(_), _)) => {
                        unregister(&places);
                        if kind.holds() {
                            for place in places {
                                let Target { key, owner, .. } = place.target;
                                release(session.clone(), kind, key, owner).await;
                            }
                        }
                        return;
                    }
                    // Not queued: nothing to cancel.
                    Ok((Value::Nil, _)) => {
                        unregister(&places);
                        return;
                    }
                    Err(err) if !is_connection_error(&err) => {
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
                if subscriber.dispatcher.unregister(&target, first.id) {
                    return;
                }
                let _: RedisResult<i64> = session.call(&cancel, Some(Duration::ZERO)).await;
                subscriber.dispatcher.requeue(&target);
                return;
            }
            let _: RedisResult<i64> = session.call(&cancel, Some(Duration::ZERO)).await;
            // Whatever the server sent this wait before the CANCEL's reply has been
            // dispatched to its places by now; what comes after finds no waiter and is
            // released.
            unregister(&places);
            for place in &mut places {
                if place.granted() {
                    let Target { key, owner, .. } = place.target.clone();
                    release(session.clone(), kind, key, owner).await;
                }
            }
        });
    }
}
