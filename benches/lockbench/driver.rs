//! What every workload shares: the three implementations' commands, the pipelined load
//! generator, the server's own figures (INFO), and the table and bench.json a run ends with.

use crate::common::{redisson, Conn, Server, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Every comparison runs as this many interleaved rounds, so a run shows its own spread.
pub const ROUNDS: usize = 5;
/// One round of one side. Short, so five rounds of every workload fit in a few minutes.
pub const RUN: Duration = Duration::from_secs(1);
pub const CONNECTIONS: usize = 50;
pub const PIPELINE: usize = 16;

/// A lock implementation's commands, as the benchmark sends them.
#[derive(Clone, Copy, PartialEq)]
pub enum Impl {
    Rlock,
    Redisson,
    /// `SET NX PX` and a compare-and-delete Lua release, polling on contention.
    SetNx,
}

impl Impl {
    pub fn name(self) -> &'static str {
        match self {
            Impl::Rlock => "rlock",
            Impl::Redisson => "redisson",
            Impl::SetNx => "set-nx",
        }
    }

    /// The name INFO commandstats counts this implementation's acquire under.
    pub fn acquire_command(self) -> &'static str {
        match self {
            Impl::Rlock => "rlock.acquire",
            Impl::Redisson => "evalsha",
            Impl::SetNx => "set",
        }
    }
}

const CAD: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

pub struct Shas {
    acquire: String,
    release: String,
    cad: String,
}

pub fn load_scripts(c: &mut Conn) -> Shas {
    let mut load = |s: &str| c.cmd(&["SCRIPT", "LOAD", s]).text();
    Shas {
        acquire: load(redisson::ACQUIRE),
        release: load(redisson::RELEASE),
        cad: load(CAD),
    }
}

pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// EVALSHA with its key count, as Redisson sends its scripts.
pub fn evalsha(sha: &str, keys: &[&str], args: &[&str]) -> Vec<String> {
    let count = keys.len().to_string();
    strings(&[&["EVALSHA", sha, &count][..], keys, args].concat())
}

pub fn acquire_args(im: Impl, shas: &Shas, key: &str, owner: &str, wait: bool) -> Vec<String> {
    match im {
        Impl::Rlock if wait => strings(&["RLOCK.ACQUIRE", key, owner, "PX", "30000", "WAIT", "0"]),
        Impl::Rlock => strings(&["RLOCK.ACQUIRE", key, owner, "PX", "30000"]),
        Impl::Redisson => strings(&["EVALSHA", &shas.acquire, "1", key, "30000", owner]),
        Impl::SetNx => strings(&["SET", key, owner, "NX", "PX", "30000"]),
    }
}

pub fn release_args(im: Impl, shas: &Shas, key: &str, owner: &str) -> Vec<String> {
    match im {
        Impl::Rlock => strings(&["RLOCK.RELEASE", key, owner]),
        Impl::Redisson => strings(&[
            "EVALSHA",
            &shas.release,
            "2",
            key,
            &redisson::channel(key),
            "0",
            "30000",
            owner,
        ]),
        Impl::SetNx => strings(&["EVALSHA", &shas.cad, "1", key, owner]),
    }
}

