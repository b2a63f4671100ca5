//! The semaphore (`RSEM.*`): a thin layer over the core, and the permit counts.

use crate::builder::builder_methods;
use crate::commands::{self, Family};
use crate::confirm::settle_write;
use crate::core::Core;
use crate::error::Result;
use crate::guard::Permit;
use crate::servers::Servers;
use redis::Value;
use std::time::Duration;

/// One semaphore (a key) as seen by one owner, in the shape of `tokio::sync::Semaphore`:
/// permits that belong to their holder and come back when it dies.
///
/// ```no_run
/// # async fn example(client: redis::Client) -> Result<(), rlock_client::Error> {
/// use rlock_client::Semaphore;
/// use std::time::Duration;
///
/// let pool = Semaphore::new(&client, "pool").wait(Duration::from_secs(5));
/// pool.try_set_permits(3).await?; // only where the semaphore does not exist yet
/// let permit = pool.acquire_many(2).await?;
/// permit.release().await?;
/// # Ok(()) }
/// ```
///
/// The handle has its own owner id: the permits its guards hold add up under it, share one
/// lease (renewed by the watchdog while the handle's connection lives) and come back at once
/// when that connection closes (the process died). Waiters are served in arrival order, each
/// when its whole request fits: a request for 3 is not passed by later requests for 1.
/// The builder is the same as the lock's (lease, wait, watchdog, hold cap).
pub struct Semaphore {
    core: Core,
}

impl Semaphore {
    /// A handle on the semaphore at `key` on the server `client` points to. Defaults: 30 s
    /// lease, watchdog on, no wait, no hold cap. A semaphore that does not exist has no
    /// permits: set them with [`try_set_permits`](Semaphore::try_set_permits).
    pub fn new(servers: impl Into<Servers>, key: impl Into<String>) -> Semaphore {
        Semaphore {
            core: Core::new(servers.into(), key.into()),
        }
    }

    builder_methods!("permits");

    /// Takes one permit. See [`acquire_many`](Semaphore::acquire_many).
    pub async fn acquire(&self) -> Result<Permit> {
        self.acquire_many(1).await
    }

    /// Takes `n` permits (`RSEM.ACQUIRE key owner PERMITS n`) and returns their guard, which
    /// gives all `n` back. [`Error::NotAcquired`](crate::Error::NotAcquired) when they are not
    /// available and the `wait` (if any) ran out. Dropping the future leaves the queue.
    pub async fn acquire_many(&self, n: u32) -> Result<Permit> {
        self.core.acquire(Family::Permits(n)).await
    }

    /// Sets the available permits to `n` when the semaphore does not exist yet (`true`), else
    /// changes nothing (`false`): Redisson's `trySetPermits`. Retry-safe: it carries
    /// a fresh `ID` and is sent once more, unchanged, after a connection error; the server
    /// answers a retry of the call that set the count `true` again.
    pub async fn try_set_permits(&self, n: u32) -> Result<bool> {
        let set: i64 = self.permits_call("RSEM.SETPERMITS", i64::from(n)).await?;
        Ok(set == 1)
    }

    /// Adds `n` available permits (negative: removes them) and serves the queue; returns the
    /// new count. Retry-safe as [`try_set_permits`](Semaphore::try_set_permits): a retried id
    /// adds once.
    pub async fn add_permits(&self, n: i64) -> Result<i64> {
        self.permits_call("RSEM.ADDPERMITS", n).await
    }

    /// `<command> key n ID <fresh id>`, confirmed, retried after a connection error.
    async fn permits_call(&self, command: &str, n: i64) -> Result<i64> {
        let mut cmd = redis::cmd(command);
        cmd.arg(self.core.key())
            .arg(n)
            .arg("ID")
            .arg(commands::request_id());
        let confirm = self.core.confirmation();
        let (reply, shortfall) = self
            .core
            .plain()
            .call_confirmed(&cmd, Some(Duration::ZERO), confirm)
            .await?;
        settle_write(shortfall, confirm)?;
        Ok(reply)
    }

    /// The permits available now (`RSEM.INFO`'s `available`; 0 when the semaphore does not
    /// exist).
    pub async fn available_permits(&self) -> Result<i64> {
        let mut cmd = redis::cmd("RSEM.INFO");
        cmd.arg(self.core.key());
        let info: Value = self.core.plain().call(&cmd, Some(Duration::ZERO)).await?;
        Ok(field(&info, "available").unwrap_or(0))
    }
}

/// An integer field of an `INFO` reply (a map in RESP3, alternating names and values in RESP2).
fn field(info: &Value, name: &str) -> Option<i64> {
    let is_name = |value: &Value| match value {
        Value::BulkString(bytes) => bytes == name.as_bytes(),
        Value::SimpleString(text) => text == name,
        _ => false,
    };
    let found = match info {
        Value::Map(pairs) => pairs.iter().find(|(k, _)| is_name(k)).map(|(_, v)| v),
        Value::Array(items) => items
            .chunks(2)
            .find(|pair| is_name(&pair[0]))
            .and_then(|pair| pair.get(1)),
        _ => None,
    };
    match found? {
        Value::Int(n) => Some(*n),
        _ => None,
    }
}
