//! Watchdog holdings: the connection the server binds a holding to, kept alive and re-bound.
//!
//! The server renews a `WATCHDOG` holding (of any lock type) while the connection that took
//! it stays open, and stops once that connection has been silent for
//! `rlock.watchdog-idle-ms`. So each handle without a `wait` that holds with the watchdog owns
//! one connection of its own, and one task per such connection sends `PING` every third of
//! that bound. (Waiting handles hold on the connection their waits share instead: see
//! `notify`.) When the connection drops while something is held, the task opens a new one at
//! once and re-binds with `RENEW key owner PX lease WATCHDOG` (`RLOCK`, `RWLOCK` or `RSEM`):
//! 1 means the server had not noticed the drop and the holding is still ours; 0 means it is
//! lost.
//!
//! The connection outlives a holding when nothing is left on it: the release that gives back
//! the last hold, answered 0 (the owner holds nothing more at the key) with no other guard or
//! acquire using the binding, parks it in its handle's [`BindingSlot`], and the handle's next
//! acquire takes it from there instead of opening a connection. Whenever that cannot be known
//! (a release that failed or found the holding gone, a holding lost, an acquire given up
//! half-way), the binding is not parked and closes with its last user as before, so a
//! connection that closes still ends every holding bound to it.

use crate::commands::{self, Family};
use crate::router::Router;
use crate::session::{BoxFuture, Hooks, Session};
use redis::aio::{AsyncPushSender, MultiplexedConnection};
use redis::{PushInfo, RedisResult};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch, OnceCell};
use tokio::task::AbortHandle;

/// The server's default `rlock.watchdog-idle-ms`, used when `CONFIG GET` is not allowed.
const DEFAULT_IDLE: Duration = Duration::from_millis(30_000);
/// Pause between attempts to reach a server that refuses connections.
pub(crate) const RECONNECT_PAUSE: Duration = Duration::from_millis(100);

/// What a fresh connection of a watchdog session does first: move the binding onto itself.
pub(crate) struct Rebind {
    kind: Family,
    /// The keys held (several for a [`MultiLock`](crate::MultiLock)'s, all bound together).
    keys: Vec<String>,
    owner: String,
    lease: Duration,
    /// Guards alive on this holding: a re-bind that finds nothing is a loss only then.
    holds: AtomicUsize,
    lost: watch::Sender<bool>,
}

impl Rebind {
    pub(crate) async fn run(&self, conn: &mut MultiplexedConnection) -> RedisResult<()> {
        for key in &self.keys {
            let cmd = commands::rebind(self.kind, key, &self.owner, self.lease);
            let still_ours: i64 = cmd.query_async(conn).await?;
            if still_ours == 0 && self.holds.load(Ordering::SeqCst) > 0 {
                self.mark_lost();
            }
        }
        Ok(())
    }

    fn mark_lost(&self) {
        self.lost.send_replace(true);
    }

    fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }
}

/// The hooks of a watchdog session: drop notices go to the keep-alive task, and every connection
/// after the first re-binds the holding before it is used.
struct Watched {
    disconnects: mpsc::UnboundedSender<PushInfo>,
    rebind: Arc<Rebind>,
}

impl Hooks for Watched {
    fn push_sender(&self, _generation: u64) -> Arc<dyn AsyncPushSender> {
        Arc::new(self.disconnects.clone())
    }

    fn setup<'a>(
        &'a self,
        conn: &'a mut MultiplexedConnection,
        generation: u64,
    ) -> BoxFuture<'a, RedisResult<()>> {
        Box::pin(async move {
            // A first connection has nothing to re-bind yet; a replacement may carry a
            // holding that is still bound to the connection it replaces.
            if generation > 1 {
                self.rebind.run(conn).await?;
            }
            Ok(())
        })
    }
}

/// A lock handle's watchdog binding: the one its guards (and acquires under way) use, and the
/// one parked between holdings, kept open for the next.
#[derive(Default)]
pub(crate) struct BindingSlot {
    current: Weak<Binding>,
    parked: Option<Arc<Binding>>,
}

