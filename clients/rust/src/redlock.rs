//! Redlock over independent servers, with RLOCK commands instead of `SET NX` and a script.

use crate::commands::{self, AcquireOptions, Family, Wait};
use crate::error::{Error, Result};
use crate::guard::spawn_if_runtime;
use crate::session::Session;
use crate::timing;
use redis::{Client, Cmd, FromRedisValue};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

const DEFAULT_LEASE: Duration = Duration::from_secs(30);
const DEFAULT_SERVER_TIMEOUT: Duration = Duration::from_millis(50);
const DEFAULT_RETRY_COUNT: u32 = 3;
const DEFAULT_RETRY_DELAY: Duration = Duration::from_millis(200);
/// The sessions' own connect limit; each call is bounded from outside by `server_timeout`.
const CONNECT_LIMIT: Duration = Duration::from_secs(1);

/// One lock held on a majority of N independent servers (see the crate docs for what that
/// does and does not guarantee).
///
/// Each attempt sends `RLOCK.ACQUIRE key owner PX lease ID id` to every server at once, with
/// one owner and one request id, each answer bounded by `server_timeout`. The lock is held
/// when a majority granted it and the validity time is left: lease minus elapsed time minus
/// clock drift (1% of the lease + 2 ms). Otherwise the attempt releases on every server (also
/// those whose answer was lost) and, after a random delay up to `retry_delay`, tries again,
/// `retry_count` times. No watchdog and no `WAIT`: the validity argument needs a fixed lease.
///
/// A handle does not re-enter: acquiring while its guard lives is [`Error::AlreadyHeld`].
pub struct Redlock {
    key: String,
    owner: String,
    servers: Vec<Arc<Session>>,
    lease: Duration,
    server_timeout: Duration,
    retry_count: u32,
    retry_delay: Duration,
    held: Arc<AtomicBool>,
}

impl Redlock {
    /// A handle on the lock at `key` on each of these servers (each a separate Redis with the
    /// module, not replicas of one another). Defaults: 30 s lease, 50 ms per server, 3 retries
    /// up to 200 ms apart.
    pub fn new<'a>(servers: impl IntoIterator<Item = &'a Client>, key: impl Into<String>) -> Self {
        let key = key.into();
        Redlock {
            owner: commands::owner_id(),
            servers: servers
                .into_iter()
                .map(|client| {
                    let router = crate::servers::Servers::single(client).router(&key);
                    Arc::new(Session::new(router, CONNECT_LIMIT))
                })
                .collect(),
            lease: DEFAULT_LEASE,
            server_timeout: DEFAULT_SERVER_TIMEOUT,
            retry_count: DEFAULT_RETRY_COUNT,
            retry_delay: DEFAULT_RETRY_DELAY,
            held: Arc::default(),
            key,
        }
    }

    /// The lease set on each server, and so the longest validity time.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How long to wait for one server's answer (connecting included) before counting it out:
    /// small against the lease, so that a dead server costs little of the validity time.
    pub fn server_timeout(mut self, timeout: Duration) -> Self {
        self.server_timeout = timeout;
        self
    }

    /// How many more attempts after a failed one.
    pub fn retry_count(mut self, count: u32) -> Self {
        self.retry_count = count;
        self
    }

    /// The longest random pause before a retry (desynchronizes clients that tried together).
    pub fn retry_delay(mut self, delay: Duration) -> Self {
        self.retry_delay = delay;
        self
    }

    /// This handle's owner id, the same on every server.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Servers that must grant the lock: a majority.
    pub fn quorum(&self) -> usize {
        self.servers.len() / 2 + 1
    }

    /// Takes the lock on a majority of the servers, or fails with [`Error::NoQuorum`] after
    /// the retries, leaving nothing held.
    pub async fn acquire(&self) -> Result<RedlockGuard> {
        if self.held.swap(true, Ordering::SeqCst) {
            return Err(Error::AlreadyHeld);
        }
        let acquired = self.attempts().await;
        if acquired.is_err() {
            self.held.store(false, Ordering::SeqCst);
        }
        acquired
    }

    async fn attempts(&self) -> Result<RedlockGuard> {
        let options = AcquireOptions::unwatched(self.lease, Wait::No);
        let mut granted = 0;
        for attempt in 0..=self.retry_count {
            if attempt > 0 {
                let pause = self.retry_delay.mul_f64(commands::random_fraction());
                tokio::time::sleep(pause).await;
            }
            let start = Instant::now();
            let id = commands::request_id();
            let cmd = commands::acquire(Family::Lock, &self.key, &self.owner, &options, &id, false);
            let tokens: Vec<Option<u64>> = self
                .on_every_server::<Option<u64>>(&cmd)
                .await
                .into_iter()
                .map(Option::flatten)
                .collect();
            granted = tokens.iter().flatten().count();
            let valid_until = timing::surely_held_until(start, self.lease);
            if granted >= self.quorum() && Instant::now() < valid_until {
                return Ok(RedlockGuard {
                    tokens,
                    valid_until,
                    quorum: self.quorum(),
                    release: Some(Release {
                        key: self.key.clone(),
                        owner: self.owner.clone(),
                        servers: self.servers.clone(),
                        server_timeout: self.server_timeout,
                        held: self.held.clone(),
                    }),
                });
            }
            release_everywhere(&self.servers, &self.key, &self.owner, self.server_timeout).await;
        }
        Err(Error::NoQuorum {
            granted,
            needed: self.quorum(),
        })
    }

    async fn on_every_server<T: FromRedisValue + Send + 'static>(
        &self,
        cmd: &Cmd,
    ) -> Vec<Option<T>> {
        on_every_server(&self.servers, cmd, self.server_timeout).await
    }
}

