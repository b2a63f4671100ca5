//! The plain lock (`RLOCK.*`): a thin layer over the core.

use crate::builder::builder_methods;
use crate::commands::Family;
use crate::core::Core;
use crate::error::Result;
use crate::guard::LockGuard;
use crate::servers::Servers;

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
    core: Core,
}

impl Lock {
    /// A handle on the lock at `key` on the server `client` points to. Defaults: 30 s lease,
    /// watchdog on, no wait, no hold cap. Nothing is sent until [`acquire`](Lock::acquire).
    pub fn new(servers: impl Into<Servers>, key: impl Into<String>) -> Lock {
        Lock {
            core: Core::new(servers.into(), key.into()),
        }
    }

    builder_methods!("lock");

    /// After a holding ends other than by its owner's release (its lease ran out, its
    /// watchdog connection closed, its `max_hold` cap), the server grants the lock to nobody
    /// for `delay` (`LOCKDELAY ms`; Chubby's and Consul's lock-delay): a holder that paused
    /// past its lease has that long to notice before anyone else acts, for resources that
    /// cannot check the fencing token. Waiters keep their places and the first is granted
    /// when it ends; a release, and `RLOCK.FORCERELEASE`, skip it. Default: the server's
    /// `rlock.lock-delay-ms` (0, none).
    pub fn lock_delay(self, delay: std::time::Duration) -> Self {
        Lock {
            core: self.core.lock_delay(delay),
        }
    }

    /// Takes the lock (or one more hold of it, when this handle holds it already) and
    /// returns its guard. [`Error::NotAcquired`](crate::Error::NotAcquired) when another owner
    /// holds it and the `wait` (if any) ran out.
    ///
    /// With a `wait`, the future can be dropped (`select!`, `timeout`) to stop waiting: the
    /// wait leaves the server's queue in the background, and a grant that raced the drop is
    /// released. A lock granted after a wait is confirmed (`RLOCK.RENEW`, with `WATCHDOG`
    /// for a watchdog lock) before it is returned; [`Error::Lost`](crate::Error::Lost) if it
    /// ended before that. Concurrent waits through the *same* handle for its key leave the queue
    /// together when one is dropped (the server's `RLOCK.CANCEL` names the owner): the others
    /// end at their `wait`.
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.core.acquire(Family::Lock).await
    }
}