impl BindingSlot {
    /// The binding an acquire of the handle goes through: the one in use, else the parked one,
    /// else `make()`'s (then in use). One known lost is left to the guards that still have it.
    pub(crate) fn claim(slot: &Mutex<BindingSlot>, make: impl FnOnce() -> Binding) -> Arc<Binding> {
        let mut slot = slot.lock().expect("binding slot");
        let parked = slot.parked.take();
        let usable = slot.current.upgrade().or(parked);
        if let Some(binding) = usable.filter(|binding| !binding.is_lost()) {
            return binding;
        }
        let binding = Arc::new(make());
        slot.current = Arc::downgrade(&binding);
        binding
    }
}

/// One watchdog holding of one lock handle, shared by its re-entrant guards: the dedicated
/// session and its keep-alive task. Dropped with its last user (a guard, an acquire, or the
/// handle's slot where it is parked), which closes the connection (the server then ends
/// whatever is still held).
pub(crate) struct Binding {
    pub(crate) session: Arc<Session>,
    rebind: Arc<Rebind>,
    lost: watch::Receiver<bool>,
    disconnects: Mutex<Option<mpsc::UnboundedReceiver<PushInfo>>>,
    keepalive: Mutex<Option<AbortHandle>>,
    /// Where the binding is parked once nothing is held on it (the handle's).
    slot: Weak<Mutex<BindingSlot>>,
    /// A release failed or found the holding gone: what the connection still carries is
    /// unknown, so it is never parked.
    unsure: AtomicBool,
}

impl Binding {
    pub(crate) fn new(
        router: Router,
        kind: Family,
        keys: &[String],
        owner: &str,
        lease: Duration,
        response_timeout: Duration,
        slot: Weak<Mutex<BindingSlot>>,
    ) -> Binding {
        let (lost_tx, lost) = watch::channel(false);
        let (disconnects_tx, disconnects) = mpsc::unbounded_channel();
        let rebind = Arc::new(Rebind {
            kind,
            keys: keys.to_vec(),
            owner: owner.to_string(),
            lease,
            holds: AtomicUsize::new(0),
            lost: lost_tx,
        });
        let hooks = Watched {
            disconnects: disconnects_tx,
            rebind: rebind.clone(),
        };
        Binding {
            session: Arc::new(Session::with_hooks(
                router,
                response_timeout,
                Arc::new(hooks),
            )),
            rebind,
            lost,
            disconnects: Mutex::new(Some(disconnects)),
            keepalive: Mutex::new(None),
            slot,
            unsure: AtomicBool::new(false),
        }
    }

    fn rebind(&self) -> &Rebind {
        &self.rebind
    }

    /// A guard now holds through this binding; the first one starts the keep-alive task.
    /// `ping_every` is shared by the lock handle, so `CONFIG GET` runs once per handle.
    pub(crate) fn held(&self, ping_every: Arc<OnceCell<Duration>>, lease: Duration) {
        self.rebind().holds.fetch_add(1, Ordering::SeqCst);
        let mut keepalive = self.keepalive.lock().expect("keepalive lock");
        if let Some(disconnects) = self.disconnects.lock().expect("disconnects lock").take() {
            let task = keep_alive(
                self.session.clone(),
                self.rebind.clone(),
                disconnects,
                ping_every,
                lease,
            );
            *keepalive = Some(tokio::spawn(task).abort_handle());
        }
    }

