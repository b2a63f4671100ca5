//! Waiting without a blocked connection: `NOTIFY` (the server's docs/notify.md).
//!
//! The waiting acquires of every lock handle made from one `redis::Client` (in one tokio
//! runtime) share one RESP3 multiplexed connection, the [`Subscriber`]'s. The connection asks the
//! server for its channel (`RLOCK.CHANNEL`) and subscribes to it; an acquire sent with
//! `WAIT ms NOTIFY` answers at once, with the token when it holds or `WAITING` when it queued,
//! and the outcome of a wait comes later as a message on that channel:
//!
//! ```text
//! <event> <type> <value> <key-length> <key> <owner>
//! ```
//!
//! redis-rs hands pub/sub messages to a push sender from the task that reads the connection,
//! before it hands over any reply that follows them. The sender here dispatches each message
//! right there, under a lock, to the waiting future it is for (by type, key and owner), so a
//! message that the server sent before the reply to a later command has always reached its
//! waiter by the time that reply is read. That is what makes giving up safe: the waiter sends
//! `RLOCK.CANCEL key owner`, and once its reply is in, a grant that raced it is either in the
//! waiter's hands (and is released) or was never sent.
//!
//! Every lock type waits this way (`RLOCK.ACQUIRE`, `RWLOCK.ACQUIRE`, `RSEM.ACQUIRE`, and
//! `RLATCH.AWAIT`, whose messages name no owner: a latch that opens wakes every waiter of it on
//! the connection).
//!
//! Other events on the connection:
//! - `lost` marks a holding lost through the guard's ordinary loss reporting.
//! - A grant that no waiter claims (its waiter gave up) is released (a semaphore's, whose
//!   message does not say how many permits, is left to its lease).
//! - A dropped connection ends the waits made on it: each is sent once more, unchanged (the
//!   same request id takes over its queue entry, or answers its token), on a fresh connection.
//! - `WATCHDOG` holdings granted this way are bound to the shared connection. One task per
//!   connection `PING`s it every third of `rlock.watchdog-idle-ms`, and a fresh connection
//!   re-binds them (`RLOCK.RENEW key owner PX lease WATCHDOG`) or reports them lost.
//!
//! This file holds the [`Subscriber`] and the state its pieces share; the pieces:
//! - `message`: splitting a channel message into its fields.
//! - `dispatcher`: routing each message to its waiter or holding.
//! - `connection`: the shared connection's hooks (subscribe, re-bind) and keep-alive task.
//! - `wait`: the waiting acquire: sending it, waiting for its message, sending it again.
//! - `ticket`: a wait's places in the dispatcher, and leaving the queue when it is given up.
//! - `holding`: what is kept of a holding taken through the shared connection.

mod connection;
mod dispatcher;
mod holding;
mod message;
mod ticket;
mod wait;

pub(crate) use holding::NotifiedHolding;
pub(crate) use wait::{acquire, acquire_all};

use self::connection::{maintain, SubscriberHooks};
use self::dispatcher::Dispatcher;
use crate::commands::Family;
use crate::router::{addr_name, Router};
use crate::session::Session;
use redis::RedisResult;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

/// Unclaimed `lost` notices remembered (for a holding whose guard is still being made).
const UNCLAIMED_LOST_LIMIT: usize = 1024;

/// A key and an owner.
type Place = (Vec<u8>, Vec<u8>);

/// Every live subscriber, by client settings and runtime: the registry that makes lock handles
/// of one client share one connection.
static SUBSCRIBERS: Mutex<Vec<(String, Weak<Subscriber>)>> = Mutex::new(Vec::new());

/// The connection that the waits of one client share, with its dispatcher and keep-alive.
pub(crate) struct Subscriber {
    pub(crate) session: Arc<Session>,
    dispatcher: Arc<Dispatcher>,
    runtime: tokio::runtime::Id,
    maintenance: AbortHandle,
}

