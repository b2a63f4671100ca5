//! W9: how acquire and release cost grows with the keyspace. Uncontended pairs on fresh keys
//! while 1k, 100k and 1M other locks are held, RLOCK against SET NX PX + compare-and-delete,
//! five interleaved rounds per size. The held locks are filled once, growing from size to size.

use crate::common::Server;
use crate::driver::{
    encode, pairs, read_replies, reset, strings, used_memory, Impl, Rounds, Shas, Table, ROUNDS,
};
use std::time::Instant;

const SIZES: [usize; 3] = [1_000, 100_000, 1_000_000];
const SIDES: [Impl; 2] = [Impl::Rlock, Impl::SetNx];
/// The fill's connections and pipeline depth: a million acquires in a few seconds.
const FILL_CONNECTIONS: usize = 4;
const FILL_BATCH: usize = 1_000;
/// Longer than the whole benchmark: no filled lock expires while W9 measures.
const FILL_LEASE: &str = "600000";

pub fn run(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    reset(&mut c);
    let empty = used_memory(server);
    let mut live = 0;
    for size in SIZES {
        let started = Instant::now();
        fill(server, live..size);
        let fill_s = started.elapsed().as_secs_f64();
        let added = size - live;
        live = size;
        let bytes_per_lock = (used_memory(server) - empty) / size as f64;
        table.num(&format!("w9.{size}.fill_s"), fill_s);
        table.num(&format!("w9.{size}.used_memory_per_lock"), bytes_per_lock);
        let mut rounds = Rounds::new(&format!("w9.{size}"));
        for _ in 0..ROUNDS {
            for im in SIDES {
                let run = pairs(server, &mut c, shas, Some(im), "w9");
                rounds.push(
                    im.name(),
                    &[
                        ("pairs_per_s", run.per_s),
                        ("pair_usec", run.pair_usec),
                        ("acquire_usec", run.acquire_usec),
                        ("release_usec", run.release_usec),
                    ],
                );
            }
        }
        // The pairs release what they take: the keyspace kept its size.
        let keys = c.q("DBSIZE").int() as usize;
        assert!(
            keys.abs_diff(size) < 1_000,
            "{keys} keys live, {size} filled"
        );
        let workload = format!("W9 {size} locks held");
        let fill_note = format!(
            "fill of {added} more: {fill_s:.1} s; {bytes_per_lock:.0} B used_memory per held lock"
        );
        for (im, acquire, release, note) in [
            (Impl::Rlock, "RLOCK.ACQUIRE", "RLOCK.RELEASE", fill_note),
            (Impl::SetNx, "SET NX PX", "CAD script", String::new()),
        ] {
            let name = im.name();
            table.add(
                &workload,
                &format!("{name} pairs/s; server µs per {acquire}; per {release}"),
                rounds.shows(
                    name,
                    &[("pairs_per_s", 0), ("acquire_usec", 2), ("release_usec", 2)],
                ),
                note,
            );
        }
        let ratio = rounds.ratio("pair_usec", "rlock", "set-nx");
        table.add(
            &workload,
            "rlock / set-nx server µs per pair",
            ratio,
            String::new(),
        );
        rounds.finish(table);
    }
    reset(&mut c);
}

/// Acquires `k:<i>` for every `i` in `range`, pipelined over `FILL_CONNECTIONS` connections.
fn fill(server: &Server, range: std::ops::Range<usize>) {
    std::thread::scope(|s| {
        for t in 0..FILL_CONNECTIONS {
            let range = range.clone();
            s.spawn(move || {
                let mut c = server.conn();
                let mine: Vec<usize> = range.skip(t).step_by(FILL_CONNECTIONS).collect();
                let mut buf = Vec::new();
                for batch in mine.chunks(FILL_BATCH) {
                    buf.clear();
                    for i in batch {
                        let key = format!("k:{i}");
                        let args = ["RLOCK.ACQUIRE", &key, "o", "PX", FILL_LEASE];
                        encode(&mut buf, &strings(&args));
                    }
                    c.send_raw(&buf).expect("send");
                    read_replies(&mut c, batch.len());
                }
            });
        }
    });
}
