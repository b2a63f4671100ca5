//! W10's memory part: `used_memory` per waiter once the clients' buffers have settled (Redis
//! trims an idle client's query buffer in serverCron only after 2 s idle, so each step waits
//! until `used_memory` stops falling, with a deadline). One server, steps taken one after the
//! other, each measured against the settled figure before it: (a) 10,000 `NOTIFY` waiters on
//! one shared RESP3 connection, each on its own held lock (and, as (a1), 10,000 more on one
//! lock); (b) 1,000 `NOTIFY` waiters with a connection each (RESP3, subscribed, one wait),
//! counted from an idle connection and split into the subscription and the wait; (c) 1,000
//! blocked `RLOCK.ACQUIRE ... WAIT 0` waiters; (d) 1,000 clients blocked in `BLPOP`. (b), (c)
//! and (d) each wait on a key of their own, as (a) does; the idle connections and held locks
//! are in the baseline.

use crate::common::{Conn, Server, Value};
use crate::driver::{encode, info_field, strings, Table};
use crate::w10_notify::{
    expect_waiting, notify_waits, subscribe_all, subscribed, BATCH, LEASE, WORKLOAD,
};
use std::time::{Duration, Instant};

/// (a): waiters on the one shared connection.
const SHARED_WAITERS: usize = 10_000;
/// (b), (c), (d): connections, one waiter each.
pub const PER_CONN_WAITERS: usize = 1_000;
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

pub fn memory(server: &Server, table: &mut Table, notify: bool, server_name: &str) {
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
        notify_waits(s, &waits, &[]);
        step(&mut probe, "shared_notify", SHARED_WAITERS, Instant::now());
        // (a1) 10,000 waiters on one lock, on the same connection.
        let one = format!("w10:k{}", SHARED_WAITERS * 10);
        let waits: Vec<(String, String)> = (0..SHARED_WAITERS)
            .map(|i| (one.clone(), format!("q{i}")))
            .collect();
        notify_waits(s, &waits, &[]);
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