impl Subscriber {
    /// The subscriber of the primary that owns the router's key now, in the current tokio
    /// runtime (a connection lives in the runtime that opened it); made on first use, dropped
    /// with its last user. Its connection follows that primary through failovers (in a
    /// Cluster, the keys of one primary move together to its promoted replica).
    async fn shared(router: &Router, response_timeout: Duration) -> RedisResult<Arc<Subscriber>> {
        let runtime = tokio::runtime::Handle::current().id();
        let client = router.client().await?;
        let info = client.get_connection_info();
        let settings = info.redis_settings();
        let name = format!(
            "{runtime}|{}|{}|{:?}|{:?}|{}",
            addr_name(info.addr()),
            settings.db(),
            settings.username(),
            settings.password(),
            response_timeout.as_nanos()
        );
        let mut all = SUBSCRIBERS.lock().expect("subscriber registry");
        all.retain(|(_, subscriber)| subscriber.strong_count() > 0);
        let found = all
            .iter()
            .filter(|(known, _)| *known == name)
            .find_map(|(_, subscriber)| subscriber.upgrade());
        if let Some(subscriber) = found {
            return Ok(subscriber);
        }
        let subscriber = Arc::new(Subscriber::new(router, response_timeout, runtime));
        all.push((name, Arc::downgrade(&subscriber)));
        Ok(subscriber)
    }

    fn new(router: &Router, response_timeout: Duration, runtime: tokio::runtime::Id) -> Subscriber {
        let (chores, chores_rx) = mpsc::unbounded_channel();
        let dispatcher = Arc::new(Dispatcher {
            tables: Mutex::default(),
            chores,
        });
        let hooks = SubscriberHooks {
            dispatcher: dispatcher.clone(),
            response_timeout,
        };
        let hooks = Arc::new(hooks);
        let session = Arc::new(Session::with_hooks(router.clone(), response_timeout, hooks));
        let maintenance = tokio::spawn(maintain(session.clone(), dispatcher.clone(), chores_rx));
        Subscriber {
            session,
            dispatcher,
            runtime,
            maintenance: maintenance.abort_handle(),
        }
    }
}

/// The subscriber a handle waits through: its client's in the current runtime, kept while the
/// handle lives (a handle used from another runtime looks that runtime's up).
pub(crate) struct SubscriberSlot {
    router: Router,
    response_timeout: Duration,
    cached: Mutex<Option<Arc<Subscriber>>>,
}

impl SubscriberSlot {
    pub(crate) fn new(router: Router, response_timeout: Duration) -> SubscriberSlot {
        SubscriberSlot {
            router,
            response_timeout,
            cached: Mutex::default(),
        }
    }

    pub(crate) async fn get(&self) -> RedisResult<Arc<Subscriber>> {
        let runtime = tokio::runtime::Handle::current().id();
        {
            let cached = self.cached.lock().expect("subscriber lock");
            if let Some(subscriber) = cached.as_ref().filter(|n| n.runtime == runtime) {
                return Ok(subscriber.clone());
            }
        }
        // Boxed: found once per handle and runtime, kept out of every acquire's future.
        let subscriber = Box::pin(Subscriber::shared(&self.router, self.response_timeout)).await?;
        *self.cached.lock().expect("subscriber lock") = Some(subscriber.clone());
        Ok(subscriber)
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.maintenance.abort();
    }
}

/// What a message names: type, key, owner.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Target {
    kind: Vec<u8>,
    key: Vec<u8>,
    owner: Vec<u8>,
}

impl Target {
    fn new(kind: Family, key: &str, owner: &str) -> Target {
        Target {
            kind: kind.word().to_vec(),
            key: key.as_bytes().to_vec(),
            owner: owner.as_bytes().to_vec(),
        }
    }

    /// A latch's messages are for every waiter of it: it opens for all at once.
    fn is_latch(&self) -> bool {
        self.kind == Family::Latch.word()
    }
}

struct Waiter {
    id: u64,
    /// The connection the wait was queued from: its drop ends the wait.
    generation: u64,
    tx: oneshot::Sender<Event>,
}

/// How a wait ended.
#[derive(Clone, Debug)]
enum Event {
    Granted(u64),
    Timeout,
    /// The request was refused when its turn came (e.g. `WRONGTYPE`).
    Failed(String),
    /// The connection the wait was queued from dropped.
    Disconnected,
    /// The wait may have been taken out of the queue by another waiter's `RLOCK.CANCEL` (a
    /// latch's, which names no owner): send it again.
    Requeue,
}

enum Chore {
    /// A grant that no waiter claimed: give it back.
    Release {
        kind: Family,
        key: Vec<u8>,
        owner: Vec<u8>,
    },
    /// The connection dropped: open a new one now (re-subscribing and re-binding).
    Reconnect,
}
