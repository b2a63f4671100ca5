//! The lock handle: a builder for how to take one lock, and the acquire itself.

use crate::commands::{self, AcquireOptions, Wait};
use crate::error::{Error, Result};
use crate::guard::{LockGuard, Route};
use crate::link::Link;
use crate::notify::{self, Holding, Notifier};
use crate::timing;
use crate::watchdog::Binding;
use redis::Client;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::OnceCell;

const DEFAULT_LEASE: Duration = Duration::from_secs(30);
const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);

/// One lock (a key) as seen by one owner.
///
/// The handle has its own owner id, `<uuid>:<task-or-thread id>`: two handles exclude each
/// other, and acquiring again through the same handle re-enters (each guard releases one
/// hold). Make one handle per task that should be excluded; share a handle only where
/// re-entry is meant.
///
/// ```no_run
/// # async fn example(client: redis::Client) -> Result<(), rlock_client::Error> {
/// use rlock_client::Lock;
/// use std::time::Duration;
///
/// let lock = Lock::new(&client, "orders:42")
///     .wait(Duration::from_secs(5)) // queue up to 5 s behind the current holder
///     .max_hold(Duration::from_secs(600)); // however long the watchdog keeps it
/// let guard = lock.acquire().await?;
/// // ... write to the resource with guard.token() as the fence ...
/// guard.release().await?;
/// # Ok(()) }
/// ```
pub struct Lock {
    client: Client,
    key: String,
    owner: String,
    options: AcquireOptions,
    response_timeout: Duration,
    /// Plain (non-watchdog) calls of this handle share one connection.
    plain: Arc<Link>,
    /// The watchdog holding of this handle while any of its guards lives.
    binding: Mutex<Weak<Binding>>,
    /// A third of the server's `rlock.watchdog-idle-ms`, read once.
    ping_every: Arc<OnceCell<Duration>>,
    /// The hold cap of the current holding, by token (re-entries share the first grant's).
    cap: Mutex<Option<(u64, Instant)>>,
    /// Waiting handles: the connection shared by the client's waits (`NOTIFY`), kept while
    /// the handle lives, and this handle's current holding through it.
    notifier: Mutex<Option<Arc<Notifier>>>,
    notified: Mutex<Weak<Holding>>,
}

impl Lock {
    /// A handle on the lock at `key` on the server `client` points to. Defaults: 30 s lease,
    /// watchdog on, no wait, no hold cap. Nothing is sent until [`acquire`](Lock::acquire).
    pub fn new(client: &Client, key: impl Into<String>) -> Lock {
        Lock {
            client: client.clone(),
            key: key.into(),
            owner: commands::owner_id(),
            options: AcquireOptions {
                lease: DEFAULT_LEASE,
                wait: Wait::No,
                watchdog: true,
                max_hold: None,
            },
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            plain: Arc::new(Link::new(client, DEFAULT_RESPONSE_TIMEOUT)),
            binding: Mutex::default(),
            ping_every: Arc::default(),
            cap: Mutex::default(),
            notifier: Mutex::default(),
            notified: Mutex::default(),
        }
    }

