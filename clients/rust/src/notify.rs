//! Waiting without a blocked connection: `NOTIFY` (the server's docs/notify.md).
//!
//! The waiting acquires of every lock handle made from one `redis::Client` (in one tokio
//! runtime) share one RESP3 multiplexed connection, the [`Notifier`]'s. The connection asks the
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
//! Other events on the connection:
//! - `lost` marks a holding lost through the guard's ordinary loss reporting.
//! - A grant that no waiter claims (its waiter gave up) is released.
//! - A dropped connection ends the waits made on it: each is sent once more, unchanged (the
//!   same request id takes over its queue entry, or answers its token), on a fresh connection.
//! - `WATCHDOG` holdings granted this way are bound to the shared connection. One task per
//!   connection `PING`s it every third of `rlock.watchdog-idle-ms`, and a fresh connection
//!   re-binds them (`RLOCK.RENEW key owner PX lease WATCHDOG`) or reports them lost.

use crate::commands::{self, AcquireOptions};
use crate::error::{Error, Result};
use crate::guard::spawn_if_runtime;
use crate::link::{is_connection_error, BoxFuture, Hooks, Link};
use crate::watchdog;
use redis::aio::{AsyncPushSender, MultiplexedConnection};
use redis::{Client, PushInfo, PushKind, RedisError, RedisResult, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{AbortHandle, JoinHandle, JoinSet};

/// The `lock` type of the messages: the only one this crate waits for.
const LOCK: &[u8] = b"lock";
/// Unclaimed `lost` notices remembered (for a holding whose guard is still being made).
const UNCLAIMED_LOST_LIMIT: usize = 1024;

/// A key and an owner.
type Place = (Vec<u8>, Vec<u8>);

/// Every live notifier, by client settings and runtime: the registry that makes lock handles
/// of one client share one connection.
static NOTIFIERS: Mutex<Vec<(String, Weak<Notifier>)>> = Mutex::new(Vec::new());

/// The connection that the waits of one client share, with its dispatcher and keep-alive.
pub(crate) struct Notifier {
    pub(crate) link: Arc<Link>,
    state: Arc<State>,
    runtime: tokio::runtime::Id,
    maintenance: AbortHandle,
}

impl Notifier {
    /// The notifier of the server `client` names, in the current tokio runtime (a connection
    /// lives in the runtime that opened it); made on first use, dropped with its last user.
    pub(crate) fn shared(client: &Client, response_timeout: Duration) -> Arc<Notifier> {
        let runtime = tokio::runtime::Handle::current().id();
        let info = client.get_connection_info();
        let settings = info.redis_settings();
        let name = format!(
            "{runtime}|{:?}|{}|{:?}|{:?}|{}",
            info.addr(),
            settings.db(),
            settings.username(),
            settings.password(),
            response_timeout.as_nanos()
        );
        let mut all = NOTIFIERS.lock().expect("notifier registry");
        all.retain(|(_, notifier)| notifier.strong_count() > 0);
        let found = all
            .iter()
            .filter(|(known, _)| *known == name)
            .find_map(|(_, notifier)| notifier.upgrade());
        if let Some(notifier) = found {
            return notifier;
        }
        let notifier = Arc::new(Notifier::new(client, response_timeout, runtime));
        all.push((name, Arc::downgrade(&notifier)));
        notifier
    }

    fn new(client: &Client, response_timeout: Duration, runtime: tokio::runtime::Id) -> Notifier {
        let (chores, chores_rx) = mpsc::unbounded_channel();
        let state = Arc::new(State {
            inner: Mutex::default(),
            chores,
        });
        let hooks = Subscriber {
            state: state.clone(),
            response_timeout,
        };
        let link = Arc::new(Link::with_hooks(client, response_timeout, Arc::new(hooks)));
        let maintenance = tokio::spawn(maintain(link.clone(), state.clone(), chores_rx));
        Notifier {
            link,
            state,
            runtime,
            maintenance: maintenance.abort_handle(),
        }
    }

    /// The runtime whose tasks drive this notifier's connection.
    pub(crate) fn runtime(&self) -> tokio::runtime::Id {
        self.runtime
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.maintenance.abort();
    }
}

/// What the dispatcher knows, shared by the connection's push sender and the waits.
struct State {
    inner: Mutex<Inner>,
    /// Work the dispatcher cannot do inside the connection's reader: sending commands.
    chores: mpsc::UnboundedSender<Chore>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    /// Waits in the server's queues, by what their messages name, oldest first.
    waiters: HashMap<Target, VecDeque<Waiter>>,
    /// Holdings taken through this connection, by key and owner, for `lost` and re-binding.
    holdings: HashMap<Place, Vec<Arc<HoldingState>>>,
    /// `lost` notices that found no holding yet: (key, owner) -> token.
    unclaimed_lost: HashMap<Place, u64>,
}

/// What a message names: type, key, owner.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Target {
    kind: Vec<u8>,
    key: Vec<u8>,
    owner: Vec<u8>,
}

