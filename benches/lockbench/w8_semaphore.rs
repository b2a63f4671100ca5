//! W8: the semaphore. RSEM against Redisson's RSemaphore as its `acquire()` runs it (the
//! TRY_ACQUIRE script through EVALSHA, waiting on `redisson_sc:{s}` between tries, releasing
//! with its INCRBY + PUBLISH script): `CLIENTS` blocking clients share `PERMITS` permits, each
//! taking one, working briefly and giving it back.

use crate::common::redisson::semaphore;
use crate::common::{Conn, Server, Value};
use crate::driver::{
    clients_for_run, commandstats, evalsha, percentile, redisson_wait, reset, spread, total_calls,
    Impl, Rounds, Shas, Table, ROUNDS,
};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// RSEM first in each round: its first blocking WAIT subscribes the module to keyspace events,
/// which then cost both sides' writes alike.
const SIDES: [Impl; 2] = [Impl::Rlock, Impl::Redisson];
const CLIENTS: usize = 64;
const PERMITS: usize = 8;
const LEASE: &str = "10000";
/// Client-side work while holding: a sleep, so the clients leave the two cores to the server.
const WORK: Duration = Duration::from_micros(200);
/// RSEM's WAIT. Redisson's `acquire()` waits without end; here it waits this long for a
/// message before trying again, a bound only: every release publishes.
const WAIT: Duration = Duration::from_secs(5);
/// The commands a client sends; INFO commandstats also counts those that Redisson's scripts
/// and RSEM (through `RedisModule_Call`) run on the counter.
const SENT: [&str; 5] = [
    "rsem.acquire",
    "rsem.release",
    "evalsha",
    "subscribe",
    "unsubscribe",
];

/// Redisson's semaphore scripts, loaded for EVALSHA.
struct SemShas {
    try_acquire: String,
    release: String,
}

/// One client of one side on the semaphore `key`, with Redisson's pub/sub connection once it
/// waited.
struct Client<'a> {
    server: &'a Server,
    shas: &'a SemShas,
    im: Impl,
    key: &'a str,
    owner: String,
    c: Conn,
    sub: Option<Conn>,
    channel: String,
}

impl Client<'_> {
    /// Takes one permit, waiting up to `WAIT` (RSEM) or until `stop` (Redisson); whether it
    /// got one.
    fn acquire(&mut self, stop: &AtomicBool) -> bool {
        let key = self.key;
        if self.im == Impl::Rlock {
            let wait = WAIT.as_millis().to_string();
            let args = ["RSEM.ACQUIRE", key, &self.owner, "PX", LEASE, "WAIT", &wait];
            return match self.c.cmd(&args) {
                Value::Int(_) => true,
                Value::Nil => false,
                other => panic!("{args:?}: {other:?}"),
            };
        }
        let try_acquire = evalsha(&self.shas.try_acquire, &[key], &["1"]);
        let (c, sub) = (&mut self.c, &mut self.sub);
        redisson_wait(self.server, c, sub, &self.channel, stop, None, |c| {
            (c.cmd(&try_acquire).int() == 0).then_some(WAIT)
        })
    }

    fn release(&mut self) {
        let key = self.key;
        if self.im == Impl::Rlock {
            // The permits the owner still holds: it held exactly one.
            let reply = self.c.cmd(&["RSEM.RELEASE", key, &self.owner]);
            assert_eq!(reply, Value::Int(0), "RSEM.RELEASE {key} {}", self.owner);
        } else {
            let args = evalsha(&self.shas.release, &[key, &self.channel], &["1", "publish"]);
            if let Value::Error(e) = self.c.cmd(&args) {
                panic!("Redisson release of {key}: {e}");
            }
        }
    }
}

/// One run of one side.
struct Run {
    acquires_per_s: f64,
    /// Acquire latencies, sorted.
    latencies_ms: Vec<f64>,
    timeouts: u64,
    /// Every command the server ran, those run inside scripts and the module included.
    commands_per_acquire: f64,
    /// Only those the clients sent.
    sent_per_acquire: f64,
    /// The most clients seen holding at once, which the permits bound.
    most_holders: usize,
}

