//! W14: what confirmation by the replicas costs (docs/availability.md). A primary with one
//! replica of its own (the shared server stays replica-free for the other workloads); 50
//! connections each loop over uncontended acquire+release pairs on random keys, one round
//! trip per call as a client makes them (it releases only after its acquire answered):
//! RLOCK.ACQUIRE / RLOCK.RELEASE alone, each pipelined with `WAIT 1 1000` (what every helper
//! does by default where a replica is connected), and Redisson's scripts each followed by
//! `WAIT 1 1000` in the same pipeline (what Redisson does with `slavesSyncTimeout`).
//! Five interleaved rounds, after one unrecorded pass of each side.

use crate::common::{Conn, Server};
use crate::driver::{
    acquire_args, encode, read_replies, release_args, strings, Impl, Rng, Rounds, Shas, Table,
    CONNECTIONS, ROUNDS, RUN,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

const WORKLOAD: &str = "W14 confirmed by a replica (50 conns, a round trip per call)";
const SIDES: [(&str, Impl, bool); 4] = [
    ("rlock", Impl::Rlock, false),
    ("rlock+wait", Impl::Rlock, true),
    ("redisson", Impl::Redisson, false),
    ("redisson+wait", Impl::Redisson, true),
];

pub fn run(_shared: &Server, _shas: &Shas, table: &mut Table) {
    let primary = Server::builder()
        .arg("appendonly", "no")
        .arg("maxclients", "19000")
        .master();
    let _replica = Server::builder().replica_of(&primary);
    let shas = crate::driver::load_scripts(&mut primary.conn());
    // One unrecorded pass: the replica's first acknowledgements and the scripts' first calls.
    for (_, im, wait) in SIDES {
        pairs(&primary, &shas, im, wait);
    }
    let mut rounds = Rounds::new("w14");
    for _ in 0..ROUNDS {
        for (side, im, wait) in SIDES {
            rounds.push(side, &[("pairs_per_s", pairs(&primary, &shas, im, wait))]);
        }
    }
    for (side, _, _) in SIDES {
        table.add(
            WORKLOAD,
            &format!("{side} acquire+release pairs/s"),
            rounds.show(side, "pairs_per_s", 0),
            String::new(),
        );
    }
    for (metric, a, b) in [
        ("rlock+wait ÷ rlock pairs/s", "rlock+wait", "rlock"),
        (
            "rlock+wait ÷ redisson+wait pairs/s",
            "rlock+wait",
            "redisson+wait",
        ),
    ] {
        let ratio = rounds.ratio("pairs_per_s", a, b);
        table.add(WORKLOAD, metric, ratio, String::new());
    }
    rounds.finish(table);
}

/// Pairs/s of `im` over `CONNECTIONS` connections for `RUN`, each call in its own round trip,
/// pipelined with `WAIT 1 1000` when `wait`.
fn pairs(server: &Server, shas: &Shas, im: Impl, wait: bool) -> f64 {
    let done = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..CONNECTIONS {
            let done = &done;
            s.spawn(move || {
                let mut c = server.conn();
                let mut rng = Rng::for_thread(t);
                let mut buf = Vec::new();
                while start.elapsed() < RUN {
                    let key = format!("w14:{}", rng.next() % 1_000_000_000);
                    call(
                        &mut c,
                        &mut buf,
                        acquire_args(im, shas, &key, "owner-1", false),
                        wait,
                    );
                    call(
                        &mut c,
                        &mut buf,
                        release_args(im, shas, &key, "owner-1"),
                        wait,
                    );
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

/// One round trip: `args`, and `WAIT 1 1000` after it when `wait`.
fn call(c: &mut Conn, buf: &mut Vec<u8>, args: Vec<String>, wait: bool) {
    buf.clear();
    encode(buf, &args);
    if wait {
        encode(buf, &strings(&["WAIT", "1", "1000"]));
    }
    c.send_raw(buf).expect("send");
    read_replies(c, 1 + wait as usize);
}
