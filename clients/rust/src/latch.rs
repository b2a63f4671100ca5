//! The count-down latch (`RLATCH.*`).

use crate::commands::{self, AcquireOptions, Family, Wait};
use crate::confirm::{settle_write, Confirm};
use crate::core::DEFAULT_RESPONSE_TIMEOUT;
use crate::error::Result;
use crate::notify::{self, SubscriberSlot};
use crate::router::Router;
use crate::servers::Servers;
use crate::session::Session;
use std::time::Duration;

/// One count-down latch (a key): set a count, count it down from anywhere, and everyone
/// waiting is let in together when it reaches 0 (Redisson's `RCountDownLatch`).
///
/// ```no_run
/// # async fn example(client: redis::Client) -> Result<(), rlock_client::Error> {
/// use rlock_client::CountDownLatch;
///
/// let ready = CountDownLatch::new(&client, "ready");
/// ready.try_set_count(2).await?;
/// // ... in two workers: ready.count_down().await?;
/// ready.wait().await?; // until both counted down
/// # Ok(()) }
/// ```
///
/// Waiting blocks no connection: all waits of one `redis::Client` (per tokio runtime) share
/// the one connection that waiting lock handles use (`RLATCH.AWAIT ... NOTIFY`), and a
/// dropped wait leaves the server's queue.
pub struct CountDownLatch {
    key: String,
    router: Router,
    plain: Session,
    subscriber: SubscriberSlot,
    confirm: Confirm,
}

impl CountDownLatch {
    /// A handle on the latch at `key` on the server `client` points to. Nothing is sent
    /// until it is used.
    pub fn new(servers: impl Into<Servers>, key: impl Into<String>) -> CountDownLatch {
        let (servers, key) = (servers.into(), key.into());
        let router = servers.router(&key);
        CountDownLatch {
            key,
            plain: Session::new(router.clone(), DEFAULT_RESPONSE_TIMEOUT),
            subscriber: SubscriberSlot::new(router.clone(), DEFAULT_RESPONSE_TIMEOUT),
            confirm: servers.default_confirm().clone(),
            router,
        }
    }

    /// How the replicas confirm the latch's count and count-downs (default: the servers',
    /// [`Confirm::auto`]). Waiting is not an acquisition: nothing to confirm.
    pub fn confirm(self, confirm: Confirm) -> Self {
        CountDownLatch { confirm, ..self }
    }

    /// How long a reply may take (beyond a wait) before the call counts as failed. Default
    /// 2 s.
    pub fn response_timeout(self, timeout: Duration) -> Self {
        CountDownLatch {
            plain: Session::new(self.router.clone(), timeout),
            subscriber: SubscriberSlot::new(self.router.clone(), timeout),
            ..self
        }
    }

    /// The latch's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Sets the count (at least 1) when the latch is not set: `true`; else changes nothing:
    /// `false` (Redisson's `trySetCount`). Retry-safe as [`count_down`](Self::count_down): the
    /// server answers a retry of the call that set the latch `true` again.
    pub async fn try_set_count(&self, count: u64) -> Result<bool> {
        let mut cmd = redis::cmd("RLATCH.SET");
        cmd.arg(&self.key).arg(count);
        let set: i64 = self.retry_safe_call(cmd).await?;
        Ok(set == 1)
    }

    /// Counts one down and returns the remaining count; at 0 the latch opens for every
    /// waiter. Retry-safe: the call carries a fresh `ID` and is sent once more, unchanged,
    /// after a connection error, and the server counts a retried id once.
    pub async fn count_down(&self) -> Result<u64> {
        let mut cmd = redis::cmd("RLATCH.COUNTDOWN");
        cmd.arg(&self.key);
        self.retry_safe_call(cmd).await
    }

    /// `cmd ID <fresh id>`, confirmed, sent once more after a connection error.
    async fn retry_safe_call<T: redis::FromRedisValue>(&self, mut cmd: redis::Cmd) -> Result<T> {
        cmd.arg("ID").arg(commands::request_id());
        let confirm = &self.confirm;
        let (reply, shortfall) = self
            .plain
            .call_confirmed(&cmd, Some(Duration::ZERO), confirm)
            .await?;
        settle_write(shortfall, confirm)?;
        Ok(reply)
    }

    /// The remaining count (0 when the latch is open or was never set).
    pub async fn count(&self) -> Result<u64> {
        let mut cmd = redis::cmd("RLATCH.COUNT");
        cmd.arg(&self.key);
        Ok(self.plain.call(&cmd, Some(Duration::ZERO)).await?)
    }

    /// Waits until the latch opens (at once when it is open or was never set).
    pub async fn wait(&self) -> Result<()> {
        self.await_open(Wait::Forever).await.map(drop)
    }

    /// Waits up to `limit` for the latch to open: `true` when it opened, `false` when the
    /// time ran out first. Dropping the future leaves the server's queue.
    pub async fn wait_for(&self, limit: Duration) -> Result<bool> {
        self.await_open(Wait::Up(limit.max(Duration::from_millis(1))))
            .await
    }

    async fn await_open(&self, wait: Wait) -> Result<bool> {
        let options = AcquireOptions::unwatched(Duration::ZERO, wait);
        let subscriber = self.subscriber.get().await?;
        let off = Confirm::off();
        let opened =
            notify::acquire(&subscriber, Family::Latch, &self.key, "", &options, &off).await?;
        Ok(opened.is_some())
    }
}
