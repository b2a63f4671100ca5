//! W13: 64 clients each take random pairs of 8 keys, hold them, release, again. rlock takes
//! each pair in one `RLOCK.ACQUIREALL ... WAIT 0`; Redisson's `RedissonMultiLock` takes the
//! keys one by one with its lock script (waiting by pub/sub for each), and on a failed wait
//! releases what it took and starts over, with a wait time drawn between 1,500 ms per key and
//! the lease (its `lock()` loop). As Redisson users write it the pair comes in any order;
//! `redisson-sorted` is the careful user's variant, keys always in one global order, which no
//! longer waits on a reverse pair but still takes the keys one at a time.

use crate::common::{redisson, Conn, Server};
use crate::driver::{
    acquire_args, clients_for_run, percentile, redisson_lock, release_args, reset, strings,
    total_calls, Impl, Rng, Rounds, Shas, Table, Waits, ROUNDS,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const WORKLOAD: &str = "W13 random pairs of 8 keys, 64 clients";
const CLIENTS: usize = 64;
const KEYS: usize = 8;
const LEASE_MS: u64 = 30_000;
const SIDES: [&str; 3] = ["rlock", "redisson", "redisson-sorted"];

pub fn run(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    let mut rounds = Rounds::new("w13");
    for round in 0..ROUNDS {
        for side in SIDES {
            rounds.push(side, &one_run(server, shas, &mut c, side, round));
        }
    }
    for side in SIDES {
        table.add(
            WORKLOAD,
            &format!("{side} pairs/s; p50 ms; p99 ms; cmds/pair; clients served"),
            rounds.shows(
                side,
                &[
                    ("pairs_per_s", 0),
                    ("p50_ms", 2),
                    ("p99_ms", 1),
                    ("commands_per_pair", 1),
                    ("clients_served", 0),
                ],
            ),
            format!(
                "{} of {CLIENTS} waits unfinished at the round's end (median)",
                rounds.mid(side, "unfinished_waits")
            ),
        );
    }
    for other in ["redisson", "redisson-sorted"] {
        let ratio = rounds.ratio("pairs_per_s", "rlock", other);
        table.add(
            WORKLOAD,
            &format!("rlock / {other} pairs/s"),
            ratio,
            String::new(),
        );
    }
    rounds.finish(table);
}

fn one_run(
    server: &Server,
    shas: &Shas,
    c: &mut Conn,
    side: &str,
    round: usize,
) -> [(&'static str, f64); 7] {
    reset(c);
    let prefix = format!("pair:{side}:{round}");
    let started = Instant::now();
    let clients = clients_for_run(CLIENTS, |id, stop| {
        client(server, shas, side, &prefix, id, stop)
    });
    let elapsed = started.elapsed().as_secs_f64();
    let waits = Waits::of(clients);
    let (lat, unfinished, served, pairs) = (
        &waits.sorted,
        waits.unfinished,
        waits.served,
        waits.granted(),
    );
    [
        ("pairs_per_s", pairs / elapsed),
        ("p50_ms", percentile(lat, 0.5)),
        ("p99_ms", percentile(lat, 0.99)),
        ("commands_per_pair", total_calls(c) as f64 / pairs.max(1.0)),
        ("pairs", pairs),
        ("unfinished_waits", unfinished as f64),
        // Of the 64, how many got at least one pair in the round: fairness at a glance.
        ("clients_served", served as f64),
    ]
}

/// One client: loops take a random pair -> release until `stop`. Returns its latencies (ms)
/// and how long its last wait had lasted when it gave up at `stop`, if it did.
fn client(
    server: &Server,
    shas: &Shas,
    side: &str,
    prefix: &str,
    id: usize,
    stop: &AtomicBool,
) -> (Vec<f64>, Option<f64>) {
    let owner = format!("client-{id}");
    let mut c = server.conn();
    let mut sub: Option<Conn> = None;
    let mut rng = Rng::for_thread(id);
    let mut mine = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let i = (rng.next() % KEYS as u64) as usize;
        let j = (i + 1 + (rng.next() % (KEYS as u64 - 1)) as usize) % KEYS;
        let (i, j) = match side {
            "redisson-sorted" => (i.min(j), i.max(j)),
            _ => (i, j),
        };
        let keys = [format!("{prefix}:{i}"), format!("{prefix}:{j}")];
        let started = Instant::now();
        let acquired = match side {
            "rlock" => {
                let lease = LEASE_MS.to_string();
                let args = [
                    "RLOCK.ACQUIREALL",
                    "2",
                    &keys[0],
                    &keys[1],
                    &owner,
                    "PX",
                    &lease,
                    "WAIT",
                    "0",
                ];
                c.cmd(&args);
                true
            }
            _ => multilock(
                server, shas, &mut c, &mut sub, &keys, &owner, &mut rng, stop,
            ),
        };
        let waited = started.elapsed().as_secs_f64() * 1000.0;
        if !acquired {
            return (mine, Some(waited));
        }
        mine.push(waited);
        match side {
            "rlock" => {
                c.cmd(&strings(&[
                    "RLOCK.RELEASEALL",
                    "2",
                    &keys[0],
                    &keys[1],
                    &owner,
                ]));
            }
            _ => {
                for key in &keys {
                    c.cmd(&release_args(Impl::Redisson, shas, key, &owner));
                }
            }
        }
    }
    (mine, None)
}

/// `RedissonMultiLock.lock(leaseTime)`: `tryLock(waitTime, leaseTime)` with a wait time drawn
/// from [1,500 ms per key, lease), until it succeeds; each try takes the keys in order, each
/// with `RLock.tryLock(remaining wait)`, and after a failed one releases what it took and
/// starts over while time remains. Returns whether it acquired before `stop`.
#[allow(clippy::too_many_arguments)]
fn multilock(
    server: &Server,
    shas: &Shas,
    c: &mut Conn,
    sub: &mut Option<Conn>,
    keys: &[String],
    owner: &str,
    rng: &mut Rng,
    stop: &AtomicBool,
) -> bool {
    let base_ms = 1_500 * keys.len() as u64;
    while !stop.load(Ordering::Relaxed) {
        let wait_ms = base_ms + rng.next() % (LEASE_MS - base_ms);
        let deadline = Instant::now() + Duration::from_millis(wait_ms);
        let mut taken: Vec<&String> = Vec::new();
        let mut next = 0;
        while next < keys.len() {
            let key = &keys[next];
            let acquire = acquire_args(Impl::Redisson, shas, key, owner, true);
            let channel = redisson::channel(key);
            if redisson_lock(server, c, sub, &acquire, &channel, stop, Some(deadline)) {
                taken.push(key);
                next += 1;
                continue;
            }
            for key in taken.drain(..) {
                c.cmd(&release_args(Impl::Redisson, shas, key, owner));
            }
            if stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
                break;
            }
            next = 0;
        }
        if next == keys.len() {
            return true;
        }
    }
    false
}
