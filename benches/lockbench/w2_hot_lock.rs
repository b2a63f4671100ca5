//! W2: 1 to 1,024 contenders on one hot lock: acquires/s, acquire latency, and how many
//! commands each implementation spends per acquisition; five interleaved rounds per count.

use crate::common::{redisson, Conn, Server};
use crate::driver::{
    acquire_args, clients_for_run, percentile, redisson_lock, release_args, reset, total_calls,
    Impl, Rounds, Shas, Table, Waits, ROUNDS, RUN,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub const CONTENDERS: [usize; 6] = [1, 4, 16, 64, 256, 1024];
const IMPLS: [Impl; 3] = [Impl::Rlock, Impl::Redisson, Impl::SetNx];
/// Below this many acquires in a round, its p99 is about its slowest acquire: the row says so.
const FEW_ACQUIRES: f64 = 100.0;

pub fn run(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    for contenders in CONTENDERS {
        let plural = if contenders == 1 { "" } else { "s" };
        let workload = format!("W2 hot lock, {contenders} contender{plural}");
        let mut rounds = Rounds::new(&format!("w2.{contenders}"));
        for round in 0..ROUNDS {
            for im in IMPLS {
                let run = one_run(server, shas, &mut c, im, contenders, round);
                rounds.push(im.name(), &run);
            }
        }
        for im in IMPLS {
            let name = im.name();
            table.add(
                &workload,
                &format!("{name} acquires/s; p50 ms; p99 ms; cmds/acquire"),
                rounds.shows(
                    name,
                    &[
                        ("acquires_per_s", 0),
                        ("p50_ms", 2),
                        ("p99_ms", 1),
                        ("commands_per_acquire", 1),
                    ],
                ),
                capped_note(&rounds, name, contenders),
            );
        }
        for other in ["redisson", "set-nx"] {
            let ratio = rounds.ratio("acquires_per_s", "rlock", other);
            let goal = if contenders == 64 && other == "redisson" {
                "goal >= 5x"
            } else {
                ""
            };
            table.add(
                &workload,
                &format!("rlock / {other} acquires/s"),
                ratio,
                goal.into(),
            );
        }
        rounds.finish(table);
    }
}

/// Says when a side's rounds are too short for its figures: few acquires (the p99 is about the
/// slowest), or waits still unfinished when the round ended. Those count in the latencies with
/// their time so far (leaving them out would keep the longest waits out of the p99), so a
/// percentile that falls among them is only a lower bound, about the round's length.
fn capped_note(rounds: &Rounds, side: &str, contenders: usize) -> String {
    let acquires = rounds.mid(side, "acquires");
    let unfinished = rounds.mid(side, "unfinished_waits");
    let unfinished_share = unfinished / (acquires + unfinished);
    let mut note = Vec::new();
    if acquires < FEW_ACQUIRES {
        note.push(format!(
            "rounds capped at {RUN:?}: {acquires:.0} acquires a round"
        ));
    }
    if unfinished > 0.0 {
        let bound = match unfinished_share {
            s if s > 0.5 => "; p50 and p99 are lower bounds",
            s if s > 0.01 => "; p99 is a lower bound",
            _ => "",
        };
        note.push(format!(
            "{unfinished:.0} of {contenders} waits unfinished at the round's end{bound}"
        ));
    }
    note.join("; ")
}

/// One round of one side: `contenders` clients loop acquire -> release on a key of its own for
/// `RUN`. Returns the round's figures.
fn one_run(
    server: &Server,
    shas: &Shas,
    c: &mut Conn,
    im: Impl,
    contenders: usize,
    round: usize,
) -> [(&'static str, f64); 7] {
    reset(c);
    let key = format!("hot:{contenders}:{}:{round}", im.name());
    let started = Instant::now();
    let clients = clients_for_run(contenders, |id, stop| {
        contender(server, shas, im, &key, id, stop)
    });
    let elapsed = started.elapsed().as_secs_f64();
    let waits = Waits::of(clients);
    let (lat, unfinished, acquired) = (&waits.sorted, waits.unfinished, waits.granted());
    [
        ("acquires_per_s", acquired / elapsed),
        ("p50_ms", percentile(lat, 0.5)),
        ("p99_ms", percentile(lat, 0.99)),
        ("max_ms", percentile(lat, 1.0)),
        (
            "commands_per_acquire",
            total_calls(c) as f64 / acquired.max(1.0),
        ),
        ("acquires", acquired),
        ("unfinished_waits", unfinished as f64),
    ]
}

/// One contender: loops acquire (waiting) -> release on `key` until `stop`, the way each
/// implementation's client library waits. Returns its acquire latencies (ms) and how long its
/// last wait had lasted when it gave up at `stop`, if it did.
fn contender(
    server: &Server,
    shas: &Shas,
    im: Impl,
    key: &str,
    id: usize,
    stop: &AtomicBool,
) -> (Vec<f64>, Option<f64>) {
    let owner = format!("contender-{id}");
    let mut c = server.conn();
    let mut sub: Option<Conn> = None;
    let mut mine = Vec::new();
    let release = release_args(im, shas, key, &owner);
    let acquire = acquire_args(im, shas, key, &owner, true);
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let acquired = match im {
            // Blocks until granted: after `stop` the queue drains by handoffs.
            Impl::Rlock => {
                c.cmd(&acquire);
                true
            }
            Impl::Redisson => {
                let channel = redisson::channel(key);
                redisson_lock(server, &mut c, &mut sub, &acquire, &channel, stop, None)
            }
            // Poll with a short fixed back-off: the usual single-instance client loop.
            Impl::SetNx => loop {
                if !c.cmd(&acquire).is_nil() {
                    break true;
                }
                if stop.load(Ordering::Relaxed) {
                    break false;
                }
                std::thread::sleep(Duration::from_millis(5));
            },
        };
        let waited = started.elapsed().as_secs_f64() * 1000.0;
        if !acquired {
            return (mine, Some(waited));
        }
        mine.push(waited);
        c.cmd(&release);
    }
    (mine, None)
}
