//! `make bench-pairs`' Rust pairs: rlock_client's `Lock` beside rslock (the Redlock crate
//! for the async redis crate, run on one server) and beside the pattern users write by hand, `SET
//! key token NX PX` with a compare-and-delete Lua release through the redis crate, polling every
//! 5 ms while the key is taken. One redis-server with the module (the shared fixture), rounds
//! interleaved (the order of the sides rotates from round to round). The workloads are the
//! Node and Python pairs':
//!
//! - uncontended: one task, acquire then release as fast as it can (pairs/s, and the process's
//!   CPU time per pair);
//! - parallel: CONTENDERS tasks, each with its own client and key (pairs/s of all together);
//! - hot lock: CONTENDERS tasks, each with its own client, acquire then release at once in a
//!   loop (acquires/s, p99 wait, longest wait, most and fewest acquisitions of one task; a
//!   wait still unfinished when the round ends counts with its time so far);
//! - handoff: one task holds, another waits; the time from the release to the waiter holding
//!   (median of HANDOFFS).
//!
//! For the uncontended pairs rlock's Lock is the README's first example, `Lock::new(&client,
//! key)` with its defaults (watchdog on its own connection, no wait): the one a user writes
//! first. The other workloads queue, so there it runs with a wait in the server's queue; the
//! waiting Lock's uncontended pairs are measured too (`uncontended_waiting`, rlock's alone).
//! rslock and SET NX get a 10 s lease; rslock retries as it does by default (3 tries 0-200 ms
//! apart, then again). Writes every round's figures to target/bench-rust.json
//! (benches/pairs.py sets the pairs side by side, with ratios).
//!
//! Environment: BENCH_REPS (5), BENCH_ROUND_MS (2000), BENCH_CONTENDERS (16),
//! BENCH_HANDOFFS (20), BENCH_SIDES (all: rlock,rslock,set-nx), BENCH_WORKLOADS (all:
//! uncontended,parallel,handoff,hot; fewer for a profile of one).

#[path = "../../../tests/common/mod.rs"]
#[allow(dead_code, clippy::type_complexity)]
mod common;

use rlock_client::Lock;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LEASE: Duration = Duration::from_secs(10);
const WAIT: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_millis(5);
/// How long the holder keeps the lock once the waiter asked, so that it is waiting.
const HANDOFF_HOLD: Duration = Duration::from_millis(5);
const COMPARE_AND_DELETE: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

type BoxFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// One lock object of one side, reused for every acquisition of its task.
trait Holder: Send {
    fn acquire(&mut self) -> BoxFuture<'_>;
    fn release(&mut self) -> BoxFuture<'_>;
}

struct Rlock {
    lock: Lock,
    guard: Option<rlock_client::LockGuard>,
}

impl Holder for Rlock {
    fn acquire(&mut self) -> BoxFuture<'_> {
        Box::pin(async move { self.guard = Some(self.lock.acquire().await.expect("rlock acquire")) })
    }
    fn release(&mut self) -> BoxFuture<'_> {
        Box::pin(async move { self.guard.take().expect("held").release().await.expect("rlock release") })
    }
}

struct Rslock {
    manager: rslock::LockManager,
    key: String,
    lock: Option<rslock::Lock>,
}

impl Holder for Rslock {
    fn acquire(&mut self) -> BoxFuture<'_> {
        Box::pin(async move {
            let lock = self.manager.acquire_no_guard(self.key.as_bytes(), LEASE).await.expect("rslock acquire");
            self.lock = Some(lock);
        })
    }
    fn release(&mut self) -> BoxFuture<'_> {
        Box::pin(async move { self.manager.unlock(&self.lock.take().expect("held")).await })
    }
}

struct SetNx {
    conn: redis::aio::MultiplexedConnection,
    key: String,
    token: String,
    release: redis::Script,
}

