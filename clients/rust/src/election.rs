//! Leader election with etcd's verbs over one lock key (the server's docs/election.md):
//! candidates queue for a watchdog lock under their candidate id (FIFO), the holder leads, and
//! its fencing token is its term. Observers (`observer`) follow the leader through the key's keyspace
//! events (module class `d`), reading `RLOCK.LEADER` at each event and after every reconnect.

use crate::confirm::settle_write;
use crate::core::DEFAULT_RESPONSE_TIMEOUT;
use crate::error::{Error, Result};
use crate::guard::LockGuard;
use crate::lock::Lock;
use crate::observer::Observer;
use crate::servers::Servers;
use crate::session::Session;
use redis::{RedisResult, Value};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Who leads an election now, as `RLOCK.LEADER` answers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leader {
    /// The leader's candidate id (its owner id at the lock key).
    pub owner: String,
    /// Its term: the fencing token of its holding, larger than every term before it. `None`
    /// for a lock taken by a Redisson client (no token).
    pub term: Option<u64>,
    /// How much of its lease was left when asked (the watchdog renews it while the leader's
    /// connection lives).
    pub ttl: Duration,
}

/// One candidate in the election `name` (the lock key, used as given), running as
/// `candidate`: the owner id every participant sees as the leader, so put in it what
/// followers need (its address, say). Candidate ids must be unique: two `Election`s with one
/// id are one candidate.
///
/// ```no_run
/// # async fn example(client: redis::Client) -> Result<(), rlock_client::Error> {
/// use rlock_client::Election;
///
/// let election = Election::new(&client, "scheduler", "10.0.0.7:8080");
/// let term = election.campaign().await?; // waits until this candidate leads
/// tokio::select! {
///     _ = election.lost() => eprintln!("no longer leader (term {term})"),
///     _ = lead(term) => election.resign().await?,
/// }
/// # Ok(()) }
/// # async fn lead(_term: u64) {}
/// ```
pub struct Election {
    servers: Servers,
    name: String,
    lock: Lock,
    plain: Session,
    response_timeout: Duration,
    /// One campaign at a time: a second one waits for the first and gets its term.
    campaigning: tokio::sync::Mutex<()>,
    term: Mutex<Option<Term>>,
}

/// The holding of a term, and whether it ended by `resign`.
struct Term {
    guard: LockGuard,
    resigned: Arc<AtomicBool>,
}

impl Election {
    /// A candidate `candidate` in the election `name` on the server `client` points to.
    /// Nothing is sent until it campaigns or asks.
    pub fn new(
        servers: impl Into<Servers>,
        name: impl Into<String>,
        candidate: impl Into<String>,
    ) -> Self {
        let (servers, name) = (servers.into(), name.into());
        let lock = Lock::new(&servers, name.clone())
            .wait_forever()
            .owner_id(candidate);
        Election {
            plain: Session::new(servers.router(&name), DEFAULT_RESPONSE_TIMEOUT),
            servers,
            name,
            lock,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            campaigning: tokio::sync::Mutex::new(()),
            term: Mutex::default(),
        }
    }

    /// The election's name: its lock key.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This candidate's id.
    pub fn candidate(&self) -> &str {
        self.lock.owner()
    }

    /// Waits in the server's FIFO queue of candidates (by message: no blocked connection)
    /// until this candidate leads, and returns its term. Leading already: its term at once.
    /// The leadership is a watchdog holding: the server keeps it while the client's
    /// connection lives and hands it to the next candidate in milliseconds when it closes.
    /// Drop the future to stop campaigning (the candidate leaves the queue).
    pub async fn campaign(&self) -> Result<u64> {
        let _one_at_a_time = self.campaigning.lock().await;
        if let Some(term) = self.term() {
            return Ok(term);
        }
        let guard = self.lock.acquire().await?;
        let token = guard.token();
        *self.term.lock().expect("term lock") = Some(Term {
            guard,
            resigned: Arc::default(),
        });
        Ok(token)
    }

    /// This candidate's term while it leads (as far as it knows: [`lost`](Election::lost)
    /// tells when that ends), else `None`.
    pub fn term(&self) -> Option<u64> {
        let term = self.term.lock().expect("term lock");
        term.as_ref()
            .filter(|term| !term.guard.is_lost())
            .map(|term| term.guard.token())
    }

    /// True while this candidate leads (see [`term`](Election::term)).
    pub fn is_leader(&self) -> bool {
        self.term().is_some()
    }

