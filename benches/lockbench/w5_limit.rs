//! W5: how close RLOCK.ACQUIRE gets to the cheapest commands.

use crate::common::Server;
use crate::driver::{fresh_acquires, median, no_options, pings, reset, Impl, Shas, Table, ROUNDS};
use std::collections::BTreeMap;

const WORKLOAD: &str = "W5 physical limit";

pub fn run(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    let mut rates: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for _ in 0..ROUNDS {
        for (name, im) in [
            ("PING", None),
            ("SET NX PX", Some(Impl::SetNx)),
            ("RLOCK.ACQUIRE", Some(Impl::Rlock)),
        ] {
            reset(&mut c);
            let rate = match im {
                None => pings(server),
                Some(im) => fresh_acquires(server, shas, im, "w5", no_options),
            };
            rates.entry(name).or_default().push(rate);
        }
    }
    for (name, v) in &rates {
        table.raw(&format!("w5.ops_per_s.{name}"), v.clone());
        table.add(
            WORKLOAD,
            &format!("{name} ops/s"),
            format!("{:.0}", median(v.clone())),
            String::new(),
        );
    }
    table.add(
        WORKLOAD,
        "RLOCK.ACQUIRE / SET NX PX ops",
        format!(
            "{:.2}x",
            median(rates["RLOCK.ACQUIRE"].clone()) / median(rates["SET NX PX"].clone())
        ),
        String::new(),
    );
}
