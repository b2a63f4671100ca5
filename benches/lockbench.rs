//! `make bench`: RLOCK against the Redisson RLock protocol (Lua scripts + pub/sub waiting) and
//! the plain `SET NX PX` pattern, side by side on one server with the module, interleaved.
//! Prints one table of medians and ratios and writes the raw figures to target/bench.json.

#[path = "../tests/common/mod.rs"]
mod common;

use common::redisson;
use common::{Conn, Server, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

const ROUNDS: usize = 3;
const RUN: Duration = Duration::from_secs(2);
const CONNECTIONS: usize = 50;
const PIPELINE: usize = 16;

/// A lock implementation's commands, as the benchmark sends them.
#[derive(Clone, Copy, PartialEq)]
enum Impl {
    Rlock,
    Redisson,
    /// `SET NX PX` and a compare-and-delete Lua release, polling on contention.
    SetNx,
}

impl Impl {
    fn name(self) -> &'static str {
        match self {
            Impl::Rlock => "rlock",
            Impl::Redisson => "redisson",
            Impl::SetNx => "set-nx",
        }
    }
}

const CAD: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

struct Shas {
    acquire: String,
    release: String,
    cad: String,
}

fn load_scripts(c: &mut Conn) -> Shas {
    let mut load = |s: &str| c.cmd(&["SCRIPT", "LOAD", s]).text();
    Shas {
        acquire: load(redisson::ACQUIRE),
        release: load(redisson::RELEASE),
        cad: load(CAD),
    }
}

fn v(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn acquire_args(im: Impl, shas: &Shas, key: &str, owner: &str, wait: bool) -> Vec<String> {
    match im {
        Impl::Rlock if wait => v(&["RLOCK.ACQUIRE", key, owner, "PX", "30000", "WAIT", "0"]),
        Impl::Rlock => v(&["RLOCK.ACQUIRE", key, owner, "PX", "30000"]),
        Impl::Redisson => v(&["EVALSHA", &shas.acquire, "1", key, "30000", owner]),
        Impl::SetNx => v(&["SET", key, owner, "NX", "PX", "30000"]),
    }
}

fn release_args(im: Impl, shas: &Shas, key: &str, owner: &str) -> Vec<String> {
    match im {
        Impl::Rlock => v(&["RLOCK.RELEASE", key, owner]),
        Impl::Redisson => v(&[
            "EVALSHA",
            &shas.release,
            "2",
            key,
            &redisson::channel(key),
            "0",
            "30000",
            owner,
        ]),
        Impl::SetNx => v(&["EVALSHA", &shas.cad, "1", key, owner]),
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Runs `CONNECTIONS` pipelined connections for `RUN`; `batch` fills one pipeline and says
/// how many replies to read and how many operations it counts as. Returns operations/s.
fn pipelined(
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
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1) * 0x1234_5678_9ABC);
                let mut buf = Vec::new();
                while start.elapsed() < RUN {
                    buf.clear();
                    let (replies, ops) = batch(&mut rng, &mut buf);
                    c.send_raw(&buf).expect("send");
                    for _ in 0..replies {
                        if let Value::Error(e) = c.read().expect("reply") {
                            panic!("benchmark command failed: {e}");
                        }
                    }
                    done.fetch_add(ops, Ordering::Relaxed);
                }
            });
        }
    });
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

fn encode(buf: &mut Vec<u8>, args: &[String]) {
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    Conn::encode(buf, &refs);
}

