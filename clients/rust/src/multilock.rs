//! Several plain locks taken all at once or none (`RLOCK.ACQUIREALL`): a thin layer over the
//! core, and the guard that gives them all back (`RLOCK.RELEASEALL`).

use crate::builder::builder_methods;
use crate::commands::Wait;
use crate::confirm::Confirm;
use crate::core::Core;
use crate::error::Result;
use crate::guard::{self, spawn_if_runtime, LockGuard};
use crate::servers::Servers;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

/// Several locks (keys) as seen by one owner, taken together: every key or none, never a
/// part of them (`RLOCK.ACQUIREALL`).
///
/// ```no_run
/// # async fn example(client: redis::Client) -> Result<(), rlock_client::Error> {
/// use rlock_client::MultiLock;
/// use std::time::Duration;
///
/// let accounts = MultiLock::new(&client, ["account:1", "account:2"]);
/// let held = accounts.try_lock_for(Duration::from_secs(5)).await?;
/// let [from, to] = held.tokens()[..] else { unreachable!() }; // in the keys' order
/// # let _ = (from, to);
/// held.unlock().await?; // RLOCK.RELEASEALL
/// # Ok(()) }
/// ```
///
/// Each key is an ordinary [`Lock`](crate::Lock) holding afterwards, with its own fencing
/// token: `RLOCK.INFO` shows it, and a [`Lock`](crate::Lock) handle with the same owner id
/// ([`owner_id`](MultiLock::owner_id)) re-enters it (so does the multi-lock, for a key its
/// owner holds already). A waiting request holds one place in every key's queue and is let in
/// when it heads them all and every key is free: a single-key waiter behind it on a key waits
/// too, even while that key is free. The handle re-enters its own holdings, like a
/// [`Lock`](crate::Lock); make one handle per task that should be excluded.
///
/// The builder is the lock's (lease, watchdog, hold cap, owner id, lock-delay); `wait` sets
/// what [`acquire`](MultiLock::acquire) does, while [`lock`](MultiLock::lock),
/// [`try_lock`](MultiLock::try_lock) and [`try_lock_for`](MultiLock::try_lock_for) say it
/// themselves. Waiting works as the lock's (`NOTIFY` on the client's shared connection: one
/// message per key), and dropping the future leaves every queue. A wait that would close a
/// cycle of owners is refused at once: [`Error::Deadlock`](crate::Error::Deadlock). In Redis
/// Cluster all keys must share a slot (`{tag}`); this client talks to one server.
pub struct MultiLock {
    core: Core,
}

impl MultiLock {
    /// A handle on the locks at `keys` (1 to 1000 distinct keys; the server refuses others),
    /// on the server `client` points to. Defaults: 30 s lease, watchdog on, no wait, no hold
    /// cap. Nothing is sent until it is locked.
    pub fn new<I>(servers: impl Into<Servers>, keys: I) -> MultiLock
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let keys = keys.into_iter().map(Into::into).collect();
        MultiLock {
            core: Core::new_all(servers.into(), keys),
        }
    }

    builder_methods!("locks", keys);

    /// Each key's lock-delay (`LOCKDELAY`), as [`Lock::lock_delay`](crate::Lock::lock_delay).
    pub fn lock_delay(self, delay: Duration) -> Self {
        MultiLock {
            core: self.core.lock_delay(delay),
        }
    }

    /// Takes every key, waiting as the builder's [`wait`](MultiLock::wait) says (by default
    /// not at all). [`Error::NotAcquired`](crate::Error::NotAcquired) when some key is held
    /// by another owner and the wait ran out: then none is taken.
    pub async fn acquire(&self) -> Result<MultiGuard> {
        self.take(self.core.wait_option()).await
    }

    /// Takes every key, waiting in their queues for as long as it takes (`WAIT 0`).
    pub async fn lock(&self) -> Result<MultiGuard> {
        self.take(Wait::Forever).await
    }

    /// Takes every key if all are free (or this owner's) now, else
    /// [`Error::NotAcquired`](crate::Error::NotAcquired) and takes none.
    pub async fn try_lock(&self) -> Result<MultiGuard> {
        self.take(Wait::No).await
    }

    /// Takes every key, waiting up to `wait` until all can be granted in one step; else
    /// [`Error::NotAcquired`](crate::Error::NotAcquired) and none is taken.
    pub async fn try_lock_for(&self, wait: Duration) -> Result<MultiGuard> {
        let wait = match wait.is_zero() {
            true => Wait::No,
            false => Wait::Up(wait),
        };
        self.take(wait).await
    }

    async fn take(&self, wait: Wait) -> Result<MultiGuard> {
        let guards = self.core.acquire_all(wait).await?;
        Ok(MultiGuard {
            owner: self.core.owner().to_string(),
            guards,
        })
    }
}

/// The holdings of a [`MultiLock`]: one [`LockGuard`] per key, in the keys' order, given
/// back together (`RLOCK.RELEASEALL`) by [`unlock`](MultiGuard::unlock) or, in the
/// background, on drop.
#[must_use = "dropping the guard releases every key at once"]
#[derive(Debug)]
pub struct MultiGuard {
    owner: String,
    guards: Vec<LockGuard>,
}

impl MultiGuard {
    /// The fencing tokens, one per key in the keys' order.
    pub fn tokens(&self) -> Vec<u64> {
        self.guards.iter().map(LockGuard::token).collect()
    }

    /// The keys, in order.
    pub fn keys(&self) -> Vec<&str> {
        self.guards.iter().map(LockGuard::key).collect()
    }

    /// The guard of each key, in order: its token, its loss, its guarded writes
    /// ([`LockGuard::guarded`]). They are given back with this guard.
    pub fn guards(&self) -> &[LockGuard] {
        &self.guards
    }

    /// True once any of the holdings is known lost (see [`LockGuard::is_lost`]).
    pub fn is_lost(&self) -> bool {
        self.guards.iter().any(LockGuard::is_lost)
    }

    /// Resolves when any of the holdings is known lost.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut each: Vec<Pin<Box<dyn Future<Output = ()> + Send>>> = self
            .guards
            .iter()
            .map(|guard| Box::pin(guard.lost()) as Pin<Box<dyn Future<Output = ()> + Send>>)
            .collect();
        std::future::poll_fn(move |cx| {
            match each
                .iter_mut()
                .any(|lost| lost.as_mut().poll(cx).is_ready())
            {
                true => Poll::Ready(()),
                false => Poll::Pending,
            }
        })
    }

    /// Gives every key back in one call (`RLOCK.RELEASEALL`). `Err(Error::Lost)` when any of
    /// them was no longer ours (the others are released all the same).
    pub async fn unlock(mut self) -> Result<()> {
        let confirm = self.confirmation();
        let held = self.detach();
        guard::release_all(&self.owner, held, &confirm).await
    }

    /// The same as [`unlock`](MultiGuard::unlock).
    pub async fn release(self) -> Result<()> {
        self.unlock().await
    }

    fn confirmation(&self) -> Confirm {
        self.guards
            .first()
            .map_or_else(Confirm::off, |guard| guard.confirmation().clone())
    }

    fn detach(&mut self) -> Vec<(String, crate::holding::Holding, bool)> {
        self.guards
            .iter_mut()
            .filter_map(LockGuard::detach)
            .collect()
    }
}

impl Drop for MultiGuard {
    fn drop(&mut self) {
        let held = self.detach();
        if held.is_empty() {
            return;
        }
        let owner = self.owner.clone();
        let confirm = self.confirmation();
        spawn_if_runtime(async move {
            let _ = guard::release_all(&owner, held, &confirm).await;
        });
    }
}
