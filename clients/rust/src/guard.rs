//! The guard of a held lock: its fencing token, its release, its loss.

use crate::commands;
use crate::error::{Error, Result};
use crate::link::Link;
use crate::notify::Holding;
use crate::watchdog::Binding;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a holding is released: the lock handle's shared link, the holding's own watchdog
/// connection (which must stay open until then, or the server ends the holding), or the
/// connection shared by the client's waits, which a waiting handle's holdings live on.
pub(crate) enum Route {
    Plain(Arc<Link>),
    Bound(Arc<Binding>),
    Notified(Arc<Holding>),
}

impl Route {
    pub(crate) fn link(&self) -> &Link {
        match self {
            Route::Plain(link) => link,
            Route::Bound(binding) => &binding.link,
            Route::Notified(holding) => holding.link(),
        }
    }
}

/// A held lock. Release it with [`release`](LockGuard::release), which says whether the lock
/// was still ours; dropping the guard releases it in the background (best effort, when a
/// tokio runtime is running), and a watchdog lock ends anyway when its connection closes.
#[must_use = "dropping the guard releases the lock at once"]
pub struct LockGuard {
    key: String,
    owner: String,
    token: u64,
    /// `None` once released.
    route: Option<Route>,
    /// Until when the lease (plain locks) and the hold cap surely keep the lock ours.
    expires: Option<Instant>,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("key", &self.key)
            .field("owner", &self.owner)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl LockGuard {
    pub(crate) fn new(
        key: &str,
        owner: &str,
        token: u64,
        route: Route,
        expires: Option<Instant>,
    ) -> LockGuard {
        LockGuard {
            key: key.to_string(),
            owner: owner.to_string(),
            token,
            route: Some(route),
            expires,
        }
    }

    /// The fencing token of this holding: larger than every token issued before for this key
    /// on this server (a re-entry keeps it). Send it with every write to the resource you
    /// protect, and have the resource refuse a token lower than the highest it has seen.
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The lock's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The owner id the lock is held under.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// True once the lock is known lost: a watchdog lock whose connection dropped and could
    /// not be re-bound, a lock whose lease or hold cap has run out, or (a lock taken after a
    /// `wait`) one the server reported ended (`lost`: force-released, deleted, expired).
    pub fn is_lost(&self) -> bool {
        self.binding_lost() || self.expires.is_some_and(|at| Instant::now() >= at)
    }

    fn binding_lost(&self) -> bool {
        match &self.route {
            Some(Route::Bound(binding)) => binding.is_lost(),
            Some(Route::Notified(holding)) => holding.is_lost(),
            _ => false,
        }
    }

    /// Resolves when the lock is known lost (see [`is_lost`](LockGuard::is_lost)); pending for
    /// ever while it stays ours. `select!` it against your work to stop as soon as it is.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        let lost = match &self.route {
            Some(Route::Bound(binding)) => Some(binding.lost()),
            Some(Route::Notified(holding)) => Some(holding.lost()),
            _ => None,
        };
        let expires = self.expires;
        async move {
            let flag = async {
                match lost {
                    Some(mut lost) => drop(lost.wait_for(|lost| *lost).await),
                    None => std::future::pending().await,
                }
            };
            let deadline = async {
                match expires {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = flag => {}
                _ = deadline => {}
            }
        }
    }

    /// Gives the hold back. `Err(Error::Lost)` when the lock was no longer ours (known lost,
    /// or the server answered that this owner does not hold it): whatever was done under it
    /// may have overlapped with another holder.
    pub async fn release(mut self) -> Result<()> {
        let known_lost = self.is_lost();
        let route = self.route.take().expect("released only once");
        release(&route, &self.key, &self.owner, known_lost).await
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let known_lost = self.is_lost();
        if let Some(route) = self.route.take() {
            let (key, owner) = (self.key.clone(), self.owner.clone());
            spawn_if_runtime(async move {
                let _ = release(&route, &key, &owner, known_lost).await;
            });
        }
    }
}

/// Sends the release, unless the holding is known lost: `RLOCK.RELEASE` names the owner, not
/// the holding, so a late release could take a hold off a newer holding of the same handle.
async fn release(route: &Route, key: &str, owner: &str, known_lost: bool) -> Result<()> {
    let remaining: redis::RedisResult<Option<i64>> = if known_lost {
        Ok(None)
    } else {
        let cmd = commands::release(key, owner, &commands::request_id());
        route.link().call(&cmd, Some(Duration::ZERO)).await
    };
    match route {
        Route::Bound(binding) => binding.released(),
        Route::Notified(holding) => holding.released(),
        Route::Plain(_) => {}
    }
    remaining?.map(drop).ok_or(Error::Lost)
}

/// Runs `work` on the current tokio runtime, if there is one: what a `Drop` can do.
pub(crate) fn spawn_if_runtime(work: impl Future<Output = ()> + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(work);
    }
}