pub struct Rng(u64);
impl Rng {
    /// A different, fixed sequence for each thread `t`.
    pub fn for_thread(t: usize) -> Rng {
        Rng(0x9E37_79B9_7F4A_7C15 ^ ((t as u64 + 1) * 0x1234_5678_9ABC))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Runs `CONNECTIONS` pipelined connections for `RUN`; `batch` fills one pipeline and says
/// how many replies to read and how many operations it counts as. Returns operations/s.
pub fn pipelined(
    server: &Server,
    batch: impl Fn(&mut Rng, &mut Vec<u8>) -> (usize, u64) + Sync,
) -> f64 {
    let done = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..CONNECTIONS {
            let (done, batch) = (&done, &batch);
            s.spawn(move || {
                let mut c = server.conn();
                let mut rng = Rng::for_thread(t);
                let mut buf = Vec::new();
                while start.elapsed() < RUN {
                    buf.clear();
                    let (replies, ops) = batch(&mut rng, &mut buf);
                    c.send_raw(&buf).expect("send");
                    read_replies(&mut c, replies);
                    done.fetch_add(ops, Ordering::Relaxed);
                }
            });
        }
    });
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

/// How a Redisson client waits for a lock (RedissonLock.lock, and tryLock when `deadline` is
/// its wait time): `acquire` is a script replying nil when granted, else the holder's PTTL,
/// which bounds each wait for a message. Returns whether it acquired.
pub fn redisson_lock(
    server: &Server,
    c: &mut Conn,
    sub: &mut Option<Conn>,
    acquire: &[String],
    channel: &str,
    stop: &AtomicBool,
    deadline: Option<Instant>,
) -> bool {
    let try_acquire = |c: &mut Conn| {
        let ttl = c.cmd(acquire);
        (!ttl.is_nil()).then(|| Duration::from_millis(ttl.int().max(1) as u64))
    };
    redisson_wait(server, c, sub, channel, stop, deadline, try_acquire)
}

/// Redisson's wait loop, shared by its locks and semaphores: `try_acquire` sends one try and
/// returns `None` when granted, else how long to wait for a message before trying again. On a
/// failed first try it subscribes to `channel`, then tries again and waits for a message (or
/// that time) between tries; it unsubscribes when done. Gives up after a failed try once
/// `stop` is set or `deadline` has passed. `sub` is the client's pub/sub connection, opened
/// at its first wait. Returns whether it acquired.
pub fn redisson_wait(
    server: &Server,
    c: &mut Conn,
    sub: &mut Option<Conn>,
    channel: &str,
    stop: &AtomicBool,
    deadline: Option<Instant>,
    mut try_acquire: impl FnMut(&mut Conn) -> Option<Duration>,
) -> bool {
    if try_acquire(c).is_none() {
        return true;
    }
    let s = sub.get_or_insert_with(|| server.conn());
    s.cmd(&["SUBSCRIBE", channel]);
    let give_up = || stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d);
    // Redisson tries once more as soon as it listens: a release published before the
    // subscription would otherwise leave it sleeping a whole wait.
    let mut wait = try_acquire(c);
    while let Some(pause) = wait.filter(|_| !give_up()) {
        let left = deadline.map_or(pause, |d| d.saturating_duration_since(Instant::now()));
        s.set_read_timeout(Some(pause.min(left).max(Duration::from_millis(1))));
        let _ = s.read(); // a message, or the timeout
        wait = try_acquire(c);
    }
    s.set_read_timeout(Some(Duration::from_secs(30)));
    s.send(&["UNSUBSCRIBE", channel]).expect("send");
    // Messages published before the confirmation are no wakeups for the next wait.
    while let Ok(reply) = s.read() {
        if reply
            .items()
            .first()
            .is_some_and(|kind| kind.text() == "unsubscribe")
        {
            break;
        }
    }
    wait.is_none()
}

/// Runs `n` clients on threads of their own for `RUN`: each is `client(id, stop)`, which
/// returns once `stop` is set. Returns what each returned.
pub fn clients_for_run<T: Send>(
    n: usize,
    client: impl Fn(usize, &AtomicBool) -> T + Sync,
) -> Vec<T> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|id| {
                let (client, stop) = (&client, &stop);
                s.spawn(move || client(id, stop))
            })
            .collect();
        std::thread::sleep(RUN);
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().expect("client"))
            .collect()
    })
}

/// What the waiting clients of a round saw: every latency (ms, sorted), counting each wait
/// still unfinished at the round's end with its time so far.
pub struct Waits {
    pub sorted: Vec<f64>,
    /// Waits unfinished at the round's end.
    pub unfinished: usize,
    /// Clients that got at least one holding.
    pub served: usize,
}

impl Waits {
    /// From each client's (latencies, its unfinished wait if any).
    pub fn of(clients: Vec<(Vec<f64>, Option<f64>)>) -> Waits {
        let mut w = Waits {
            sorted: Vec::new(),
            unfinished: 0,
            served: 0,
        };
        for (mine, unfinished_wait) in clients {
            w.served += usize::from(!mine.is_empty());
            w.unfinished += usize::from(unfinished_wait.is_some());
            w.sorted.extend(mine);
            w.sorted.extend(unfinished_wait);
        }
        w.sorted.sort_by(|a, b| a.total_cmp(b));
        w
    }

    /// How many waits ended with a holding.
    pub fn granted(&self) -> f64 {
        (self.sorted.len() - self.unfinished) as f64
    }
}

/// Reads the replies to a pipeline; a benchmark whose commands fail measures nothing.
pub fn read_replies(c: &mut Conn, replies: usize) {
    for _ in 0..replies {
        if let Value::Error(e) = c.read().expect("reply") {
            panic!("benchmark command failed: {e}");
        }
    }
}

