//! The read-write lock (`RWLOCK.*`): a thin layer over the core.

use crate::builder::builder_methods;
use crate::commands::Family;
use crate::core::Core;
use crate::error::Result;
use crate::guard::{ReadGuard, WriteGuard};
use crate::servers::Servers;

/// One read-write lock (a key) as seen by one owner: many readers or one writer, in the
/// shape of `tokio::sync::RwLock`.
///
/// ```no_run
/// # async fn example(client: redis::Client) -> Result<(), rlock_client::Error> {
/// use rlock_client::RwLock;
/// use std::time::Duration;
///
/// let doc = RwLock::new(&client, "doc:7").wait(Duration::from_secs(5));
/// let reading = doc.read().await?; // other handles may read too; writers queue
/// reading.release().await?;
/// let writing = doc.write().await?; // alone; check writing.token() at the resource
/// writing.release().await?;
/// # Ok(()) }
/// ```
///
/// The handle has its own owner id, like a [`Lock`](crate::Lock)'s: two handles exclude each
/// other as readers and writers do, and one handle re-enters its own holds (each guard gives
/// back one). Make one handle per task that should be excluded. The builder is the same as
/// the lock's (lease, wait, watchdog, hold cap), for both modes.
///
/// The server's queue is FIFO: a reader that arrives while a writer waits queues behind it,
/// so readers cannot starve writers, and a run of readers at the head enters together.
///
/// - **Downgrade.** A handle that holds the write lock may also take the read lock; when its
///   write guards are released it keeps reading, and queued readers enter.
/// - **No upgrade.** A handle that holds only the read lock asking for the write lock gets an
///   error at once (`ERR this owner holds the read lock ...`, as
///   [`Error::Redis`](crate::Error::Redis)): it could only wait for itself.
pub struct RwLock {
    core: Core,
}

impl RwLock {
    /// A handle on the read-write lock at `key` on the server `client` points to. Defaults:
    /// 30 s lease, watchdog on, no wait, no hold cap. Nothing is sent until
    /// [`read`](RwLock::read) or [`write`](RwLock::write).
    pub fn new(servers: impl Into<Servers>, key: impl Into<String>) -> RwLock {
        RwLock {
            core: Core::new(servers.into(), key.into()),
        }
    }

    builder_methods!("lock");

    /// Takes a read hold (`RWLOCK.ACQUIRE key owner READ`): shared with other readers, never
    /// with a writer. [`Error::NotAcquired`](crate::Error::NotAcquired) when a writer holds it
    /// or waits, and the `wait` (if any) ran out. Dropping the future leaves the queue.
    pub async fn read(&self) -> Result<ReadGuard> {
        self.core.acquire(Family::Read).await
    }

    /// Takes the write hold (`RWLOCK.ACQUIRE key owner WRITE`): nobody else reads or writes.
    /// [`Error::NotAcquired`](crate::Error::NotAcquired) when others hold it and the `wait`
    /// (if any) ran out. Dropping the future leaves the queue.
    pub async fn write(&self) -> Result<WriteGuard> {
        self.core.acquire(Family::Write).await
    }
}
