//! The guard of a holding (of any lock type): its fencing token, its release, its loss.

use crate::commands::{self, Family};
use crate::confirm::{settle_write, Confirm};
use crate::error::{Error, Result};
use crate::holding::Holding;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A holding of a lock, of a read-write lock (read or write) or of semaphore permits: its
/// fencing token, its release, its loss. The type parameter says which ([`LockGuard`],
/// [`ReadGuard`], [`WriteGuard`], [`Permit`]); every guard works the same way.
///
/// Release it with [`release`](Guard::release), which says whether it was still ours;
/// dropping the guard releases it in the background (best effort, when a tokio runtime is
/// running), and a watchdog holding ends anyway when its connection closes.
#[must_use = "dropping the guard releases it at once"]
pub struct Guard<K> {
    kind: Family,
    key: Arc<str>,
    owner: Arc<str>,
    token: u64,
    /// `None` once released.
    route: Option<Holding>,
    /// Until when the lease (without the watchdog) and the hold cap surely keep it ours.
    expires: Option<Instant>,
    /// Keeps the holding's hold cap known to its handle (see `Core::expiry`); none without
    /// a cap.
    _era: Option<Arc<()>>,
    /// How the replicas confirm its release (and its guarded writes).
    confirm: Confirm,
    _held: PhantomData<fn() -> K>,
}

/// What a [`LockGuard`] holds: the plain lock (`RLOCK`).
#[derive(Debug)]
pub enum Exclusive {}
/// What a [`ReadGuard`] holds: a read hold of a read-write lock (`RWLOCK ... READ`).
#[derive(Debug)]
pub enum Read {}
/// What a [`WriteGuard`] holds: the write hold of a read-write lock (`RWLOCK ... WRITE`).
#[derive(Debug)]
pub enum Write {}
/// What a [`Permit`] holds: permits of a semaphore (`RSEM`).
#[derive(Debug)]
pub enum Permits {}

/// A held [`Lock`](crate::Lock).
pub type LockGuard = Guard<Exclusive>;
/// A read hold of an [`RwLock`](crate::RwLock): other readers may hold too, no writer.
pub type ReadGuard = Guard<Read>;
/// The write hold of an [`RwLock`](crate::RwLock): nobody else reads or writes.
pub type WriteGuard = Guard<Write>;
/// Permits of a [`Semaphore`](crate::Semaphore), given back on release.
pub type Permit = Guard<Permits>;

impl<K> std::fmt::Debug for Guard<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("kind", &self.kind)
            .field("key", &self.key)
            .field("owner", &self.owner)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl<K> Guard<K> {
    pub(crate) fn new(
        kind: Family,
        key: &Arc<str>,
        owner: &Arc<str>,
        token: u64,
        route: Holding,
        expires: Option<Instant>,
        era: Option<Arc<()>>,
    ) -> Guard<K> {
        Guard {
            kind,
            key: key.clone(),
            owner: owner.clone(),
            token,
            route: Some(route),
            expires,
            _era: era,
            confirm: Confirm::default(),
            _held: PhantomData,
        }
    }

    /// The guard, whose release (and guarded writes) `confirm` confirms.
    pub(crate) fn confirmed_by(mut self, confirm: &Confirm) -> Guard<K> {
        self.confirm = confirm.clone();
        self
    }

    /// Gives the hold back without asking the replicas: undoing an acquisition they did not
    /// confirm (they may be the reason).
    pub(crate) async fn undo(mut self) -> Result<()> {
        self.confirm = Confirm::off();
        self.release().await
    }

    /// The fencing token of this holding: larger than every token issued before for this key
    /// on this server (a re-entry keeps it; a semaphore issues one per grant). Send it with
    /// every write to the resource you protect, and have the resource refuse a token lower
    /// than the highest it has seen (for a read-write lock, the writer's token is the one to
    /// check at a resource).
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The owner id it is held under.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// True once the holding is known lost: a watchdog holding whose connection dropped and
    /// could not be re-bound, one whose lease or hold cap has run out, or (taken through a
    /// waiting handle) one the server reported ended (`lost`: force-released, deleted,
    /// expired).
    pub fn is_lost(&self) -> bool {
        self.binding_lost() || self.expires.is_some_and(|at| Instant::now() >= at)
    }

    fn binding_lost(&self) -> bool {
        match &self.route {
            Some(Holding::Bound(binding)) => binding.is_lost(),
            Some(Holding::Notified(holding)) => holding.is_lost(),
            _ => false,
        }
    }

    /// Resolves when the holding is known lost (see [`is_lost`](Guard::is_lost)); pending for
    /// ever while it stays ours. `select!` it against your work to stop as soon as it is.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        let lost = match &self.route {
            Some(Holding::Bound(binding)) => Some(binding.lost()),
            Some(Holding::Notified(holding)) => Some(holding.lost()),
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

    /// Gives the hold (or the permits) back. `Err(Error::Lost)` when it was no longer ours
    /// (known lost, or the server answered that this owner does not hold it): whatever was
    /// done under it may have overlapped with another holder.
    pub async fn release(mut self) -> Result<()> {
        let known_lost = self.is_lost();
        let route = self.route.take().expect("released only once");
        let (kind, confirm) = (self.kind, &self.confirm);
        release(&route, kind, &self.key, &self.owner, known_lost, confirm).await
    }

    /// Takes the holding out of the guard, whose drop then gives nothing back: its key, its
    /// route, and whether it is known lost. `None` once released.
    pub(crate) fn detach(&mut self) -> Option<(String, Holding, bool)> {
        let known_lost = self.is_lost();
        let route = self.route.take()?;
        Some((self.key.to_string(), route, known_lost))
    }
}