    /// A guard released its hold (or gave up on it): `remaining` is the server's answer, the
    /// owner's holds left at the key (`None`: no answer, or the holding was gone). The binding
    /// is parked for the handle's next acquire when that was the last use of a binding that
    /// surely holds nothing now (see the module's docs).
    pub(crate) fn released(self: &Arc<Self>, remaining: Option<i64>) {
        let Some(slot) = self.slot.upgrade() else {
            self.rebind().holds.fetch_sub(1, Ordering::SeqCst);
            return;
        };
        // Under the slot's lock, so that no acquire takes the binding meanwhile: the caller's
        // is then its only user left.
        let mut slot = slot.lock().expect("binding slot");
        if remaining.is_none() {
            self.unsure.store(true, Ordering::SeqCst);
        }
        let left = self.rebind().holds.fetch_sub(1, Ordering::SeqCst) - 1;
        let empty = left == 0 && remaining == Some(0) && !self.unsure.load(Ordering::SeqCst);
        if empty && !self.is_lost() && Arc::strong_count(self) == 1 {
            slot.parked = Some(self.clone());
        }
    }

    /// An acquire through this binding was refused (nothing granted, nothing changed): parked
    /// again when the caller's was its only use.
    pub(crate) fn unused(self: &Arc<Self>) {
        let Some(slot) = self.slot.upgrade() else {
            return;
        };
        let mut slot = slot.lock().expect("binding slot");
        let idle = self.rebind().holds.load(Ordering::SeqCst) == 0;
        let sure = !self.unsure.load(Ordering::SeqCst) && !self.is_lost();
        if idle && sure && Arc::strong_count(self) == 1 {
            slot.parked = Some(self.clone());
        }
    }

    pub(crate) fn lost(&self) -> watch::Receiver<bool> {
        self.lost.clone()
    }

    pub(crate) fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }
}

impl Drop for Binding {
    fn drop(&mut self) {
        if let Some(task) = self.keepalive.lock().expect("keepalive lock").take() {
            task.abort();
        }
    }
}

/// The one task of a watchdog connection: `PING` every third of the server's idle bound, and
/// at once when the connection reports a drop. A `PING` on a broken connection makes the
/// session open a fresh one and re-bind (see [`Rebind`]). A server that cannot be reached for a
/// whole lease has surely let the lease run out: the lock is then reported lost.
async fn keep_alive(
    session: Arc<Session>,
    rebind: Arc<Rebind>,
    mut disconnects: mpsc::UnboundedReceiver<PushInfo>,
    ping_every: Arc<OnceCell<Duration>>,
    lease: Duration,
) {
    let every = *ping_every.get_or_init(|| ping_interval(&session)).await;
    let mut last_contact = Instant::now();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            // Every push is a drop notice: these connections subscribe to nothing.
            _ = disconnects.recv() => {}
        }
        loop {
            if rebind.is_lost() {
                return;
            }
            if ping(&session, &mut last_contact).await {
                break;
            }
            if last_contact.elapsed() >= lease {
                rebind.mark_lost();
                return;
            }
            tokio::time::sleep(RECONNECT_PAUSE).await;
        }
    }
}

/// One keep-alive `PING` on `session`, for the holdings bound to its connection (on a broken
/// connection the session opens a fresh one, which re-binds them first). An answer moves
/// `last_contact` to now; returns whether one came.
pub(crate) async fn ping(session: &Session, last_contact: &mut Instant) -> bool {
    let answered = session
        .call::<()>(&redis::cmd("PING"), Some(Duration::ZERO))
        .await
        .is_ok();
    if answered {
        *last_contact = Instant::now();
    }
    answered
}

/// A third of the server's `rlock.watchdog-idle-ms`. When that is 0 (no idle bound) or cannot
/// be read (an ACL without `CONFIG`), a third of the default: the `PING` then only finds
/// half-open connections sooner.
pub(crate) async fn ping_interval(session: &Session) -> Duration {
    let mut cmd = redis::cmd("CONFIG");
    cmd.arg("GET").arg("rlock.watchdog-idle-ms");
    let config: RedisResult<HashMap<String, u64>> = session.call(&cmd, Some(Duration::ZERO)).await;
    let idle = config
        .ok()
        .and_then(|config| config.into_values().next())
        .filter(|&ms| ms > 0)
        .map_or(DEFAULT_IDLE, Duration::from_millis);
    idle / 3
}
