//! W5: how close RLOCK.ACQUIRE gets to the cheapest commands, in ops/s and server µs per call.

use crate::common::Server;
use crate::driver::{
    commandstats, fresh_acquires, no_options, pings, reset, Impl, Rounds, Shas, Table, ROUNDS,
};

const WORKLOAD: &str = "W5 physical limit";
/// (side in bench.json, the command, the implementation sending it; `None`: PING).
const SIDES: [(&str, &str, Option<Impl>); 3] = [
    ("ping", "PING", None),
    ("set-nx", "SET NX PX", Some(Impl::SetNx)),
    ("rlock", "RLOCK.ACQUIRE", Some(Impl::Rlock)),
];

pub fn run(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    let mut rounds = Rounds::new("w5");
    for _ in 0..ROUNDS {
        for (side, _, im) in SIDES {
            reset(&mut c);
            let rate = match im {
                None => pings(server),
                Some(im) => fresh_acquires(server, shas, im, "w5", no_options),
            };
            let command = im.map_or("ping", Impl::acquire_command);
            let usec = commandstats(&mut c).get(command).map_or(f64::NAN, |s| s.1);
            rounds.push(side, &[("ops_per_s", rate), ("usec_per_call", usec)]);
        }
    }
    reset(&mut c);
    for (side, command, _) in SIDES {
        table.add(
            WORKLOAD,
            &format!("{command} ops/s; server µs per call"),
            rounds.shows(side, &[("ops_per_s", 0), ("usec_per_call", 2)]),
            String::new(),
        );
    }
    for (figure, shown) in [("ops_per_s", "ops/s"), ("usec_per_call", "server µs")] {
        let ratio = rounds.ratio(figure, "rlock", "set-nx");
        table.add(
            WORKLOAD,
            &format!("RLOCK.ACQUIRE / SET NX PX {shown}"),
            ratio,
            String::new(),
        );
    }
    rounds.finish(table);
}
