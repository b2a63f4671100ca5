//! Confirmation by the replicas (docs/availability.md): a write is pipelined with `WAIT n
//! timeout` (or `WAITAOF 1 n timeout`) on the connection that sent it, `n` being the replicas
//! connected to the primary (learnt with `ROLE`, at most once a second per connection and
//! after every reconnect) or the number configured. No replica: no `WAIT` at all.

use crate::error::{Error, Result};
use redis::aio::MultiplexedConnection;
use redis::{RedisResult, Value};
use std::time::{Duration, Instant};

/// Redisson's `slavesSyncTimeout`.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(1000);
/// How long a count of replicas is trusted.
const REPLICAS_FRESH_FOR: Duration = Duration::from_secs(1);

/// How acquisitions and other writes are confirmed by the primary's replicas before they are
/// reported done. Set it for all handles on [`Servers::confirm`](crate::Servers::confirm), or
/// per handle with `.confirm(..)`.
///
/// - [`Confirm::auto`] (the default): by every replica connected to the primary at that
///   moment, within 1 s; a primary without replicas sends no `WAIT` and pays nothing.
/// - [`Confirm::replicas`]: by `n` replicas, however many are connected.
/// - [`Confirm::off`]: not at all (the acquisition may be lost in a failover).
/// - [`timeout`](Confirm::timeout), [`aof`](Confirm::aof) (`WAITAOF`: written to the AOF of
///   the primary and the replicas, Redis 7.2+ and Valkey), [`warn_only`](Confirm::warn_only)
///   (log a warning instead of failing).
///
/// An acquisition not confirmed in time is released and fails with
/// [`Error::NotConfirmed`]; a release or count-down not confirmed fails with the same error,
/// but its write stands on the primary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confirm {
    replicas: Replicas,
    timeout: Duration,
    aof: bool,
    warn_only: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Replicas {
    Connected,
    Exactly(u32),
    Off,
}

impl Default for Confirm {
    fn default() -> Confirm {
        Confirm::auto()
    }
}

impl Confirm {
    /// By every replica connected to the primary when the write is made, within 1 s.
    pub fn auto() -> Confirm {
        Confirm {
            replicas: Replicas::Connected,
            timeout: DEFAULT_TIMEOUT,
            aof: false,
            warn_only: false,
        }
    }

    /// By `n` replicas (0: none, as [`off`](Confirm::off)).
    pub fn replicas(n: u32) -> Confirm {
        Confirm {
            replicas: Replicas::Exactly(n),
            ..Confirm::auto()
        }
    }

    /// No confirmation: a failover right after an acquisition may give the lock to another.
    pub fn off() -> Confirm {
        Confirm {
            replicas: Replicas::Off,
            ..Confirm::auto()
        }
    }

    /// How long the replicas have to confirm (default 1 s).
    pub fn timeout(self, timeout: Duration) -> Confirm {
        Confirm { timeout, ..self }
    }

    /// Confirm with `WAITAOF 1 n timeout`: written to the primary's AOF and to `n` replicas'
    /// AOFs (needs `appendonly yes`, and Redis 7.2+ or Valkey: on Redis 7.0 every confirmed
    /// call fails with a configuration error).
    pub fn aof(self) -> Confirm {
        Confirm { aof: true, ..self }
    }

    /// Log a warning (the `log` crate) and go on when the replicas do not confirm in time,
    /// instead of failing.
    pub fn warn_only(self) -> Confirm {
        Confirm {
            warn_only: true,
            ..self
        }
    }

    pub(crate) fn is_off(&self) -> bool {
        self.replicas == Replicas::Off || self.replicas == Replicas::Exactly(0)
    }

    pub(crate) fn wait_time(&self) -> Duration {
        self.timeout
    }

    /// `WAIT n ms`, or `WAITAOF 1 n ms`.
    pub(crate) fn command(&self, replicas: u32) -> redis::Cmd {
        let ms = crate::commands::millis(self.timeout);
        let mut cmd = match self.aof {
            true => {
                let mut cmd = redis::cmd("WAITAOF");
                cmd.arg(1);
                cmd
            }
            false => redis::cmd("WAIT"),
        };
        cmd.arg(replicas).arg(ms);
        cmd
    }