/// `INFO commandstats` as name -> (calls, usec_per_call).
fn commandstats(c: &mut Conn) -> BTreeMap<String, (u64, f64)> {
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

fn total_calls(c: &mut Conn) -> u64 {
    commandstats(c)
        .iter()
        .filter(|(n, _)| !["info", "config", "flushall"].contains(&n.as_str()))
        .map(|(_, v)| v.0)
        .sum()
}

fn reset(c: &mut Conn) {
    c.q("FLUSHALL");
    c.q("CONFIG RESETSTAT");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

type Report = BTreeMap<String, serde_like::Json>;

/// A tiny JSON writer: the benchmark's raw figures without a serde dependency.
mod serde_like {
    #[derive(Clone)]
    pub enum Json {
        Num(f64),
        List(Vec<f64>),
        Text(String),
    }
    pub fn write(report: &super::Report) -> String {
        let body: Vec<String> = report
            .iter()
            .map(|(k, v)| {
                let value = match v {
                    Json::Num(n) if n.is_finite() => format!("{n}"),
                    Json::Num(_) => "null".into(),
                    Json::List(l) => format!(
                        "[{}]",
                        l.iter()
                            .map(|n| if n.is_finite() {
                                n.to_string()
                            } else {
                                "null".into()
                            })
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                    Json::Text(t) => format!("{t:?}"),
                };
                format!("  {k:?}: {value}")
            })
            .collect();
        format!("{{\n{}\n}}\n", body.join(",\n"))
    }
}

struct Table {
    rows: Vec<[String; 4]>,
    report: Report,
}

impl Table {
    fn add(&mut self, workload: &str, metric: &str, figure: String, note: String) {
        self.rows
            .push([workload.into(), metric.into(), figure, note]);
    }
    fn raw(&mut self, name: &str, values: Vec<f64>) {
        self.report
            .insert(name.into(), serde_like::Json::List(values));
    }
    fn num(&mut self, name: &str, value: f64) {
        self.report
            .insert(name.into(), serde_like::Json::Num(value));
    }
}

/// W1: uncontended acquire+release pairs on random keys, and server µs per acquire.
fn w1(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    let impls = [Impl::Rlock, Impl::Redisson, Impl::SetNx];
    let mut pairs: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut usec: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for _ in 0..ROUNDS {
        for im in impls.into_iter().map(Some).chain([None]) {
            reset(&mut c);
            let name = im.map_or("set-nx+del", Impl::name);
            let rate = pipelined(server, |rng, buf| {
                for _ in 0..PIPELINE / 2 {
                    let key = format!("w1:{}", rng.next() % 1_000_000);
                    match im {
                        Some(im) => {
                            encode(buf, &acquire_args(im, shas, &key, "owner-1", false));
                            encode(buf, &release_args(im, shas, &key, "owner-1"));
                        }
                        None => {
                            encode(
                                buf,
                                &acquire_args(Impl::SetNx, shas, &key, "owner-1", false),
                            );
                            encode(buf, &["DEL".to_string(), key]);
                        }
                    }
                }
                (PIPELINE, (PIPELINE / 2) as u64)
            });
            pairs.entry(name).or_default().push(rate);
            // Server time of a fresh acquire alone: acquires only, on distinct keys.
            if let Some(im) = im {
                reset(&mut c);
                fresh_acquires(server, shas, Some(im), "w1a");
                let stats = commandstats(&mut c);
                let cmd = match im {
                    Impl::Rlock => "rlock.acquire",
                    Impl::Redisson => "evalsha",
                    Impl::SetNx => "set",
                };
                usec.entry(im.name())
                    .or_default()
                    .push(stats.get(cmd).map_or(f64::NAN, |s| s.1));
            }
        }
    }
    for (name, v) in &pairs {
        table.raw(&format!("w1.pairs_per_s.{name}"), v.clone());
    }
    for (name, v) in &usec {
        table.raw(&format!("w1.acquire_usec.{name}"), v.clone());
    }
    let m = |name: &str| median(pairs[name].clone());
    let u = |name: &str| median(usec[name].clone());
    for name in ["rlock", "redisson", "set-nx", "set-nx+del"] {
        table.add(
            "W1 uncontended",
            &format!("{name} acquire+release pairs/s"),
            format!("{:.0}", m(name)),
            String::new(),
        );
    }
    table.add(
        "W1 uncontended",
        "rlock / (set-nx+del) pairs",
        format!("{:.2}x", m("rlock") / m("set-nx+del")),
        "goal >= 0.9x".into(),
    );
    table.add(
        "W1 uncontended",
        "rlock / redisson pairs",
        format!("{:.2}x", m("rlock") / m("redisson")),
        "goal >= 1.8x".into(),
    );
    for name in ["rlock", "redisson", "set-nx"] {
        table.add(
            "W1 uncontended",
            &format!("{name} server µs per fresh acquire"),
            format!("{:.2}", u(name)),
            String::new(),
        );
    }
    table.add(
        "W1 uncontended",
        "rlock / set-nx server µs",
        format!("{:.2}x", u("rlock") / u("set-nx")),
        "goal <= 1.2x".into(),
    );
}

/// One contender of W2: loops acquire (waiting) -> release on `key` until `stop`.
fn contender(
    server: &Server,
    shas: &Shas,
    im: Impl,
    key: &str,
    id: usize,
    stop: &AtomicBool,
    latencies: &Mutex<Vec<f64>>,
) {
    let owner = format!("contender-{id}");
    let mut c = server.conn();
    let mut sub: Option<Conn> = None;
    let mut mine = Vec::new();
    let release = release_args(im, shas, key, &owner);
    let acquire = acquire_args(im, shas, key, &owner, true);
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        match im {
            Impl::Rlock => {
                c.cmd(&acquire);
            }
            Impl::Redisson => {
                // Redisson's lock(): try; on failure subscribe to the unlock channel and wait
                // for a message or the holder's PTTL, then try again; unsubscribe when done.
                let mut ttl = c.cmd(&acquire);
                if !ttl.is_nil() {
                    let s = sub.get_or_insert_with(|| server.conn());
                    s.cmd(&["SUBSCRIBE", &redisson::channel(key)]);
                    while !ttl.is_nil() {
                        s.set_read_timeout(Some(Duration::from_millis(ttl.int().max(1) as u64)));
                        let _ = s.read(); // a message, or the timeout
                        ttl = c.cmd(&acquire);
                        if stop.load(Ordering::Relaxed) && !ttl.is_nil() {
                            break;
                        }
                    }
                    s.set_read_timeout(Some(Duration::from_secs(30)));
                    s.cmd(&["UNSUBSCRIBE", &redisson::channel(key)]);
                    if !ttl.is_nil() {
                        break;
                    }
                }
            }
            Impl::SetNx => {
                // Poll with a short fixed back-off: the usual single-instance client loop.
                while c.cmd(&acquire).is_nil() {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
        mine.push(started.elapsed().as_secs_f64() * 1000.0);
        c.cmd(&release);
    }
    latencies.lock().expect("latencies").extend(mine);
}

/// W2: many contenders on one hot lock.
fn w2(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    for contenders in [16usize, 64, 256] {
        let mut rates = BTreeMap::new();
        for im in [Impl::Rlock, Impl::Redisson, Impl::SetNx] {
            reset(&mut c);
            let stop = AtomicBool::new(false);
            let latencies = Mutex::new(Vec::new());
            let key = format!("hot:{contenders}:{}", im.name());
            let started = Instant::now();
            std::thread::scope(|s| {
                for id in 0..contenders {
                    let (stop, latencies, key) = (&stop, &latencies, key.as_str());
                    s.spawn(move || contender(server, shas, im, key, id, stop, latencies));
                }
                std::thread::sleep(RUN);
                stop.store(true, Ordering::Relaxed);
                // Let blocked RLOCK waiters go: force-release until nobody waits.
                while server.blocked_clients() > 0 {
                    server.conn().cmd(&["DEL", &key]);
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
            let elapsed = started.elapsed().as_secs_f64();
            let mut lat = latencies.into_inner().expect("latencies");
            lat.sort_by(|a, b| a.total_cmp(b));
            let acquired = lat.len() as f64;
            let calls = total_calls(&mut c) as f64;
            let name = im.name();
            let rate = acquired / elapsed;
            rates.insert(name, rate);
            table.num(&format!("w2.{contenders}.{name}.handoffs_per_s"), rate);
            table.num(
                &format!("w2.{contenders}.{name}.p50_ms"),
                percentile(&lat, 0.5),
            );
            table.num(
                &format!("w2.{contenders}.{name}.p99_ms"),
                percentile(&lat, 0.99),
            );
            table.num(
                &format!("w2.{contenders}.{name}.max_ms"),
                percentile(&lat, 1.0),
            );
            table.num(
                &format!("w2.{contenders}.{name}.commands_per_acquire"),
                calls / acquired.max(1.0),
            );
            table.add(
                &format!("W2 hot lock, {contenders} contenders"),
                &format!("{name} acquires/s | p50 p99 max ms | cmds/acquire"),
                format!(
                    "{rate:.0} | {:.1} {:.1} {:.1} | {:.1}",
                    percentile(&lat, 0.5),
                    percentile(&lat, 0.99),
                    percentile(&lat, 1.0),
                    calls / acquired.max(1.0)
                ),
                String::new(),
            );
        }
        table.add(
            &format!("W2 hot lock, {contenders} contenders"),
            "rlock / redisson acquires/s",
            format!("{:.1}x", rates["rlock"] / rates["redisson"]),
            if contenders == 64 {
                "goal >= 5x".into()
            } else {
                String::new()
            },
        );
    }
}

fn wall_ms() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// W3: a holder that never releases; delay from its lease end to the waiter's grant.
fn w3(server: &Server, shas: &Shas, table: &mut Table) {
    const ROUNDS3: usize = 20;
    const LEASE: u64 = 100;
    let mut c = server.conn();
    for im in [Impl::Rlock, Impl::Redisson, Impl::SetNx] {
        let mut delays = Vec::new();
        for round in 0..ROUNDS3 {
            let key = format!("dead:{}:{round}", im.name());
            let mut hold = acquire_args(im, shas, &key, "dead-holder", false);
            match im {
                Impl::Rlock => hold[4] = LEASE.to_string(),
                Impl::Redisson => hold[4] = LEASE.to_string(),
                Impl::SetNx => hold[5] = LEASE.to_string(),
            }
            c.cmd(&hold);
            let lease_end = c.cmd(&["PEXPIRETIME", &key]).int() as f64;
            let waiter = std::thread::scope(|s| {
                s.spawn(|| {
                    let mut w = server.conn();
                    let acquire = acquire_args(im, shas, &key, "waiter", true);
                    match im {
                        Impl::Rlock => {
                            w.cmd(&acquire);
                        }
                        _ => {
                            // Redisson and SET NX clients both sleep on a timer: Redisson on the
                            // returned PTTL (plus its unlock channel), SET NX on its poll interval.
                            loop {
                                let reply = w.cmd(&acquire);
                                let granted = match im {
                                    Impl::Redisson => reply.is_nil(),
                                    _ => !reply.is_nil(),
                                };
                                if granted {
                                    break;
                                }
                                let sleep = match im {
                                    Impl::Redisson => reply.int().max(1) as u64,
                                    _ => 5,
                                };
                                std::thread::sleep(Duration::from_millis(sleep));
                            }
                        }
                    }
                    wall_ms()
                })
                .join()
                .expect("waiter")
            });
            delays.push(waiter - lease_end);
        }
        delays.sort_by(|a, b| a.total_cmp(b));
        table.raw(
            &format!("w3.grant_after_lease_end_ms.{}", im.name()),
            delays.clone(),
        );
        table.add(
            "W3 dead holder",
            &format!("{} grant after lease end p50 / p99 ms", im.name()),
            format!(
                "{:.1} / {:.1}",
                percentile(&delays, 0.5),
                percentile(&delays, 0.99)
            ),
            if im == Impl::Rlock {
                "goal p99 < 5 ms".into()
            } else {
                String::new()
            },
        );
    }
}

fn heap_bytes(server: &Server) -> f64 {
    server
        .info_field("rlock", "rlock_heap_bytes")
        .trim()
        .parse()
        .expect("number")
}

fn used_memory(server: &Server) -> f64 {
    server
        .info_field("memory", "used_memory")
        .trim()
        .parse()
        .expect("number")
}

/// W4: release-to-grant time with 1 .. 10,000 queued waiters, and memory per waiter.
fn w4(server: &Server, table: &mut Table) {
    let mut c = server.conn();
    for queued in [10usize, 1_000, 10_000] {
        reset(&mut c);
        let key = format!("queue:{queued}");
        c.cmd(&["RLOCK.ACQUIRE", &key, "holder"]);
        let measured = queued.min(20);
        let mut head = Vec::new();
        for i in 0..measured {
            let mut w = server.conn();
            w.send(&["RLOCK.ACQUIRE", &key, &format!("head-{i}"), "WAIT", "0"])
                .expect("send");
            server.wait_blocked(i as i64 + 1);
            head.push(w);
        }
        let base = used_memory(server);
        let heap_base = heap_bytes(server);
        let mut tail = Vec::new();
        for i in measured..queued {
            let mut w = server.conn();
            w.send(&["RLOCK.ACQUIRE", &key, &format!("tail-{i}"), "WAIT", "0"])
                .expect("send");
            tail.push(w);
        }
        common::wait_until("all queued", || server.blocked_clients() == queued as i64);
        let with_waiters = used_memory(server);
        // Memory is measured over the waiters queued after the first `measured`.
        let tail_len = if queued > measured {
            (queued - measured) as f64
        } else {
            f64::NAN
        };
        let per_waiter = (with_waiters - base) / tail_len;
        let heap_per_waiter = (heap_bytes(server) - heap_base) / tail_len;

        let mut times = Vec::new();
        let mut holder = (c, "holder".to_string());
        for (i, mut w) in head.into_iter().enumerate() {
            let started = Instant::now();
            holder.0.cmd(&["RLOCK.RELEASE", &key, &holder.1]);
            w.read().expect("grant").int();
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            holder = (w, format!("head-{i}"));
        }
        c = holder.0;
        c.cmd(&["RLOCK.FORCERELEASE", &key]);
        drop(tail);
        common::wait_until("queue drained", || server.blocked_clients() == 0);
        // The same number of clients blocked natively (BLPOP), for Redis's own share.
        let base = used_memory(server);
        let mut natives = Vec::new();
        for _ in measured..queued {
            let mut w = server.conn();
            w.send(&["BLPOP", "nothing", "0"]).expect("send");
            natives.push(w);
        }
        common::wait_until("natives blocked", || {
            server.blocked_clients() == (queued - measured) as i64
        });
        let per_native = (used_memory(server) - base) / tail_len;
        drop(natives);
        let mut sorted = times.clone();
        sorted.sort_by(|a, b| a.total_cmp(b));
        table.raw(&format!("w4.{queued}.release_to_grant_ms"), times);
        table.num(&format!("w4.{queued}.bytes_per_waiter"), per_waiter);
        table.num(&format!("w4.{queued}.bytes_per_blpop_client"), per_native);
        table.num(
            &format!("w4.{queued}.module_heap_bytes_per_waiter"),
            heap_per_waiter,
        );
        table.add(
            &format!("W4 {queued} queued waiters"),
            "release-to-grant p50 ms | bytes/waiter: used_memory, BLPOP client, module heap",
            format!(
                "{:.3} | {:.0}, {:.0}, {:.0}",
                percentile(&sorted, 0.5),
                per_waiter,
                per_native,
                heap_per_waiter
            ),
            String::new(),
        );
        common::wait_until("natives gone", || server.blocked_clients() == 0);
        c = server.conn();
    }
}

/// Pipelined acquires of distinct random keys (`None`: PINGs); returns operations/s.
fn fresh_acquires(server: &Server, shas: &Shas, im: Option<Impl>, prefix: &str) -> f64 {
    pipelined(server, |rng, buf| {
        for _ in 0..PIPELINE {
            match im {
                None => encode(buf, &v(&["PING"])),
                Some(im) => {
                    let key = format!(
                        "{prefix}:{}:{}",
                        rng.next() % 1_000_000_000,
                        rng.next() % 1000
                    );
                    encode(buf, &acquire_args(im, shas, &key, "owner-1", false));
                }
            }
        }
        (PIPELINE, PIPELINE as u64)
    })
}

/// W5: how close RLOCK.ACQUIRE gets to the cheapest commands.
fn w5(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    let mut rates: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for _ in 0..ROUNDS {
        for (name, im) in [
            ("PING", None),
            ("SET NX PX", Some(Impl::SetNx)),
            ("RLOCK.ACQUIRE", Some(Impl::Rlock)),
        ] {
            reset(&mut c);
            let rate = fresh_acquires(server, shas, im, "w5");
            rates.entry(name).or_default().push(rate);
        }
    }
    for (name, v) in &rates {
        table.raw(&format!("w5.ops_per_s.{name}"), v.clone());
        table.add(
            "W5 physical limit",
            &format!("{name} ops/s"),
            format!("{:.0}", median(v.clone())),
            String::new(),
        );
    }
    table.add(
        "W5 physical limit",
        "RLOCK.ACQUIRE / SET NX PX ops",
        format!(
            "{:.2}x",
            median(rates["RLOCK.ACQUIRE"].clone()) / median(rates["SET NX PX"].clone())
        ),
        String::new(),
    );
}

fn main() {
    let started = Instant::now();
    let server = Server::builder()
        .arg("maxclients", "19000")
        .arg("appendonly", "no")
        .start();
    let mut c = server.conn();
    let shas = load_scripts(&mut c);
    let version = c
        .q("INFO server")
        .text()
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:").map(str::to_string))
        .unwrap_or_default();
    let mut table = Table {
        rows: vec![],
        report: Report::new(),
    };
    table.report.insert(
        "redis_version".into(),
        serde_like::Json::Text(version.trim().to_string()),
    );
    let only = std::env::args().nth(1).filter(|a| a.starts_with('w'));
    let wants = |w: &str| only.as_deref().is_none_or(|o| o == w);
    // W1 and W5 first: the first blocking WAIT (in W2) subscribes the module to keyspace
    // events, which then cost every write, SET NX PX included. The README states that cost.
    if wants("w1") {
        w1(&server, &shas, &mut table);
    }
    if wants("w5") {
        w5(&server, &shas, &mut table);
    }
    if wants("w2") {
        w2(&server, &shas, &mut table);
    }
    if wants("w3") {
        w3(&server, &shas, &mut table);
    }
    if wants("w4") {
        w4(&server, &mut table);
    }
    let widths = [0, 1, 2, 3].map(|i| {
        table
            .rows
            .iter()
            .map(|r| r[i].chars().count())
            .max()
            .unwrap_or(0)
    });
    println!("\nrlock benchmark — Redis {} — {} connections × pipeline {} where pipelined; medians of {} interleaved runs of {:?}\n", version.trim(), CONNECTIONS, PIPELINE, ROUNDS, RUN);
    let mut last = String::new();
    for r in &table.rows {
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
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench.json");
    std::fs::write(&path, serde_like::write(&table.report)).expect("write bench.json");
    println!(
        "\nraw figures: {} (took {:.0} s)",
        path.display(),
        started.elapsed().as_secs_f64()
    );
}
