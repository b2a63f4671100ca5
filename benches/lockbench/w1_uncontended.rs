//! W1: uncontended acquire+release pairs on random keys (pairs/s and server µs per pair), and
//! server µs per fresh acquire; five interleaved rounds of every side.

use crate::common::Server;
use crate::driver::{
    fresh_acquire_usec, no_options, pairs, reset, Impl, Rounds, Shas, Table, ROUNDS,
};

const WORKLOAD: &str = "W1 uncontended";
/// SET NX with a plain DEL, the unsafe release people still write: the floor of a pair.
const SET_NX_DEL: &str = "set-nx+del";
const IMPLS: [Impl; 3] = [Impl::Rlock, Impl::Redisson, Impl::SetNx];

pub fn run(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    let mut rounds = Rounds::new("w1");
    for _ in 0..ROUNDS {
        for im in IMPLS.into_iter().map(Some).chain([None]) {
            let side = im.map_or(SET_NX_DEL, Impl::name);
            reset(&mut c);
            let run = pairs(server, &mut c, shas, im, "w1");
            rounds.push(
                side,
                &[
                    ("pairs_per_s", run.per_s),
                    ("pair_usec", run.pair_usec),
                    ("acquire_usec_in_pair", run.acquire_usec),
                    ("release_usec", run.release_usec),
                ],
            );
            // Server time of a fresh acquire alone: acquires only, on distinct keys.
            if let Some(im) = im {
                let us = fresh_acquire_usec(server, &mut c, shas, im, "w1a", no_options);
                rounds.push(side, &[("acquire_usec", us)]);
            }
        }
    }
    for side in ["rlock", "redisson", "set-nx", SET_NX_DEL] {
        table.add(
            WORKLOAD,
            &format!("{side} acquire+release pairs/s; server µs per pair"),
            rounds.shows(side, &[("pairs_per_s", 0), ("pair_usec", 2)]),
            String::new(),
        );
    }
    for (metric, figure, b, goal) in [
        (
            "rlock / (set-nx+del) pairs/s",
            "pairs_per_s",
            SET_NX_DEL,
            "goal >= 0.9x",
        ),
        (
            "rlock / redisson pairs/s",
            "pairs_per_s",
            "redisson",
            "goal >= 1.8x",
        ),
        (
            "rlock / (set-nx+del) server µs per pair",
            "pair_usec",
            SET_NX_DEL,
            "goal <= 1.3x",
        ),
    ] {
        let ratio = rounds.ratio(figure, "rlock", b);
        table.add(WORKLOAD, metric, ratio, goal.into());
    }
    for im in IMPLS {
        table.add(
            WORKLOAD,
            &format!("{} server µs per fresh acquire", im.name()),
            rounds.show(im.name(), "acquire_usec", 2),
            String::new(),
        );
    }
    // Redisson's two scripts are both EVALSHA to INFO: only their pair has a cost of its own.
    for (side, acquire, release) in [
        ("rlock", "RLOCK.ACQUIRE", "RLOCK.RELEASE"),
        ("set-nx", "SET NX PX", "CAD script"),
        (SET_NX_DEL, "SET NX PX", "DEL"),
    ] {
        table.add(
            WORKLOAD,
            &format!("{side} in pairs: server µs per {acquire}; per {release}"),
            rounds.shows(side, &[("acquire_usec_in_pair", 2), ("release_usec", 2)]),
            String::new(),
        );
    }
    let ratio = rounds.ratio("acquire_usec", "rlock", "set-nx");
    table.add(
        WORKLOAD,
        "rlock / set-nx server µs per fresh acquire",
        ratio,
        "goal <= 1.3x".into(),
    );
    rounds.finish(table);
}