pub fn encode(buf: &mut Vec<u8>, args: &[String]) {
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    Conn::encode(buf, &refs);
}

/// No extra RLOCK.ACQUIRE options, for `fresh_acquires`.
pub fn no_options(_key: &str) -> Vec<String> {
    Vec::new()
}

/// Pipelined acquires of distinct random keys, each followed by `options(key)`; returns
/// acquires/s.
pub fn fresh_acquires(
    server: &Server,
    shas: &Shas,
    im: Impl,
    prefix: &str,
    options: impl Fn(&str) -> Vec<String> + Sync,
) -> f64 {
    pipelined(server, |rng, buf| {
        for _ in 0..PIPELINE {
            let key = format!(
                "{prefix}:{}:{}",
                rng.next() % 1_000_000_000,
                rng.next() % 1000
            );
            let mut args = acquire_args(im, shas, &key, "owner-1", false);
            args.extend(options(&key));
            encode(buf, &args);
        }
        (PIPELINE, PIPELINE as u64)
    })
}

/// The commands a client sends for one acquire+release pair of `im` (`None`: SET NX with a
/// plain DEL), as INFO commandstats names them. Commands that scripts run inside are counted
/// there too, and inside their script's time: they stay out.
fn pair_commands(im: Option<Impl>) -> &'static [&'static str] {
    match im {
        Some(Impl::Rlock) => &["rlock.acquire", "rlock.release"],
        Some(Impl::Redisson) => &["evalsha"],
        Some(Impl::SetNx) => &["set", "evalsha"],
        None => &["set", "del"],
    }
}

/// One run of uncontended pairs, from the server's accounting.
pub struct Pairs {
    pub per_s: f64,
    pub pair_usec: f64,
    /// Per call, where acquire and release are distinct commands (NaN for Redisson's EVALSHA).
    pub acquire_usec: f64,
    pub release_usec: f64,
}

/// Pipelined acquire+release pairs of `im` (`None`: SET NX + DEL) on random keys
/// `{prefix}:<n>`, each released in the same pipeline, so the keyspace keeps its size.
pub fn pairs(server: &Server, c: &mut Conn, shas: &Shas, im: Option<Impl>, prefix: &str) -> Pairs {
    reset_stats(c);
    let acquire_im = im.unwrap_or(Impl::SetNx);
    let per_s = pipelined(server, |rng, buf| {
        for _ in 0..PIPELINE / 2 {
            let key = format!("{prefix}:{}", rng.next() % 1_000_000_000);
            encode(buf, &acquire_args(acquire_im, shas, &key, "owner-1", false));
            match im {
                Some(im) => encode(buf, &release_args(im, shas, &key, "owner-1")),
                None => encode(buf, &strings(&["DEL", &key])),
            }
        }
        (PIPELINE, (PIPELINE / 2) as u64)
    });
    let stats = commandstats(c);
    let sent: Vec<(u64, f64)> = pair_commands(im)
        .iter()
        .map(|name| stats.get(*name).copied().unwrap_or((0, f64::NAN)))
        .collect();
    let calls: u64 = sent.iter().map(|s| s.0).sum();
    let usec: f64 = sent.iter().map(|(n, us)| *n as f64 * us).sum();
    let per_call = |i: usize| sent.get(i).map_or(f64::NAN, |s| s.1);
    Pairs {
        per_s,
        pair_usec: usec / (calls as f64 / 2.0),
        acquire_usec: per_call(0),
        release_usec: per_call(1),
    }
}

/// Pipelined PINGs, the floor any command is measured against; returns PINGs/s.
pub fn pings(server: &Server) -> f64 {
    let ping = strings(&["PING"]);
    pipelined(server, |_, buf| {
        for _ in 0..PIPELINE {
            encode(buf, &ping);
        }
        (PIPELINE, PIPELINE as u64)
    })
}

/// Server µs per fresh acquire, from the server's own accounting: the client's share of
/// the two cores it shares with the server stays out of the figure.
pub fn fresh_acquire_usec(
    server: &Server,
    c: &mut Conn,
    shas: &Shas,
    im: Impl,
    prefix: &str,
    options: impl Fn(&str) -> Vec<String> + Sync,
) -> f64 {
    reset(c);
    fresh_acquires(server, shas, im, prefix, options);
    commandstats(c)
        .get(im.acquire_command())
        .map_or(f64::NAN, |s| s.1)
}