impl Target {
    fn lock(key: &str, owner: &str) -> Target {
        Target {
            kind: LOCK.to_vec(),
            key: key.as_bytes().to_vec(),
            owner: owner.as_bytes().to_vec(),
        }
    }
}

struct Waiter {
    id: u64,
    /// The connection the wait was queued from: its drop ends the wait.
    generation: u64,
    tx: oneshot::Sender<Event>,
}

/// How a wait ended.
#[derive(Debug)]
enum Event {
    Granted(u64),
    Timeout,
    /// The request was refused when its turn came (e.g. `WRONGTYPE`).
    Failed(String),
    /// The connection the wait was queued from dropped.
    Disconnected,
}

enum Chore {
    /// A grant that no waiter claimed: give it back.
    Release { key: Vec<u8>, owner: Vec<u8> },
    /// The connection dropped: open a new one now (re-subscribing and re-binding).
    Reconnect,
}

/// One message on a connection's `__rlock__` channel, split as docs/notify.md says: four
/// fields at the first four spaces, `key-length` bytes of key, one space, the rest is the
/// owner. Binary-safe: keys and owners may hold spaces or any byte.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Message<'a> {
    pub(crate) event: &'a [u8],
    pub(crate) kind: &'a [u8],
    pub(crate) value: &'a [u8],
    pub(crate) key: &'a [u8],
    pub(crate) owner: &'a [u8],
}

pub(crate) fn parse(payload: &[u8]) -> Option<Message<'_>> {
    let mut rest = payload;
    let mut fields: [&[u8]; 4] = [&[]; 4];
    for field in &mut fields {
        let space = rest.iter().position(|&byte| byte == b' ')?;
        *field = &rest[..space];
        rest = &rest[space + 1..];
    }
    let [event, kind, value, length] = fields;
    if length.is_empty() || !length.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let length: usize = std::str::from_utf8(length).ok()?.parse().ok()?;
    let key = rest.get(..length)?;
    let owner = match rest.get(length..)? {
        [] => &[][..],
        [b' ', owner @ ..] => owner,
        _ => return None,
    };
    Some(Message {
        event,
        kind,
        value,
        key,
        owner,
    })
}

fn parse_token(value: &[u8]) -> Option<u64> {
    std::str::from_utf8(value).ok()?.parse().ok()
}

impl State {
    /// Runs in the connection's reader, for every push of the connection `generation`.
    fn push(&self, generation: u64, info: PushInfo) {
        match info.kind {
            PushKind::Message => {
                if let [_channel, Value::BulkString(payload)] = info.data.as_slice() {
                    if let Some(message) = parse(payload) {
                        self.deliver(message);
                    }
                }
            }
            PushKind::Disconnection => {
                self.disconnected(generation);
                let _ = self.chores.send(Chore::Reconnect);
            }
            _ => {}
        }
    }

    fn deliver(&self, message: Message<'_>) {
        let mut inner = self.inner.lock().expect("dispatcher lock");
        let event = match message.event {
            b"granted" => match parse_token(message.value) {
                Some(token) => Event::Granted(token),
                None => return,
            },
            b"timeout" => Event::Timeout,
            b"failed" => Event::Failed(String::from_utf8_lossy(message.value).into_owned()),
            b"lost" if message.kind == LOCK => {
                if let Some(token) = parse_token(message.value) {
                    inner.lost(message.key, message.owner, token);
                }
                return;
            }
            _ => return,
        };
        let target = Target {
            kind: message.kind.to_vec(),
            key: message.key.to_vec(),
            owner: message.owner.to_vec(),
        };
        let waiter = inner.waiters.get_mut(&target).and_then(VecDeque::pop_front);
        if inner.waiters.get(&target).is_some_and(VecDeque::is_empty) {
            inner.waiters.remove(&target);
        }
        drop(inner);
        let unclaimed = match waiter {
            Some(waiter) => waiter.tx.send(event).err(),
            None => Some(event),
        };
        if matches!(unclaimed, Some(Event::Granted(_))) && message.kind == LOCK {
            let _ = self.chores.send(Chore::Release {
                key: target.key,
                owner: target.owner,
            });
        }
    }