    /// Gives up leadership: the next candidate in the queue leads at once. Nothing to do when
    /// not leading; a leadership already lost is reported by [`lost`](Election::lost), not
    /// here.
    pub async fn resign(&self) -> Result<()> {
        let Some(term) = self.term.lock().expect("term lock").take() else {
            return Ok(());
        };
        term.resigned.store(true, Ordering::SeqCst);
        match term.guard.release().await {
            Err(Error::Lost) => Ok(()),
            done => done,
        }
    }

    /// Resolves when the current leadership ends other than by [`resign`](Election::resign):
    /// the leader's connection dropped and could not be re-bound, the lock was
    /// force-released or deleted. At once when this candidate does not lead; pending for
    /// ever after a `resign`.
    pub fn lost(&self) -> impl Future<Output = ()> + Send + 'static {
        let term = self.term.lock().expect("term lock");
        let watch = term
            .as_ref()
            .map(|term| (term.guard.lost(), term.resigned.clone()));
        async move {
            let Some((lost, resigned)) = watch else {
                return;
            };
            lost.await;
            if resigned.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Runs one write command only while this candidate leads in its current term
    /// ([`LockGuard::guarded`]); [`Error::Lost`] when it does not (nothing was run).
    pub async fn guarded<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> Result<T> {
        let (cmd, confirm) = {
            let term = self.term.lock().expect("term lock");
            let term = term.as_ref().ok_or(Error::Lost)?;
            let confirm = term.guard.confirmation().clone();
            (term.guard.guard_command(command), confirm)
        };
        let (reply, shortfall) = self.plain.call_once(&cmd, &confirm).await?;
        settle_write(shortfall, &confirm)?;
        Ok(reply)
    }

    /// The current leader (`RLOCK.LEADER`), or `None` while nobody leads.
    pub async fn leader(&self) -> Result<Option<Leader>> {
        Ok(query_leader(&self.plain, &self.name).await?)
    }

    /// The leader now, then every change (`None` while nobody leads), driven by the
    /// server's keyspace events for the key: observers send no command between changes. The
    /// server must publish them (`notify-keyspace-events` with `K` and `d`, or `Kdgx` to
    /// also see a lease end and a `DEL`); when it does not, the stream's first item is an
    /// error, and it ends. It listens on a connection of its own (RESP3), and after a
    /// reconnect reads the leader again, so a change missed while disconnected is reported
    /// late, never lost for good. Dropping the [`Observer`] closes its connection.
    pub fn observe(&self) -> Observer {
        Observer::start(&self.servers, &self.name, self.response_timeout)
    }
}

/// `RLOCK.LEADER key`: a map of `owner`, `token`, `ttl` (RESP3), or the same as a flat array
/// (RESP2); nil when free.
pub(crate) async fn query_leader(session: &Session, key: &str) -> RedisResult<Option<Leader>> {
    let mut cmd = redis::cmd("RLOCK.LEADER");
    cmd.arg(key);
    let reply: Value = session.call(&cmd, Some(Duration::ZERO)).await?;
    parse_leader(reply)
}

fn parse_leader(reply: Value) -> RedisResult<Option<Leader>> {
    let pairs: Vec<(Value, Value)> = match reply {
        Value::Nil => return Ok(None),
        Value::Map(pairs) => pairs,
        Value::Array(flat) => {
            let mut flat = flat.into_iter();
            std::iter::from_fn(|| Some((flat.next()?, flat.next()?))).collect()
        }
        other => return Err(malformed(format!("{other:?}"))),
    };
    let mut fields: HashMap<String, Value> = HashMap::new();
    for (name, value) in pairs {
        fields.insert(redis::from_redis_value(name)?, value);
    }
    let mut field = |name: &str| fields.remove(name).unwrap_or(Value::Nil);
    Ok(Some(Leader {
        owner: redis::from_redis_value(field("owner"))?,
        term: redis::from_redis_value(field("token"))?,
        ttl: Duration::from_millis(
            redis::from_redis_value::<Option<i64>>(field("ttl"))?
                .unwrap_or(0)
                .max(0) as u64,
        ),
    }))
}

fn malformed(detail: String) -> redis::RedisError {
    (
        redis::ErrorKind::UnexpectedReturnType,
        "unexpected reply to RLOCK.LEADER",
        detail,
    )
        .into()
}