/// `INFO commandstats` as name -> (calls, usec_per_call).
pub fn commandstats(c: &mut Conn) -> BTreeMap<String, (u64, f64)> {
    let text = c.q("INFO commandstats").text();
    text.lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter_map(|l| {
            let (name, rest) = l.split_once(':')?;
            let field = |f: &str| {
                rest.split(',')
                    .find_map(|kv| kv.strip_prefix(f))
                    .map(str::to_string)
            };
            Some((
                name.to_string(),
                (
                    field("calls=")?.parse().ok()?,
                    field("usec_per_call=")?.parse().ok()?,
                ),
            ))
        })
        .collect()
}

/// Commands the workload sent, without the benchmark's own bookkeeping ones.
pub fn total_calls(c: &mut Conn) -> u64 {
    commandstats(c)
        .iter()
        .filter(|(n, _)| !["info", "config", "flushall"].contains(&n.as_str()))
        .map(|(_, v)| v.0)
        .sum()
}

pub fn reset(c: &mut Conn) {
    c.q("FLUSHALL");
    reset_stats(c);
}

/// Zeroes INFO commandstats, keeping the keys.
pub fn reset_stats(c: &mut Conn) {
    c.q("CONFIG RESETSTAT");
}

/// A numeric INFO field; `None` when this server does not report it.
pub fn info_number(server: &Server, section: &str, field: &str) -> Option<f64> {
    info_field(&server.info(section), field)
}

/// A numeric field of INFO text already read.
pub fn info_field(info: &str, field: &str) -> Option<f64> {
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .map(|n| n.trim().parse().expect("number"))
}

/// The module's own heap.
pub fn heap_bytes(server: &Server) -> f64 {
    info_number(server, "rlock", "rlock_heap_bytes").expect("rlock_heap_bytes")
}

pub fn used_memory(server: &Server) -> f64 {
    info_number(server, "memory", "used_memory").expect("used_memory")
}