    /// The lease (`PX`): how long the lock outlives a holder that stops renewing it. With the
    /// watchdog the server renews it while the connection lives; without, it is the lock's
    /// whole life unless released first.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.options.lease = lease;
        self
    }

    /// Wait up to `limit` in the server's FIFO queue when another owner holds the lock
    /// (`WAIT`). Without it, [`acquire`](Lock::acquire) tries once.
    ///
    /// A waiting handle blocks no connection: it waits with `WAIT ms NOTIFY` on the one RESP3
    /// connection that all waiting handles of the same `redis::Client` share (in the same
    /// tokio runtime), and is told of its grant by a message on that connection's channel.
    /// Its holdings live on that connection too (a `watchdog` one is bound to it). Dropping
    /// the `acquire` future leaves the queue (`RLOCK.CANCEL`); the module must support
    /// `NOTIFY` (its docs/notify.md).
    pub fn wait(mut self, limit: Duration) -> Self {
        self.options.wait = if limit.is_zero() {
            Wait::No
        } else {
            Wait::Up(limit)
        };
        self
    }

    /// Wait in the queue until granted (`WAIT 0`).
    pub fn wait_forever(mut self) -> Self {
        self.options.wait = Wait::Forever;
        self
    }

    /// On by default: the server renews the lease while this handle's dedicated connection
    /// lives, and ends the holding at once when it closes (`WATCHDOG`).
    pub fn watchdog(mut self, on: bool) -> Self {
        self.options.watchdog = on;
        self
    }

    /// Cap the holding at its grant time + `cap` however it is renewed (`MAXHOLD`): the
    /// watchdog cannot keep a lock whose holder hangs on a busy connection for ever.
    pub fn max_hold(mut self, cap: Duration) -> Self {
        self.options.max_hold = Some(cap);
        self
    }

    /// How long a reply may take (beyond a `wait`) before the call counts as failed and is
    /// retried once on a fresh connection. Default 2 s.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self.plain = Arc::new(Link::new(&self.client, timeout));
        self.notifier = Mutex::default();
        self
    }

    /// The lock's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// This handle's owner id, as `RLOCK.INFO` shows it.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Takes the lock (or one more hold of it, when this handle holds it already) and
    /// returns its guard. [`Error::NotAcquired`] when another owner holds it and the `wait`
    /// (if any) ran out.
    ///
    /// With a `wait`, the future can be dropped (`select!`, `timeout`) to stop waiting: the
    /// wait leaves the server's queue in the background, and a grant that raced the drop is
    /// released. A watchdog lock granted after a wait is confirmed (`RLOCK.RENEW ...
    /// WATCHDOG`) before it is returned; [`Error::Lost`] if it ended before that. Concurrent
    /// waits through the *same* handle for its key leave the queue together when one is
    /// dropped (the server's `RLOCK.CANCEL` names the owner): the others end at their `wait`.
    pub async fn acquire(&self) -> Result<LockGuard> {
        if self.options.wait != Wait::No {
            return self.acquire_waiting().await;
        }
        let cmd = commands::acquire(
            &self.key,
            &self.owner,
            &self.options,
            &commands::request_id(),
        );
        let route = self.route();
        let sent = Instant::now();
        let extra = self.options.wait.extra_time();
        let token: Option<u64> = route.link().call(&cmd, extra).await?;
        let token = token.ok_or(Error::NotAcquired)?;
        if let Route::Bound(binding) = &route {
            binding.held(self.ping_every.clone(), self.options.lease);
        }
        let expires = self.expiry(token, sent);
        Ok(LockGuard::new(
            &self.key,
            &self.owner,
            token,
            route,
            expires,
        ))
    }

    /// A waiting acquire, on the client's shared connection (see [`Lock::wait`]).
    async fn acquire_waiting(&self) -> Result<LockGuard> {
        let notifier = self.notifier();
        let held = notify::acquire(&notifier, &self.key, &self.owner, &self.options)
            .await?
            .ok_or(Error::NotAcquired)?;
        let holding = {
            let mut current = self.notified.lock().expect("notified lock");
            match current
                .upgrade()
                .filter(|holding| holding.token() == held.token && !holding.is_lost())
            {
                Some(holding) => holding,
                None => {
                    let holding = Holding::new(
                        &notifier,
                        &self.key,
                        &self.owner,
                        held.token,
                        self.options.lease,
                        self.options.watchdog,
                    );
                    *current = Arc::downgrade(&holding);
                    holding
                }
            }
        };
        holding.held();
        let expires = self.expiry(held.token, Instant::now());
        // The guard exists from here on: if this future is dropped now, it releases.
        let guard = LockGuard::new(
            &self.key,
            &self.owner,
            held.token,
            Route::Notified(holding.clone()),
            expires,
        );
        // The server renews a grant it sent as a message only once its owner confirms it, on
        // the receiving connection: a grant nobody read ends at its lease. A holding taken at
        // once is renewed as it is, unless the connection it is bound to was replaced before
        // the holding was registered for re-binding: then it is re-bound here.
        let rebind = held.granted || holding.link().generation().await != held.generation;
        if rebind && self.options.watchdog {
            let confirm = commands::rebind(&self.key, &self.owner, self.options.lease);
            let still_ours: i64 = holding.link().call(&confirm, Some(Duration::ZERO)).await?;
            if still_ours == 0 {
                holding.mark_lost();
                drop(guard);
                return Err(Error::Lost);
            }
        }
        Ok(guard)
    }

    /// The notifier of this handle's client in the current runtime.
    fn notifier(&self) -> Arc<Notifier> {
        let mut cached = self.notifier.lock().expect("notifier lock");
        let runtime = tokio::runtime::Handle::current().id();
        if let Some(notifier) = cached.as_ref().filter(|n| n.runtime() == runtime) {
            return notifier.clone();
        }
        let notifier = Notifier::shared(&self.client, self.response_timeout);
        *cached = Some(notifier.clone());
        notifier
    }

    /// Where this acquire goes and its guard releases: the handle's plain link, or its
    /// watchdog holding. A new holding is registered before the call, so that concurrent
    /// acquires share it; one known lost is left to the guards that still have it.
    fn route(&self) -> Route {
        if !self.options.watchdog {
            return Route::Plain(self.plain.clone());
        }
        let mut current = self.binding.lock().expect("binding lock");
        if let Some(binding) = current.upgrade().filter(|binding| !binding.is_lost()) {
            return Route::Bound(binding);
        }
        let binding = Arc::new(Binding::new(
            &self.client,
            &self.key,
            &self.owner,
            self.options.lease,
            self.response_timeout,
        ));
        *current = Arc::downgrade(&binding);
        Route::Bound(binding)
    }

    /// Until when the holding is surely ours as far as its lease (plain locks) and hold cap
    /// go. A re-entry renews the whole holding, so an older guard's lease estimate only errs
    /// early; the cap counts from the grant that created the holding.
    fn expiry(&self, token: u64, sent: Instant) -> Option<Instant> {
        // The grant happened between send and reply; after a WAIT, right before the reply
        // (the one-way trip it is late by is within the drift margin).
        let granted = match self.options.wait {
            Wait::No => sent,
            _ => Instant::now(),
        };
        let lease_end = (!self.options.watchdog)
            .then(|| timing::surely_held_until(granted, self.options.lease));
        let cap_end = self.options.max_hold.map(|cap| {
            let mut known = self.cap.lock().expect("cap lock");
            match *known {
                Some((holding, end)) if holding == token => end,
                _ => {
                    known
                        .insert((token, timing::surely_held_until(granted, cap)))
                        .1
                }
            }
        });
        lease_end.into_iter().chain(cap_end).min()
    }
}
