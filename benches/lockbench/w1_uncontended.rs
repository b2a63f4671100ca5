//! W1: uncontended acquire+release pairs on random keys, and server µs per fresh acquire.

use crate::common::Server;
use crate::driver::{
    acquire_args, encode, fresh_acquire_usec, median, no_options, pipelined, release_args, reset,
    Impl, Shas, Table, PIPELINE, ROUNDS,
};
use std::collections::BTreeMap;

const WORKLOAD: &str = "W1 uncontended";

pub fn run(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    let impls = [Impl::Rlock, Impl::Redisson, Impl::SetNx];
    let mut pairs: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut usec: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for _ in 0..ROUNDS {
        // `None`: SET NX with a plain DEL, the unsafe release people still write.
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
                let us = fresh_acquire_usec(server, &mut c, shas, im, "w1a", no_options);
                usec.entry(im.name()).or_default().push(us);
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
            WORKLOAD,
            &format!("{name} acquire+release pairs/s"),
            format!("{:.0}", m(name)),
            String::new(),
        );
    }
    for (metric, ratio, goal) in [
        (
            "rlock / (set-nx+del) pairs",
            m("rlock") / m("set-nx+del"),
            "goal >= 0.9x",
        ),
        (
            "rlock / redisson pairs",
            m("rlock") / m("redisson"),
            "goal >= 1.8x",
        ),
    ] {
        table.add(WORKLOAD, metric, format!("{ratio:.2}x"), goal.into());
    }
    for name in ["rlock", "redisson", "set-nx"] {
        table.add(
            WORKLOAD,
            &format!("{name} server µs per fresh acquire"),
            format!("{:.2}", u(name)),
            String::new(),
        );
    }
    table.add(
        WORKLOAD,
        "rlock / set-nx server µs",
        format!("{:.2}x", u("rlock") / u("set-nx")),
        "goal <= 1.2x".into(),
    );
}