impl Holder for SetNx {
    fn acquire(&mut self) -> BoxFuture<'_> {
        Box::pin(async move {
            loop {
                let set: Option<String> = redis::cmd("SET")
                    .arg(&self.key)
                    .arg(&self.token)
                    .arg("NX")
                    .arg("PX")
                    .arg(LEASE.as_millis() as u64)
                    .query_async(&mut self.conn)
                    .await
                    .expect("SET NX");
                if set.is_some() {
                    return;
                }
                tokio::time::sleep(POLL).await;
            }
        })
    }
    fn release(&mut self) -> BoxFuture<'_> {
        Box::pin(async move {
            let _: i64 = self.release.key(&self.key).arg(&self.token).invoke_async(&mut self.conn).await.expect("CAD");
        })
    }
}

#[derive(Clone)]
struct Side {
    name: &'static str,
    clients: Arc<Vec<redis::Client>>,
}

impl Side {
    /// A holder on the `index`-th client for `key`.
    async fn holder(&self, index: usize, key: &str) -> Box<dyn Holder> {
        let client = &self.clients[index];
        match self.name {
            "rlock" => Box::new(Rlock { lock: Lock::new(client, key).wait(WAIT), guard: None }),
            "rslock" => {
                Box::new(Rslock { manager: rslock::LockManager::from_clients(vec![client.clone()]), key: key.into(), lock: None })
            }
            _ => Box::new(SetNx {
                conn: client.get_multiplexed_async_connection().await.expect("connect"),
                key: key.into(),
                token: format!("{}:{index}", std::process::id()),
                release: redis::Script::new(COMPARE_AND_DELETE),
            }),
        }
    }

    /// Holders for `keys`, each used once outside the clock (connections and scripts set up).
    async fn warm_holders(&self, keys: &[String]) -> Vec<Box<dyn Holder>> {
        let mut holders = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let mut holder = self.holder(i, key).await;
            holder.acquire().await;
            holder.release().await;
            holders.push(holder);
        }
        holders
    }
}

/// The process's CPU time (user + system, every thread) in µs, from /proc/self/stat (in
/// clock ticks of 10 ms: over a round of a second or more, a few µs per pair).
fn cpu_us() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name in parentheses; utime and stime are the 14th and 15th.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(f64::NAN);
    (ticks(11) + ticks(12)) * 10_000.0
}

