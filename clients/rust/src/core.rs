//! The core every lock type is a thin layer over: a handle (one key, one owner id) with the
//! builder options, and the acquire itself, for any [`Family`] of holding. It sends the acquire
//! with a fresh request id (retried once, unchanged, on a fresh connection), holds a watchdog
//! holding on a connection of its own (kept alive and re-bound: `watchdog`) or, for a waiting
//! handle, on the client's shared connection (`NOTIFY`, confirmed and re-bound: `notify`), and
//! makes the [`Guard`] that releases it and reports its loss.

use crate::commands::{self, AcquireOptions, Family, Wait};
use crate::confirm::{kept_unconfirmed, Confirm, Shortfall};
use crate::error::{Error, Result};
use crate::guard::{Exclusive, Guard};
use crate::holding::Holding;
use crate::notify::{self, NotifiedHolding, SubscriberSlot};
use crate::servers::Servers;
use crate::session::Session;
use crate::timing;
use crate::watchdog::{Binding, BindingSlot};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::OnceCell;

const DEFAULT_LEASE: Duration = Duration::from_secs(30);
pub(crate) const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(2);

/// One key (or, for a [`MultiLock`](crate::MultiLock), the keys taken together) as seen by
/// one owner, with how to take it.
pub(crate) struct Core {
    servers: Servers,
    keys: Vec<String>,
    /// The keys and the owner as the guards keep them: shared, not copied per guard.
    names: Vec<Arc<str>>,
    owner: Arc<str>,
    options: AcquireOptions,
    /// How the replicas confirm this handle's writes.
    confirm: Confirm,
    response_timeout: Duration,
    /// Plain (non-watchdog) calls of this handle share one connection.
    plain: Arc<Session>,
    /// The watchdog holding of this handle while any of its guards lives (one per owner, of
    /// every mode: the server's `RENEW` moves all of an owner's holdings at a key), and its
    /// connection parked between holdings.
    binding: Arc<Mutex<BindingSlot>>,
    /// A third of the server's `rlock.watchdog-idle-ms`, read once.
    ping_every: Arc<OnceCell<Duration>>,
    /// The hold cap of the current holding (see [`Core::expiry`]).
    cap: Mutex<Option<Cap>>,
    /// Waiting handles: the connection shared by the client's waits (`NOTIFY`), kept while
    /// the handle lives, and this handle's holdings through it, by token.
    subscriber: SubscriberSlot,
    notified: Mutex<Vec<Weak<NotifiedHolding>>>,
}

/// When the cap of a holding ends: set by the grant that created it (the server's rule), for
/// as long as that holding goes on.
struct Cap {
    token: u64,
    end: Instant,
    /// Alive while a guard of the holding lives: a semaphore's further grant, or a
    /// read-write lock's downgrade, continues the owner's holding under a new token.
    era: Weak<()>,
}

impl Core {
    /// Defaults: 30 s lease, watchdog on, no wait, no hold cap.
    pub(crate) fn new(servers: Servers, key: String) -> Core {
        Core::new_all(servers, vec![key])
    }

    /// A handle on several plain locks, taken all at once or none (`RLOCK.ACQUIREALL`).
    pub(crate) fn new_all(servers: Servers, keys: Vec<String>) -> Core {
        let router = servers.router(keys.first().map_or("", String::as_str));
        Core {
            confirm: servers.default_confirm().clone(),
            servers,
            names: keys.iter().map(|key| Arc::from(key.as_str())).collect(),
            keys,
            owner: commands::owner_id().into(),
            options: AcquireOptions {
                lease: DEFAULT_LEASE,
                wait: Wait::No,
                watchdog: true,
                max_hold: None,
                lock_delay: None,
            },
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            plain: Arc::new(Session::new(router.clone(), DEFAULT_RESPONSE_TIMEOUT)),
            binding: Arc::default(),
            ping_every: Arc::default(),
            cap: Mutex::default(),
            subscriber: SubscriberSlot::new(router, DEFAULT_RESPONSE_TIMEOUT),
            notified: Mutex::default(),
        }
    }