    /// Ends every wait queued from the connection `generation`: the server drops them too.
    fn disconnected(&self, generation: u64) {
        let mut inner = self.inner.lock().expect("dispatcher lock");
        let mut ended = Vec::new();
        inner.waiters.retain(|_, queue| {
            let (gone, kept) = std::mem::take(queue)
                .into_iter()
                .partition(|waiter| waiter.generation == generation);
            *queue = kept;
            ended.extend(gone);
            !queue.is_empty()
        });
        drop(inner);
        for waiter in ended {
            let _ = waiter.tx.send(Event::Disconnected);
        }
    }

    fn register(&self, target: &Target, generation: u64) -> (u64, oneshot::Receiver<Event>) {
        let (tx, rx) = oneshot::channel();
        let mut inner = self.inner.lock().expect("dispatcher lock");
        inner.next_id += 1;
        let id = inner.next_id;
        inner
            .waiters
            .entry(target.clone())
            .or_default()
            .push_back(Waiter { id, generation, tx });
        (id, rx)
    }

    fn unregister(&self, target: &Target, id: u64) {
        let mut inner = self.inner.lock().expect("dispatcher lock");
        if let Some(queue) = inner.waiters.get_mut(target) {
            queue.retain(|waiter| waiter.id != id);
            if queue.is_empty() {
                inner.waiters.remove(target);
            }
        }
    }

    /// Watchdog holdings that guards still hold and that are not known lost.
    fn live_watchdog_holdings(&self) -> Vec<Arc<HoldingState>> {
        let inner = self.inner.lock().expect("dispatcher lock");
        inner
            .holdings
            .values()
            .flatten()
            .filter(|holding| {
                holding.watchdog && holding.holds.load(Ordering::SeqCst) > 0 && !holding.is_lost()
            })
            .cloned()
            .collect()
    }
}

impl Inner {
    fn lost(&mut self, key: &[u8], owner: &[u8], token: u64) {
        let found = self
            .holdings
            .get(&(key.to_vec(), owner.to_vec()))
            .into_iter()
            .flatten()
            .filter(|holding| holding.token == token)
            .inspect(|holding| holding.mark_lost())
            .count();
        if found == 0 {
            if self.unclaimed_lost.len() >= UNCLAIMED_LOST_LIMIT {
                self.unclaimed_lost.clear();
            }
            self.unclaimed_lost
                .insert((key.to_vec(), owner.to_vec()), token);
        }
    }
}

/// The hooks of the shared connection: its pushes go to the dispatcher, and each fresh
/// connection subscribes to its channel and re-binds the watchdog holdings before use.
struct Subscriber {
    state: Arc<State>,
    response_timeout: Duration,
}

impl Hooks for Subscriber {
    fn push_sender(&self, generation: u64) -> Arc<dyn AsyncPushSender> {
        let state = self.state.clone();
        Arc::new(move |info: PushInfo| {
            state.push(generation, info);
            Ok::<(), ()>(())
        })
    }

    fn setup<'a>(
        &'a self,
        conn: &'a mut MultiplexedConnection,
        generation: u64,
    ) -> BoxFuture<'a, RedisResult<()>> {
        Box::pin(async move {
            let prepare = async {
                let channel: Vec<u8> = commands::channel().query_async(conn).await?;
                conn.subscribe(&channel).await?;
                if generation > 1 {
                    self.rebind(conn).await?;
                }
                Ok(())
            };
            match tokio::time::timeout(self.response_timeout, prepare).await {
                Ok(done) => done,
                Err(_elapsed) => Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "no reply in time while preparing the notify connection",
                )
                .into()),
            }
        })
    }
}

impl Subscriber {
    /// Moves every live watchdog holding onto the fresh connection `conn`; those the server
    /// no longer knows (`0`) are lost.
    async fn rebind(&self, conn: &MultiplexedConnection) -> RedisResult<()> {
        let mut renewals = JoinSet::new();
        for holding in self.state.live_watchdog_holdings() {
            let mut conn = conn.clone();
            renewals.spawn(async move {
                let cmd = commands::rebind(&holding.key, &holding.owner, holding.lease);
                let still_ours: i64 = cmd.query_async(&mut conn).await?;
                if still_ours == 0 && holding.holds.load(Ordering::SeqCst) > 0 {
                    holding.mark_lost();
                }
                RedisResult::Ok(())
            });
        }
        while let Some(done) = renewals.join_next().await {
            done.map_err(|err| std::io::Error::other(err.to_string()))??;
        }
        Ok(())
    }
}