/// The lock held on a majority of the servers.
#[must_use = "dropping the guard releases the lock at once"]
pub struct RedlockGuard {
    tokens: Vec<Option<u64>>,
    valid_until: Instant,
    quorum: usize,
    /// `None` once released.
    release: Option<Release>,
}

impl std::fmt::Debug for RedlockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedlockGuard")
            .field("tokens", &self.tokens)
            .field("validity", &self.validity())
            .finish_non_exhaustive()
    }
}

impl RedlockGuard {
    /// Each server's fencing token, in the order the servers were given; `None` where that
    /// server did not grant the lock. A token is comparable only with that same server's
    /// tokens: fence a resource with one server's token, never with a mix.
    pub fn tokens(&self) -> &[Option<u64>] {
        &self.tokens
    }

    /// The end of the validity time: the lock is surely held on a majority until then, and
    /// no longer safe to rely on after it.
    pub fn valid_until(&self) -> Instant {
        self.valid_until
    }

    /// The validity time left (zero once it has run out).
    pub fn validity(&self) -> Duration {
        self.valid_until.saturating_duration_since(Instant::now())
    }

    /// Releases on every server. `Err(Error::Lost)` when the validity time had run out, or
    /// fewer than a majority of servers still held the lock.
    pub async fn release(mut self) -> Result<()> {
        let in_time = Instant::now() < self.valid_until;
        let release = self.release.take().expect("released only once");
        if release.run().await >= self.quorum && in_time {
            Ok(())
        } else {
            Err(Error::Lost)
        }
    }
}

impl Drop for RedlockGuard {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            spawn_if_runtime(async move {
                release.run().await;
            });
        }
    }
}

/// What releasing a Redlock holding needs, apart from the guard.
struct Release {
    key: String,
    owner: String,
    servers: Vec<Arc<Session>>,
    server_timeout: Duration,
    /// The handle's flag, cleared once released so that the handle may acquire again.
    held: Arc<AtomicBool>,
}

impl Release {
    /// How many servers still held the lock.
    async fn run(self) -> usize {
        let released =
            release_everywhere(&self.servers, &self.key, &self.owner, self.server_timeout).await;
        self.held.store(false, Ordering::SeqCst);
        released
    }
}

/// `RLOCK.RELEASE` on every server with one request id; how many still held the lock.
async fn release_everywhere(
    servers: &[Arc<Session>],
    key: &str,
    owner: &str,
    timeout: Duration,
) -> usize {
    let cmd = commands::release(Family::Lock, key, owner, &commands::request_id());
    on_every_server::<Option<i64>>(servers, &cmd, timeout)
        .await
        .into_iter()
        .filter(|reply| matches!(reply, Some(Some(_))))
        .count()
}

/// Sends `cmd` to every server at once; each answer in server order, `None` for an error or
/// no answer within `timeout`.
async fn on_every_server<T: FromRedisValue + Send + 'static>(
    servers: &[Arc<Session>],
    cmd: &Cmd,
    timeout: Duration,
) -> Vec<Option<T>> {
    let mut calls = JoinSet::new();
    for (index, server) in servers.iter().enumerate() {
        let (server, cmd) = (server.clone(), cmd.clone());
        calls.spawn(async move {
            let reply = tokio::time::timeout(timeout, server.call::<T>(&cmd, None)).await;
            (index, reply.ok().and_then(|reply| reply.ok()))
        });
    }
    let mut replies: Vec<Option<T>> = (0..servers.len()).map(|_| None).collect();
    while let Some(done) = calls.join_next().await {
        if let Ok((index, reply)) = done {
            replies[index] = reply;
        }
    }
    replies
}