    pub(crate) fn lease(mut self, lease: Duration) -> Self {
        self.options.lease = lease;
        self
    }

    pub(crate) fn wait(mut self, limit: Duration) -> Self {
        self.options.wait = if limit.is_zero() {
            Wait::No
        } else {
            Wait::Up(limit)
        };
        self
    }

    pub(crate) fn wait_forever(mut self) -> Self {
        self.options.wait = Wait::Forever;
        self
    }

    pub(crate) fn watchdog(mut self, on: bool) -> Self {
        self.options.watchdog = on;
        self
    }

    pub(crate) fn max_hold(mut self, cap: Duration) -> Self {
        self.options.max_hold = Some(cap);
        self
    }

    pub(crate) fn lock_delay(mut self, delay: Duration) -> Self {
        self.options.lock_delay = Some(delay);
        self
    }

    pub(crate) fn owner_id(mut self, owner: String) -> Self {
        self.owner = owner.into();
        self
    }

    pub(crate) fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self.plain = Arc::new(Session::new(self.router(), timeout));
        self.subscriber = SubscriberSlot::new(self.router(), timeout);
        self
    }

    pub(crate) fn confirm(mut self, confirm: Confirm) -> Self {
        self.confirm = confirm;
        self
    }

    pub(crate) fn confirmation(&self) -> &Confirm {
        &self.confirm
    }

    /// Where the handle's connections go: the primary of its (first) key.
    fn router(&self) -> crate::router::Router {
        self.servers
            .router(self.keys.first().map_or("", String::as_str))
    }

    pub(crate) fn key(&self) -> &str {
        &self.keys[0]
    }

    pub(crate) fn wait_option(&self) -> Wait {
        self.options.wait
    }

    pub(crate) fn keys(&self) -> &[String] {
        &self.keys
    }

    pub(crate) fn owner(&self) -> &str {
        &self.owner
    }

    /// The session of the handle's plain calls (those that hold nothing: counts, settings).
    pub(crate) fn plain(&self) -> &Session {
        &self.plain
    }

    /// Takes a holding of `kind` (or one more hold of it, when this handle holds it already)
    /// and returns its guard. [`Error::NotAcquired`] when it is not granted and the `wait` (if
    /// any) ran out.
    pub(crate) async fn acquire<K>(&self, kind: Family) -> Result<Guard<K>> {
        let mut guards = self.take(kind, None).await?;
        Ok(guards.pop().expect("one key, one guard"))
    }

    /// Takes every one of the handle's keys or none (`RLOCK.ACQUIREALL`), waiting as `wait`
    /// says: a guard per key, in the keys' order.
    pub(crate) async fn acquire_all(&self, wait: Wait) -> Result<Vec<Guard<Exclusive>>> {
        self.take(Family::Lock, Some(wait)).await
    }

    /// The acquire of the handle's key, or (`all`: with that wait) of all its keys at once.
    async fn take<K>(&self, kind: Family, all: Option<Wait>) -> Result<Vec<Guard<K>>> {
        let options = AcquireOptions {
            wait: all.unwrap_or(self.options.wait),
            ..self.options.clone()
        };
        let keys = match all {
            Some(_) => &self.keys[..],
            None => &self.keys[..1],
        };
        if options.wait != Wait::No {
            return self.take_waiting(kind, keys, all.is_some(), &options).await;
        }
        let id = commands::request_id();
        let route = self.holding_session(kind);
        let sent = Instant::now();
        let extra = options.wait.extra_time();
        let confirm = &self.confirm;
        let (tokens, shortfall): (Option<Vec<u64>>, _) = if all.is_some() {
            let cmd = commands::acquire_all(keys, self.owner(), &options, &id, false);
            route.session().call_confirmed(&cmd, extra, confirm).await?
        } else {
            let cmd = commands::acquire(kind, self.key(), self.owner(), &options, &id, false);
            let (token, shortfall): (Option<u64>, _) =
                route.session().call_confirmed(&cmd, extra, confirm).await?;
            (token.map(|token| vec![token]), shortfall)
        };
        let Some(tokens) = tokens else {
            if let Holding::Bound(binding) = &route {
                binding.unused();
            }
            return Err(Error::NotAcquired);
        };
        let era = self.era();
        let expires = self.expiry(kind, tokens[0], sent, era.as_ref(), options.wait);
        let guards = self.names[..keys.len()]
            .iter()
            .zip(tokens)
            .map(|(key, token)| {
                if let Holding::Bound(binding) = &route {
                    binding.held(self.ping_every.clone(), options.lease);
                }
                let route = route.clone();
                Guard::new(kind, key, &self.owner, token, route, expires, era.clone())
                    .confirmed_by(confirm)
            });
        self.settle(guards.collect(), shortfall).await
    }

    /// The guards of an acquisition, or when the replicas did not confirm it (and it is not
    /// kept under `warn_only`) none: it is released (with a request id, unconfirmed) and the
    /// call fails with [`Error::NotConfirmed`].
    async fn settle<K>(
        &self,
        guards: Vec<Guard<K>>,
        shortfall: Option<Shortfall>,
    ) -> Result<Vec<Guard<K>>> {
        let Some(shortfall) = shortfall else {
            return Ok(guards);
        };
        if kept_unconfirmed(&shortfall, &self.confirm) {
            return Ok(guards);
        }
        for guard in guards {
            let _ = guard.undo().await;
        }
        Err(shortfall.error(true))
    }

    /// A waiting acquire of `keys` (all at once with `all`), on the client's shared
    /// connection.
    async fn take_waiting<K>(
        &self,
        kind: Family,
        keys: &[String],
        all: bool,
        options: &AcquireOptions,
    ) -> Result<Vec<Guard<K>>> {
        let subscriber = self.subscriber.get().await?;
        let confirm = &self.confirm;
        let held = match all {
            true => notify::acquire_all(&subscriber, keys, self.owner(), options, confirm).await?,
            false => {
                let key = self.key();
                notify::acquire(&subscriber, kind, key, self.owner(), options, confirm).await?
            }
        };
        let held = held.ok_or(Error::NotAcquired)?;
        let era = self.era();
        let expires = self.expiry(
            kind,
            held.tokens[0],
            Instant::now(),
            era.as_ref(),
            options.wait,
        );
        let mut guards = Vec::with_capacity(keys.len());
        let mut holdings = Vec::with_capacity(keys.len());
        for (name, &token) in self.names[..keys.len()].iter().zip(&held.tokens) {
            let holding = self.notified_holding(&subscriber, kind, name, token);
            holding.held();
            // The guard exists from here on: if this future is dropped now, it releases.
            let route = Holding::Notified(holding.clone());
            let guard = Guard::new(kind, name, &self.owner, token, route, expires, era.clone());
            guards.push(guard.confirmed_by(confirm));
            holdings.push(holding);
        }
        // The server renews a grant it sent as a message only once its owner confirms it, on
        // the receiving connection: a grant nobody read ends at its lease. Every grant by
        // message is confirmed by this RENEW, watchdog or lease, with or without replicas to
        // wait for: its lease may have ended before the message was read (a paused process),
        // and another owner may hold the lock now (CONTRACT.md C4.2). A holding taken at
        // once is renewed as it is, unless the connection it is bound to was replaced before
        // the holding was registered for re-binding: then it is re-bound here. A grant by
        // message was written by another connection, so the replicas confirm it through a
        // write of ours: this RENEW (which writes the expiry), pipelined with WAIT.
        let rebind = subscriber.session.generation().await != held.generation;
        let mut shortfall = held.shortfall;
        if held.granted || (rebind && options.watchdog) {
            for (key, holding) in keys.iter().zip(&holdings) {
                let renew = match options.watchdog {
                    true => commands::rebind(kind, key, self.owner(), options.lease),
                    false => commands::renew(kind, key, self.owner(), options.lease),
                };
                let (still_ours, short): (i64, _) = holding
                    .session()
                    .call_confirmed(&renew, Some(Duration::ZERO), confirm)
                    .await?;
                if still_ours == 0 {
                    holding.mark_lost();
                    drop(guards);
                    return Err(Error::Lost);
                }
                shortfall = shortfall.or(short);
            }
        }
        self.settle(guards, shortfall).await
    }

    /// The holding of `key` with `token` through the shared connection: the one this handle
    /// knows already (a re-entry), or a new one.
    fn notified_holding(
        &self,
        subscriber: &Arc<notify::Subscriber>,
        kind: Family,
        key: &str,
        token: u64,
    ) -> Arc<NotifiedHolding> {
        let mut known = self.notified.lock().expect("notified lock");
        known.retain(|holding| holding.strong_count() > 0);
        let found = known.iter().filter_map(Weak::upgrade).find(|holding| {
            holding.token() == token && holding.key() == key.as_bytes() && !holding.is_lost()
        });
        if let Some(holding) = found {
            return holding;
        }
        let holding = NotifiedHolding::new(
            subscriber,
            kind,
            key,
            self.owner(),
            token,
            self.options.lease,
            self.options.watchdog,
        );
        known.push(Arc::downgrade(&holding));
        holding
    }

    /// Where this acquire goes and its guard releases: the handle's plain session, or its
    /// watchdog holding (the one in use or parked, else a new one). A new holding is
    /// registered before the call, so that concurrent acquires share it.
    fn holding_session(&self, kind: Family) -> Holding {
        if !self.options.watchdog {
            return Holding::Plain(self.plain.clone());
        }
        Holding::Bound(BindingSlot::claim(&self.binding, || {
            Binding::new(
                self.router(),
                kind,
                &self.keys,
                self.owner(),
                self.options.lease,
                self.response_timeout,
                Arc::downgrade(&self.binding),
            )
        }))
    }

    /// What keeps the hold cap of an acquisition's holding known while its guards live (see
    /// [`Core::expiry`]); without a cap, nothing to keep.
    fn era(&self) -> Option<Arc<()>> {
        self.options.max_hold.map(|_| Arc::new(()))
    }

    /// Until when the holding is surely ours as far as its lease (without the watchdog) and
    /// hold cap go. A re-entry or further grant renews the whole holding, so an older guard's
    /// lease estimate only errs early; the cap counts from the grant that created the holding:
    /// the one with this token, or for a semaphore's further permits and a read-write lock's
    /// downgrade (new tokens), the one whose guards still live.
    fn expiry(
        &self,
        kind: Family,
        token: u64,
        sent: Instant,
        era: Option<&Arc<()>>,
        wait: Wait,
    ) -> Option<Instant> {
        // The grant happened between send and reply; after a WAIT, right before the reply
        // (the one-way trip it is late by is within the drift margin).
        let granted = match wait {
            Wait::No => sent,
            _ => Instant::now(),
        };
        let lease_end = (!self.options.watchdog)
            .then(|| timing::surely_held_until(granted, self.options.lease));
        let cap_end = self.options.max_hold.map(|cap| {
            let mut known = self.cap.lock().expect("cap lock");
            let continued = known.as_ref().filter(|known| {
                known.token == token || (kind != Family::Lock && known.era.strong_count() > 0)
            });
            let end = match continued {
                Some(known) => known.end,
                None => timing::surely_held_until(granted, cap),
            };
            *known = Some(Cap {
                token,
                end,
                era: era.map_or_else(Weak::new, Arc::downgrade),
            });
            end
        });
        lease_end.into_iter().chain(cap_end).min()
    }
}