/// The one task of a notifier: `PING` every third of the server's idle bound, and at once
/// when the connection reports a drop (the `PING` then opens a fresh connection, which
/// re-subscribes and re-binds); and the releases of unclaimed grants. A server that cannot be
/// reached for a whole lease has surely let that lease run out: those holdings are lost.
async fn maintain(link: Arc<Link>, state: Arc<State>, mut chores: mpsc::UnboundedReceiver<Chore>) {
    let every = watchdog::ping_interval(&link).await;
    let mut last_contact = Instant::now();
    let mut next_ping = tokio::time::Instant::now() + every;
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(next_ping) => {}
            chore = chores.recv() => match chore {
                None => return,
                Some(Chore::Release { key, owner }) => {
                    tokio::spawn(release(link.clone(), key, owner));
                    continue;
                }
                Some(Chore::Reconnect) => {}
            },
        }
        loop {
            match link
                .call::<()>(&redis::cmd("PING"), Some(Duration::ZERO))
                .await
            {
                Ok(()) => {
                    last_contact = Instant::now();
                    break;
                }
                Err(_) => {
                    let silent = last_contact.elapsed();
                    let mut waiting_for = 0;
                    for holding in state.live_watchdog_holdings() {
                        if silent >= holding.lease {
                            holding.mark_lost();
                        } else {
                            waiting_for += 1;
                        }
                    }
                    if waiting_for == 0 {
                        break;
                    }
                    tokio::time::sleep(watchdog::RECONNECT_PAUSE).await;
                }
            }
        }
        next_ping = tokio::time::Instant::now() + every;
    }
}

/// `RLOCK.RELEASE` of one hold, its answer ignored: for grants nobody is waiting for.
async fn release(link: Arc<Link>, key: Vec<u8>, owner: Vec<u8>) {
    let cmd = commands::release(&key, &owner, &commands::request_id());
    let _: RedisResult<Option<i64>> = link.call(&cmd, Some(Duration::ZERO)).await;
}

/// A wait's place in the dispatcher. Dropped armed (the acquiring future was cancelled, or
/// gave up at its deadline), it leaves the server's queue in the background: `RLOCK.CANCEL`,
/// then a grant that raced in, or an acquire that held at once, is released.
struct Ticket {
    notifier: Arc<Notifier>,
    target: Target,
    id: u64,
    rx: Option<oneshot::Receiver<Event>>,
    /// The acquire's reply while it is on its way: sent from a task of its own, so that a
    /// cancelled acquire still learns whether it held at once.
    reply: Option<JoinHandle<RedisResult<Value>>>,
    armed: bool,
}