pub fn redis_version(c: &mut Conn) -> String {
    c.q("INFO server")
        .text()
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

/// (median, min, max) of repeated runs.
pub fn spread(runs: &[f64]) -> (f64, f64, f64) {
    let (min, max) = runs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    (median(runs.to_vec()), min, max)
}

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// "median (min-max)" of repeated runs, with `decimals` decimals.
pub fn shown(runs: &[f64], decimals: usize) -> String {
    shown_in(runs, decimals, "")
}

/// "median`unit` (min-max)", e.g. "1.99x (1.90-2.10)".
fn shown_in(runs: &[f64], decimals: usize, unit: &str) -> String {
    let (mid, min, max) = spread(runs);
    format!("{mid:.decimals$}{unit} ({min:.decimals$}-{max:.decimals$})")
}

/// Interleaved rounds of several sides (implementations, or commands): each side's figures,
/// one value a round, named `{prefix}.{side}.{figure}` in bench.json.
pub struct Rounds {
    prefix: String,
    figures: BTreeMap<String, Vec<f64>>,
}

impl Rounds {
    pub fn new(prefix: &str) -> Rounds {
        Rounds {
            prefix: prefix.into(),
            figures: BTreeMap::new(),
        }
    }

    fn name(&self, side: &str, figure: &str) -> String {
        format!("{}.{side}.{figure}", self.prefix)
    }

    /// One round's figures for `side`.
    pub fn push(&mut self, side: &str, figures: &[(&str, f64)]) {
        for (figure, value) in figures {
            let name = self.name(side, figure);
            self.figures.entry(name).or_default().push(*value);
        }
    }

    pub fn get(&self, side: &str, figure: &str) -> &[f64] {
        &self.figures[&self.name(side, figure)]
    }

    /// The median over the rounds.
    pub fn mid(&self, side: &str, figure: &str) -> f64 {
        spread(self.get(side, figure)).0
    }

    /// `side`'s `figure` as "median (min-max)".
    pub fn show(&self, side: &str, figure: &str, decimals: usize) -> String {
        shown(self.get(side, figure), decimals)
    }

    /// Several of `side`'s figures, each "median (min-max)" with its decimals, joined by "; ".
    pub fn shows(&self, side: &str, figures: &[(&str, usize)]) -> String {
        figures
            .iter()
            .map(|(figure, decimals)| self.show(side, figure, *decimals))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// `f(a, b)` of `figure` round by round, as the two sides of a round ran back to back;
    /// kept for bench.json as `{prefix}.{a}{sign}{b}.{figure}`, shown as "median (min-max)".
    fn each_round(
        &mut self,
        figure: &str,
        (a, sign, b): (&str, &str, &str),
        f: fn(f64, f64) -> f64,
        (decimals, unit): (usize, &str),
    ) -> String {
        let values: Vec<f64> = self
            .get(a, figure)
            .iter()
            .zip(self.get(b, figure))
            .map(|(x, y)| f(*x, *y))
            .collect();
        let text = shown_in(&values, decimals, unit);
        let name = self.name(&format!("{a}{sign}{b}"), figure);
        self.figures.insert(name, values);
        text
    }

    /// Each round's `a` ÷ `b` of `figure`: "1.99x (1.90-2.10)".
    pub fn ratio(&mut self, figure: &str, a: &str, b: &str) -> String {
        self.each_round(figure, (a, "/", b), |x, y| x / y, (2, "x"))
    }

    /// Each round's `a` − `b` of `figure`.
    pub fn difference(&mut self, figure: &str, a: &str, b: &str, decimals: usize) -> String {
        self.each_round(figure, (a, "-", b), |x, y| x - y, (decimals, ""))
    }

    /// Adds the row of each round's rlock ÷ Redisson acquires/s, then writes the figures.
    pub fn finish_against_redisson(mut self, table: &mut Table, workload: &str, note: String) {
        let ratio = self.ratio("acquires_per_s", "rlock", "redisson");
        table.add(workload, "rlock / redisson acquires/s", ratio, note);
        self.finish(table);
    }

    /// Writes every round's figures (and the ratios taken) into bench.json.
    pub fn finish(self, table: &mut Table) {
        for (name, values) in self.figures {
            table.raw(&name, values);
        }
    }
}

/// A bench.json value; written without a serde dependency.
enum Json {
    Num(f64),
    List(Vec<f64>),
    Text(String),
}

fn json_number(n: f64) -> String {
    if n.is_finite() {
        n.to_string()
    } else {
        "null".into()
    }
}

/// The printed table's rows and bench.json's raw figures.
pub struct Table {
    rows: Vec<[String; 4]>,
    report: BTreeMap<String, Json>,
    version: String,
}

impl Table {
    pub fn new(version: &str) -> Table {
        let mut report = BTreeMap::new();
        report.insert("redis_version".into(), Json::Text(version.into()));
        // How the figures were taken, for whoever reads bench.json (the chart's notes).
        report.insert("rounds".into(), Json::Num(ROUNDS as f64));
        report.insert("round_s".into(), Json::Num(RUN.as_secs_f64()));
        Table {
            rows: vec![],
            report,
            version: version.into(),
        }
    }

    pub fn add(&mut self, workload: &str, metric: &str, figure: String, note: String) {
        self.rows
            .push([workload.into(), metric.into(), figure, note]);
    }

    pub fn raw(&mut self, name: &str, values: Vec<f64>) {
        self.report.insert(name.into(), Json::List(values));
    }

    pub fn num(&mut self, name: &str, value: f64) {
        self.report.insert(name.into(), Json::Num(value));
    }

    pub fn text(&mut self, name: &str, value: &str) {
        self.report.insert(name.into(), Json::Text(value.into()));
    }

    pub fn print(&self) {
        let widths = [0, 1, 2, 3].map(|i| {
            self.rows
                .iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        });
        println!("\nrlock benchmark — Redis {} — {CONNECTIONS} connections × pipeline {PIPELINE} where pipelined; each figure is the median (min-max) of {ROUNDS} interleaved rounds of {RUN:?} unless its row says otherwise, each ratio the median (min-max) of the rounds' ratios\n", self.version);
        let mut last = String::new();
        for r in &self.rows {
            let workload = if r[0] == last {
                String::new()
            } else {
                r[0].clone()
            };
            last = r[0].clone();
            println!(
                "| {:w0$} | {:w1$} | {:>w2$} | {:w3$} |",
                workload,
                r[1],
                r[2],
                r[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2],
                w3 = widths[3]
            );
        }
    }

    /// Writes target/bench.json and returns its path.
    pub fn write_json(&self) -> PathBuf {
        let body: Vec<String> = self
            .report
            .iter()
            .map(|(k, v)| {
                let value = match v {
                    Json::Num(n) => json_number(*n),
                    Json::List(l) => format!(
                        "[{}]",
                        l.iter()
                            .copied()
                            .map(json_number)
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                    Json::Text(t) => format!("{t:?}"),
                };
                format!("  {k:?}: {value}")
            })
            .collect();
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench.json");
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::write(&path, format!("{{\n{}\n}}\n", body.join(",\n"))).expect("write bench.json");
        path
    }
}