pub fn run(server: &Server, _shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    let mut load = |s: &str| c.cmd(&["SCRIPT", "LOAD", s]).text();
    let shas = SemShas {
        try_acquire: load(semaphore::TRY_ACQUIRE),
        release: load(semaphore::RELEASE),
    };
    let workload = format!("W8 semaphore, {CLIENTS} clients, {PERMITS} permits");
    let mut rounds = Rounds::new("w8");
    for round in 0..ROUNDS {
        for im in SIDES {
            let run = one_run(server, &shas, &mut c, im, round);
            let lat = &run.latencies_ms;
            rounds.push(
                im.name(),
                &[
                    ("acquires_per_s", run.acquires_per_s),
                    ("p50_ms", percentile(lat, 0.5)),
                    ("p99_ms", percentile(lat, 0.99)),
                    ("timeouts", run.timeouts as f64),
                    ("commands_per_acquire", run.commands_per_acquire),
                    ("sent_per_acquire", run.sent_per_acquire),
                    ("most_holders", run.most_holders as f64),
                ],
            );
        }
    }
    reset(&mut c);
    for im in SIDES {
        let name = im.name();
        let timeouts: f64 = rounds.get(name, "timeouts").iter().sum();
        let most = spread(rounds.get(name, "most_holders")).2;
        table.add(
            &workload,
            &format!("{name} acquires/s; p50 ms; p99 ms"),
            rounds.shows(name, &[("acquires_per_s", 0), ("p50_ms", 2), ("p99_ms", 1)]),
            format!("{timeouts:.0} waits timed out; at most {most:.0} holders at once"),
        );
        table.add(
            &workload,
            &format!("{name} cmds/acquire: run by the server; sent"),
            rounds.shows(
                name,
                &[("commands_per_acquire", 1), ("sent_per_acquire", 1)],
            ),
            String::new(),
        );
    }
    rounds.finish_against_redisson(table, &workload, format!("work {WORK:?} per hold"));
}

/// `CLIENTS` clients loop acquire -> work -> release for `RUN` on a semaphore of its own.
fn one_run(server: &Server, shas: &SemShas, c: &mut Conn, im: Impl, round: usize) -> Run {
    reset(c);
    // A key per side and run: no permit or waiter of an earlier run can reach this one.
    let key = format!("w8:{}:{round}", im.name());
    let set = match im {
        Impl::Rlock => c.cmd(&["RSEM.SETPERMITS", &key, &PERMITS.to_string()]),
        _ => c.cmd(&["SET", &key, &PERMITS.to_string()]),
    };
    assert!(matches!(set, Value::Int(1) | Value::Simple(_)), "{set:?}");
    c.q("CONFIG RESETSTAT");
    let (holders, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let started = Instant::now();
    let clients = clients_for_run(CLIENTS, |id, stop| {
        let client = Client {
            server,
            shas,
            im,
            key: &key,
            owner: format!("client-{id}"),
            c: server.conn(),
            sub: None,
            channel: semaphore::channel(&key),
        };
        worker(client, stop, &holders, &most)
    });
    let elapsed = started.elapsed().as_secs_f64();
    let (mut latencies_ms, mut timeouts) = (Vec::new(), 0);
    for (lat, t) in clients {
        latencies_ms.extend(lat);
        timeouts += t;
    }
    latencies_ms.sort_by(|a, b| a.total_cmp(b));
    let acquired = latencies_ms.len() as f64;
    let commands_per_acquire = total_calls(c) as f64 / acquired.max(1.0);
    let sent: u64 = commandstats(c)
        .iter()
        .filter(|(name, _)| SENT.contains(&name.as_str()))
        .map(|(_, (calls, _))| calls)
        .sum();
    let most_holders = most.into_inner();
    assert!(
        most_holders <= PERMITS,
        "{most_holders} clients held at once"
    );
    // Every permit came back: none lost or made up on the way.
    let left = c.cmd(&["GET", &key]);
    assert_eq!(left.int(), PERMITS as i64, "{} permits left", im.name());
    Run {
        acquires_per_s: acquired / elapsed,
        latencies_ms,
        timeouts,
        commands_per_acquire,
        sent_per_acquire: sent as f64 / acquired.max(1.0),
        most_holders,
    }
}

/// Loops acquire -> work -> release until `stop`; returns the acquire latencies (ms) and the
/// waits that timed out. `holders` counts the clients between a grant's reply and their
/// release, a subset of the server's holders, so `most` may never pass `PERMITS`.
fn worker(
    mut client: Client,
    stop: &AtomicBool,
    holders: &AtomicUsize,
    most: &AtomicUsize,
) -> (Vec<f64>, u64) {
    let (mut latencies, mut timeouts) = (Vec::new(), 0);
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        if !client.acquire(stop) {
            // A Redisson waiter gives up at `stop`: that is the run ending, no timeout.
            timeouts += u64::from(!stop.load(Ordering::Relaxed));
            continue;
        }
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
        most.fetch_max(now, Ordering::Relaxed);
        std::thread::sleep(WORK);
        holders.fetch_sub(1, Ordering::SeqCst);
        client.release();
    }
    (latencies, timeouts)
}