impl Ticket {
    fn new(notifier: &Arc<Notifier>, target: &Target, generation: u64) -> Ticket {
        let (id, rx) = notifier.state.register(target, generation);
        Ticket {
            notifier: notifier.clone(),
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
        if let Some(Ok(Event::Granted(_))) = self.rx.as_mut().map(oneshot::Receiver::try_recv) {
            // Not expected (a grant comes only after `WAITING`), but never keep one unused.
            let _ = self.notifier.state.chores.send(Chore::Release {
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
        let target = self.target.clone();
        let (id, rx, reply) = (self.id, self.rx.take(), self.reply.take());
        spawn_if_runtime(async move {
            let link = notifier.link.clone();
            if let Some(reply) = reply {
                match reply.await {
                    // Held at once (or re-entered): give that hold back.
                    Ok(Ok(Value::Int(_))) => {
                        notifier.state.unregister(&target, id);
                        release(link, target.key, target.owner).await;
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
            let _: RedisResult<i64> = link.call(&cancel, Some(Duration::ZERO)).await;
            // Whatever the server sent this wait before the CANCEL's reply has been
            // dispatched to `rx` by now; what comes after finds no waiter and is released.
            notifier.state.unregister(&target, id);
            if let Some(Ok(Event::Granted(_))) = rx.map(|mut rx| rx.try_recv()) {
                release(link, target.key, target.owner).await;
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

/// `RLOCK.ACQUIRE ... WAIT ms NOTIFY` on the shared connection, and the wait for its message.
/// `None`: not granted (the wait ran out). Gives up locally at the wait plus the response
/// timeout, in case the server's `timeout` message never comes.
pub(crate) async fn acquire(
    notifier: &Arc<Notifier>,
    key: &str,
    owner: &str,
    options: &AcquireOptions,
) -> Result<Option<Held>> {
    let link = &notifier.link;
    let cmd = commands::acquire_notified(key, owner, options, &commands::request_id());
    let deadline = options
        .wait
        .extra_time()
        .map(|wait| Instant::now() + wait + link.response_timeout());
    let target = Target::lock(key, owner);
    let (mut conn, mut generation) = link.current().await?;
    let mut retried = false;
    loop {
        let mut ticket = Ticket::new(notifier, &target, generation);
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
                        "the connection dropped twice while waiting for the lock",
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
        "unexpected reply to RLOCK.ACQUIRE ... NOTIFY",
        format!("{reply:?}"),
    )
        .into()
}

/// What the dispatcher keeps of a holding: enough to report its loss and to re-bind it.
pub(crate) struct HoldingState {
    id: u64,
    key: Vec<u8>,
    owner: Vec<u8>,
    token: u64,
    lease: Duration,
    watchdog: bool,
    /// Guards alive on this holding: a re-bind that finds nothing is a loss only then.
    holds: AtomicUsize,
    lost: watch::Sender<bool>,
}

impl HoldingState {
    fn mark_lost(&self) {
        self.lost.send_replace(true);
    }

    fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }
}

/// A holding taken through the shared connection, shared by the re-entrant guards of one
/// lock handle.
pub(crate) struct Holding {
    notifier: Arc<Notifier>,
    state: Arc<HoldingState>,
}

impl Holding {
    pub(crate) fn new(
        notifier: &Arc<Notifier>,
        key: &str,
        owner: &str,
        token: u64,
        lease: Duration,
        watchdog: bool,
    ) -> Arc<Holding> {
        let (lost, _) = watch::channel(false);
        let (key, owner) = (key.as_bytes().to_vec(), owner.as_bytes().to_vec());
        let mut inner = notifier.state.inner.lock().expect("dispatcher lock");
        inner.next_id += 1;
        let state = Arc::new(HoldingState {
            id: inner.next_id,
            key: key.clone(),
            owner: owner.clone(),
            token,
            lease,
            watchdog,
            holds: AtomicUsize::new(0),
            lost,
        });
        let place = (key, owner);
        if inner.unclaimed_lost.get(&place) == Some(&token) {
            state.mark_lost();
        }
        inner.unclaimed_lost.remove(&place);
        inner.holdings.entry(place).or_default().push(state.clone());
        drop(inner);
        Arc::new(Holding {
            notifier: notifier.clone(),
            state,
        })
    }

    pub(crate) fn link(&self) -> &Link {
        &self.notifier.link
    }

    pub(crate) fn token(&self) -> u64 {
        self.state.token
    }

    /// A guard now holds through this holding.
    pub(crate) fn held(&self) {
        self.state.holds.fetch_add(1, Ordering::SeqCst);
    }

    /// A guard released its hold (or gave up on it).
    pub(crate) fn released(&self) {
        self.state.holds.fetch_sub(1, Ordering::SeqCst);
    }

    pub(crate) fn lost(&self) -> watch::Receiver<bool> {
        self.state.lost.subscribe()
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.state.is_lost()
    }

    pub(crate) fn mark_lost(&self) {
        self.state.mark_lost();
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        let mut inner = self.notifier.state.inner.lock().expect("dispatcher lock");
        let place = (self.state.key.clone(), self.state.owner.clone());
        if let Some(list) = inner.holdings.get_mut(&place) {
            list.retain(|holding| holding.id != self.state.id);
            if list.is_empty() {
                inner.holdings.remove(&place);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_splits_as_the_protocol_says() {
        let message = parse(b"granted lock 1763900000123456 5 jobs1 worker-7").expect("parses");
        assert_eq!(
            message,
            Message {
                event: b"granted",
                kind: b"lock",
                value: b"1763900000123456",
                key: b"jobs1",
                owner: b"worker-7",
            }
        );
    }

    #[test]
    fn keys_and_owners_are_binary_safe() {
        let message = parse(b"lost lock 7 9 a b\x00 c d  owner with  spaces ").expect("parses");
        assert_eq!(message.key, b"a b\x00 c d ");
        assert_eq!(message.owner, b"owner with  spaces ");
        let message = parse(b"timeout lock - 0  ").expect("empty key");
        assert_eq!((message.key, message.owner), (&b""[..], &b""[..]));
        let latch = parse(b"granted latch 1 3 k:1 ").expect("latch");
        assert_eq!((latch.key, latch.owner), (&b"k:1"[..], &b""[..]));
        let no_space = parse(b"granted latch 1 3 k:1").expect("owner-less");
        assert_eq!(no_space.owner, b"");
    }

    #[test]
    fn malformed_messages_are_ignored() {
        for bad in [
            &b"granted lock 1"[..],
            b"granted lock 1 x key owner",
            b"granted lock 1 10 short",
            b"granted lock 1 3 keyXowner",
            b"granted lock 1 +3 key owner",
        ] {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