/// Pairs per second, and the process's CPU time per pair (what a loaded machine changes least);
/// for rlock, of the README's first example (defaults: the watchdog, no wait).
async fn uncontended(side: &Side, key: &str, round: Duration) -> [(&'static str, f64); 2] {
    if side.name != "rlock" {
        return pairs_of(side.warm_holders(&[key.to_string()]).await.pop().expect("one"), round).await;
    }
    let mut holder = Box::new(Rlock { lock: Lock::new(&side.clients[0], key), guard: None });
    holder.acquire().await;
    holder.release().await;
    pairs_of(holder, round).await
}

/// `uncontended` for rlock's Lock with a wait (queued through the client's shared `NOTIFY`
/// connection when taken), as the contended workloads run it.
async fn uncontended_waiting(side: &Side, key: &str, round: Duration) -> [(&'static str, f64); 2] {
    pairs_of(side.warm_holders(&[key.to_string()]).await.pop().expect("one"), round).await
}

/// The pairs of a warm holder for `round`: pairs per second, CPU time per pair.
async fn pairs_of(mut holder: Box<dyn Holder>, round: Duration) -> [(&'static str, f64); 2] {
    let start = Instant::now();
    let cpu = cpu_us();
    let mut pairs = 0u64;
    while start.elapsed() < round {
        holder.acquire().await;
        holder.release().await;
        pairs += 1;
    }
    let rate = pairs as f64 / start.elapsed().as_secs_f64();
    [("pairs_per_s", rate), ("cpu_us_per_pair", (cpu_us() - cpu) / pairs as f64)]
}

/// Runs `body` for each holder in a task of its own for `round`, then stops them; returns the
/// seconds the round lasted and what `at_end` saw at its end (before the tasks finished).
async fn one_round<T, B, F>(holders: Vec<Box<dyn Holder>>, round: Duration, body: B, at_end: impl FnOnce() -> T) -> (f64, T)
where
    B: Fn(usize, Box<dyn Holder>, Arc<AtomicBool>) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let running = Arc::new(AtomicBool::new(true));
    let start = Instant::now();
    let tasks: Vec<_> = holders.into_iter().enumerate().map(|(i, h)| tokio::spawn(body(i, h, running.clone()))).collect();
    tokio::time::sleep(round).await;
    running.store(false, Ordering::SeqCst);
    let seconds = start.elapsed().as_secs_f64();
    let seen = at_end();
    for task in tasks {
        task.await.expect("task");
    }
    (seconds, seen)
}

async fn parallel(side: &Side, key: &str, contenders: usize, round: Duration) -> f64 {
    let keys: Vec<String> = (0..contenders).map(|i| format!("{key}:{i}")).collect();
    let holders = side.warm_holders(&keys).await;
    let pairs = Arc::new(AtomicU64::new(0));
    let counted = pairs.clone();
    let (seconds, ()) = one_round(
        holders,
        round,
        move |_, mut holder, running| {
            let pairs = counted.clone();
            async move {
                while running.load(Ordering::SeqCst) {
                    holder.acquire().await;
                    holder.release().await;
                    pairs.fetch_add(1, Ordering::Relaxed);
                }
            }
        },
        || (),
    )
    .await;
    pairs.load(Ordering::SeqCst) as f64 / seconds
}

async fn hot_lock(side: &Side, key: &str, contenders: usize, round: Duration) -> BTreeMap<&'static str, f64> {
    let keys = vec![key.to_string(); contenders];
    let holders = side.warm_holders(&keys).await;
    let waits = Arc::new(Mutex::new(Vec::<f64>::new()));
    let counts = Arc::new(Mutex::new(vec![0u64; contenders]));
    let pending = Arc::new(Mutex::new(vec![None::<Instant>; contenders]));
    let (w, c, p) = (waits.clone(), counts.clone(), pending.clone());
    let (seconds, unfinished) = one_round(
        holders,
        round,
        move |i, mut holder, running| {
            let (waits, counts, pending) = (w.clone(), c.clone(), p.clone());
            async move {
                while running.load(Ordering::SeqCst) {
                    let asked = Instant::now();
                    pending.lock().expect("pending")[i] = Some(asked);
                    holder.acquire().await;
                    pending.lock().expect("pending")[i] = None;
                    if !running.load(Ordering::SeqCst) {
                        holder.release().await;
                        break;
                    }
                    waits.lock().expect("waits").push(asked.elapsed().as_secs_f64());
                    counts.lock().expect("counts")[i] += 1;
                    holder.release().await;
                }
            }
        },
        || pending.lock().expect("pending").iter().flatten().map(|asked| asked.elapsed().as_secs_f64()).collect::<Vec<_>>(),
    )
    .await;
    let granted = waits.lock().expect("waits").len();
    let mut every: Vec<f64> = waits.lock().expect("waits").iter().copied().chain(unfinished.iter().copied()).collect();
    every.sort_by(f64::total_cmp);
    let counts = counts.lock().expect("counts");
    let p99 = every.get(((0.99 * every.len() as f64).ceil() as usize).saturating_sub(1)).copied().unwrap_or(f64::NAN);
    BTreeMap::from([
        ("acquires_per_s", granted as f64 / seconds),
        ("p99_ms", 1000.0 * p99),
        // The p99 is over acquisitions (a starved task weighs once): the longest wait shows it.
        ("max_wait_ms", 1000.0 * every.last().copied().unwrap_or(f64::NAN)),
        ("max_per_contender", *counts.iter().max().unwrap_or(&0) as f64),
        ("min_per_contender", *counts.iter().min().unwrap_or(&0) as f64),
        ("unfinished_waits", unfinished.len() as f64),
    ])
}

async fn handoff(side: &Side, key: &str, handoffs: usize) -> f64 {
    let mut holders = side.warm_holders(&[key.to_string(), key.to_string()]).await;
    let waiter = Arc::new(tokio::sync::Mutex::new(holders.pop().expect("waiter")));
    let mut holder = holders.pop().expect("holder");
    let mut times = Vec::new();
    for _ in 0..handoffs {
        holder.acquire().await;
        let waiting = waiter.clone();
        let (asked_tx, asked_rx) = tokio::sync::oneshot::channel();
        let wait = tokio::spawn(async move {
            let mut waiter = waiting.lock().await;
            let _ = asked_tx.send(());
            waiter.acquire().await;
            let held = Instant::now();
            waiter.release().await;
            held
        });
        asked_rx.await.expect("asked");
        tokio::time::sleep(HANDOFF_HOLD).await;
        let released = Instant::now();
        holder.release().await;
        let held = wait.await.expect("waiter");
        times.push(held.duration_since(released).as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    1000.0 * times[times.len() / 2]
}

fn main() {
    let reps = setting("BENCH_REPS", 5) as usize;
    let round = Duration::from_millis(setting("BENCH_ROUND_MS", 2000));
    let contenders = setting("BENCH_CONTENDERS", 16) as usize;
    let handoffs = setting("BENCH_HANDOFFS", 20) as usize;
    let chosen = std::env::var("BENCH_SIDES").unwrap_or_else(|_| "rlock,rslock,set-nx".into());
    let workloads = std::env::var("BENCH_WORKLOADS").unwrap_or_else(|_| "uncontended,parallel,handoff,hot".into());
    let runs = |workload: &str| workloads.split(',').any(|w| w == workload);
    if std::env::var_os("RLOCK_MODULE").is_none() {
        let module = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../target/release/librlock.so");
        std::env::set_var("RLOCK_MODULE", module);
    }
    let server = common::Server::start();
    let url = format!("redis://127.0.0.1:{}/", server.port);
    let clients = Arc::new((0..contenders.max(2)).map(|_| redis::Client::open(url.as_str()).expect("client")).collect::<Vec<_>>());
    let sides: Vec<Side> = ["rlock", "rslock", "set-nx"]
        .into_iter()
        .filter(|name| chosen.split(',').any(|c| c == *name))
        .map(|name| Side { name, clients: clients.clone() })
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let mut figures: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    runtime.block_on(async {
        for rep in 0..reps {
            for k in 0..sides.len() {
                let side = &sides[(rep + k) % sides.len()];
                let prefix = format!("rust.lock.{}", side.name);
                let mut record = |figure: String, value: f64| figures.entry(format!("{prefix}.{figure}")).or_default().push(value);
                if runs("uncontended") {
                    for (figure, value) in uncontended(side, &format!("bench:{prefix}:u{rep}"), round).await {
                        record(format!("uncontended.{figure}"), value);
                    }
                    if side.name == "rlock" {
                        for (figure, value) in uncontended_waiting(side, &format!("bench:{prefix}:w{rep}"), round).await {
                            record(format!("uncontended_waiting.{figure}"), value);
                        }
                    }
                }
                if runs("parallel") {
                    let pairs = parallel(side, &format!("bench:{prefix}:p{rep}"), contenders, round).await;
                    record(format!("parallel{contenders}.pairs_per_s"), pairs);
                }
                if runs("handoff") {
                    record("handoff.median_ms".into(), handoff(side, &format!("bench:{prefix}:o{rep}"), handoffs).await);
                }
                if runs("hot") {
                    for (figure, value) in hot_lock(side, &format!("bench:{prefix}:h{rep}"), contenders, round).await {
                        record(format!("hot{contenders}.{figure}"), value);
                    }
                }
            }
        }
    });
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let meta = serde_json::json!({
        "redis_version": server.info_field("server", "redis_version"),
        "reps": reps, "round_ms": round.as_millis() as u64, "contenders": contenders,
        "load_average": load.split_whitespace().take(3).collect::<Vec<_>>(),
    });
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../target/bench-rust.json");
    let json = serde_json::json!({ "meta": meta, "figures": figures });
    std::fs::write(&out, format!("{}\n", serde_json::to_string_pretty(&json).expect("json"))).expect("write");
    println!("{:<58} {:>10}   [min .. max] over {reps} rounds", "figure", "median");
    for (name, values) in &figures {
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        println!("{name:<58} {:>10.1}   [{:.1} .. {:.1}]", sorted[sorted.len() / 2], sorted[0], sorted[sorted.len() - 1]);
    }
    println!("wrote {}", out.display());
}