    /// How many replicas the reply of [`command`](Confirm::command) says confirmed.
    pub(crate) fn confirmed(&self, reply: &Value) -> u32 {
        let count = |value: Option<&Value>| match value {
            Some(Value::Int(n)) => (*n).max(0) as u32,
            _ => 0,
        };
        match (self.aof, reply) {
            (true, Value::Array(pair)) if count(pair.first()) >= 1 => count(pair.get(1)),
            (true, _) => 0,
            (false, reply) => count(Some(reply)),
        }
    }
}

/// What a connection knows of its primary's replicas.
#[derive(Clone, Copy)]
pub(crate) struct ReplicaCount {
    generation: u64,
    connected: u32,
    waitaof: bool,
    at: Instant,
}

/// The replicas `confirm` asks for on `conn` (of `generation`), refreshing `known` with
/// `ROLE` when it is older than a second or of another connection. A configuration error when
/// `WAITAOF` is asked of a server without it.
pub(crate) async fn required(
    confirm: &Confirm,
    known: &std::sync::Mutex<Option<ReplicaCount>>,
    conn: &mut MultiplexedConnection,
    generation: u64,
) -> RedisResult<u32> {
    if confirm.is_off() {
        return Ok(0);
    }
    let cached = *known.lock().expect("replica count lock");
    let count = match cached {
        Some(count)
            if count.generation == generation && count.at.elapsed() < REPLICAS_FRESH_FOR =>
        {
            count
        }
        _ => {
            // Boxed: asked at most once a second, kept out of every call's future.
            let count = Box::pin(ask_replicas(conn, generation)).await?;
            *known.lock().expect("replica count lock") = Some(count);
            count
        }
    };
    if confirm.aof && !count.waitaof {
        return Err((
            redis::ErrorKind::InvalidClientConfig,
            "Confirm::aof needs WAITAOF (Redis 7.2+ or Valkey); this server has none",
        )
            .into());
    }
    Ok(match confirm.replicas {
        Replicas::Connected => count.connected,
        Replicas::Exactly(n) => n,
        Replicas::Off => 0,
    })
}

/// `ROLE` (a primary lists its connected replicas) and whether `WAITAOF` exists, in one trip.
async fn ask_replicas(
    conn: &mut MultiplexedConnection,
    generation: u64,
) -> RedisResult<ReplicaCount> {
    let mut pipe = redis::pipe();
    pipe.cmd("ROLE").cmd("COMMAND").arg("INFO").arg("WAITAOF");
    let (role, waitaof): (Value, Value) = pipe.query_async(conn).await?;
    let connected = match role {
        Value::Array(fields) => match fields.get(2) {
            Some(Value::Array(replicas)) => replicas.len() as u32,
            _ => 0,
        },
        _ => 0,
    };
    let waitaof =
        matches!(waitaof, Value::Array(items) if items.iter().any(|item| *item != Value::Nil));
    Ok(ReplicaCount {
        generation,
        connected,
        waitaof,
        at: Instant::now(),
    })
}

/// Fewer replicas than required confirmed a write within the timeout.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shortfall {
    pub(crate) confirmed: u32,
    pub(crate) required: u32,
    pub(crate) timeout: Duration,
}

impl Shortfall {
    /// The error for the caller; `undone`: the acquisition was released (else the write
    /// stands on the primary).
    pub(crate) fn error(self, undone: bool) -> Error {
        Error::NotConfirmed {
            confirmed: self.confirmed,
            required: self.required,
            timeout: self.timeout,
            undone,
        }
    }
}

/// The outcome of a write that stands (a release, a count-down, a setting): `Err` when it was
/// not confirmed, or under [`Confirm::warn_only`] a warning and `Ok`.
pub(crate) fn settle_write(shortfall: Option<Shortfall>, confirm: &Confirm) -> Result<()> {
    match shortfall {
        None => Ok(()),
        Some(shortfall) if confirm.warn_only => {
            log::warn!("rlock: {}", shortfall.error(false));
            Ok(())
        }
        Some(shortfall) => Err(shortfall.error(false)),
    }
}

/// Whether an acquisition not confirmed is kept (with a warning) rather than undone.
pub(crate) fn kept_unconfirmed(shortfall: &Shortfall, confirm: &Confirm) -> bool {
    if confirm.warn_only {
        log::warn!("rlock: {} (kept: warn_only)", shortfall.error(false));
    }
    confirm.warn_only
}