impl Guard<Exclusive> {
    /// Runs one write command only while this holding is still the lock's: `RLOCK.GUARD key
    /// owner token command [arg ...]` checks that the owner holds the lock with this guard's
    /// token and runs the command in the same atomic step, replying its reply.
    /// [`Error::Lost`] when it no longer does (its lease ended, it was force-released,
    /// another owner holds it now): nothing was run. For data kept in Redis itself, which
    /// cannot check a fencing token.
    ///
    /// ```no_run
    /// # async fn example(guard: rlock_client::LockGuard) -> Result<(), rlock_client::Error> {
    /// let mut set = redis::cmd("SET");
    /// set.arg("report:owner").arg("me");
    /// let () = guard.guarded(&set).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// The command must be a write that does not block (the server refuses others), and its
    /// keys must share the lock key's slot in Cluster. It is sent once, never retried: a
    /// command such as `INCR` could run twice. After a broken connection the error is
    /// [`Error::Redis`] and whether the command ran is unknown.
    pub async fn guarded<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> Result<T> {
        let route = self.route.as_ref().expect("a live guard has its route");
        let cmd = self.guard_command(command);
        let (reply, shortfall) = route.session().call_once(&cmd, &self.confirm).await?;
        settle_write(shortfall, &self.confirm)?;
        Ok(reply)
    }

    /// How the replicas confirm this guard's release.
    pub(crate) fn confirmation(&self) -> &Confirm {
        &self.confirm
    }

    /// `RLOCK.GUARD` of `command` under this holding.
    pub(crate) fn guard_command(&self, command: &redis::Cmd) -> redis::Cmd {
        commands::guard(&self.key, &self.owner, self.token, command)
    }
}

impl Guard<Permits> {
    /// How many permits this guard holds.
    pub fn permits(&self) -> u32 {
        match self.kind {
            Family::Permits(n) => n,
            _ => unreachable!("a permit guard holds permits"),
        }
    }
}

impl<K> Drop for Guard<K> {
    fn drop(&mut self) {
        let known_lost = self.is_lost();
        if let Some(route) = self.route.take() {
            let (kind, key, owner) = (self.kind, self.key.clone(), self.owner.clone());
            let confirm = self.confirm.clone();
            spawn_if_runtime(async move {
                let _ = release(&route, kind, &key, &owner, known_lost, &confirm).await;
            });
        }
    }
}

/// Sends the release, unless the holding is known lost: `RELEASE` names the owner, not the
/// holding, so a late release could take a hold off a newer holding of the same handle.
/// [`Error::NotConfirmed`] when the replicas did not confirm it (it stands on the primary).
async fn release(
    route: &Holding,
    kind: Family,
    key: &str,
    owner: &str,
    known_lost: bool,
    confirm: &Confirm,
) -> Result<()> {
    let remaining = if known_lost {
        Ok((None, None))
    } else {
        let cmd = commands::release(kind, key, owner, &commands::request_id());
        route
            .session()
            .call_confirmed(&cmd, Some(Duration::ZERO), confirm)
            .await
    };
    let answered = remaining
        .as_ref()
        .ok()
        .and_then(|(remaining, _)| *remaining);
    route.released(answered);
    let (remaining, shortfall): (Option<i64>, _) = remaining?;
    remaining.ok_or(Error::Lost)?;
    settle_write(shortfall, confirm)
}

/// Gives back plain locks of `owner` detached from their guards with one
/// `RLOCK.RELEASEALL`, those not known lost (see [`release`]). `Err(Error::Lost)` when any
/// was no longer ours.
pub(crate) async fn release_all(
    owner: &str,
    held: Vec<(String, Holding, bool)>,
    confirm: &Confirm,
) -> Result<()> {
    let live: Vec<&str> = held
        .iter()
        .filter(|(_, _, known_lost)| !known_lost)
        .map(|(key, _, _)| key.as_str())
        .collect();
    let answers = match held.first() {
        Some((_, route, _)) if !live.is_empty() => {
            let cmd = commands::release_all(&live, owner, &commands::request_id());
            let session = route.session();
            session
                .call_confirmed(&cmd, Some(Duration::ZERO), confirm)
                .await
        }
        _ => Ok((Vec::new(), None)),
    };
    let all_ours = live.len() == held.len()
        && answers
            .as_ref()
            .is_ok_and(|(answers, _)| answers.iter().all(Option::is_some));
    // Every key's answer, for its binding: one the last of them finds empty is parked.
    let emptied = all_ours
        && answers
            .as_ref()
            .is_ok_and(|(answers, _)| answers.iter().all(|left| *left == Some(0)));
    for (_, route, _) in held {
        route.released(emptied.then_some(0));
    }
    let (_, shortfall): (Vec<Option<i64>>, _) = answers?;
    all_ours.then_some(()).ok_or(Error::Lost)?;
    settle_write(shortfall, confirm)
}

/// Runs `work` on the current tokio runtime, if there is one: what a `Drop` can do.
pub(crate) fn spawn_if_runtime(work: impl Future<Output = ()> + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(work);
    }
}
