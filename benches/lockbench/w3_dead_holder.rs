//! W3: a holder that never releases; delay from its lease end to the waiter's grant, five
//! interleaved rounds of `TRIALS` holders per side.

use crate::common::{Conn, Server};
use crate::driver::{acquire_args, percentile, Impl, Rounds, Shas, Table, ROUNDS};
use std::time::{Duration, SystemTime};

/// Dead holders per side and round: p99 of 10 is the slowest of them.
const TRIALS: usize = 10;
const LEASE_MS: u64 = 100;
const IMPLS: [Impl; 3] = [Impl::Rlock, Impl::Redisson, Impl::SetNx];

pub fn run(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    let mut rounds = Rounds::new("w3");
    for round in 0..ROUNDS {
        for im in IMPLS {
            let mut delays: Vec<f64> = (0..TRIALS)
                .map(|trial| delay_after_lease_end(server, &mut c, shas, im, round, trial))
                .collect();
            delays.sort_by(|a, b| a.total_cmp(b));
            rounds.push(
                im.name(),
                &[
                    ("p50_ms", percentile(&delays, 0.5)),
                    ("p99_ms", percentile(&delays, 0.99)),
                ],
            );
        }
    }
    for im in IMPLS {
        table.add(
            "W3 dead holder",
            &format!(
                "{} grant after lease end p50; p99 ms ({TRIALS} holders a round)",
                im.name()
            ),
            rounds.shows(im.name(), &[("p50_ms", 1), ("p99_ms", 1)]),
            if im == Impl::Rlock {
                "goal p99 < 5 ms".into()
            } else {
                String::new()
            },
        );
    }
    rounds.finish(table);
}

/// A holder takes a `LEASE_MS` lease and never releases; returns how long after the lease's
/// end a waiter got the lock.
fn delay_after_lease_end(
    server: &Server,
    c: &mut Conn,
    shas: &Shas,
    im: Impl,
    round: usize,
    trial: usize,
) -> f64 {
    let key = format!("dead:{}:{round}:{trial}", im.name());
    let mut hold = acquire_args(im, shas, &key, "dead-holder", false);
    let lease_arg = match im {
        Impl::Rlock | Impl::Redisson => 4,
        Impl::SetNx => 5,
    };
    hold[lease_arg] = LEASE_MS.to_string();
    c.cmd(&hold);
    // PEXPIRETIME and `wall_ms` share the clock: client and server on one machine.
    let lease_end = c.cmd(&["PEXPIRETIME", &key]).int() as f64;
    wait_for_grant(server, shas, im, &key) - lease_end
}

/// Waits for `key` as `im`'s client would; returns the wall-clock ms of the grant.
fn wait_for_grant(server: &Server, shas: &Shas, im: Impl, key: &str) -> f64 {
    let mut w = server.conn();
    let acquire = acquire_args(im, shas, key, "waiter", true);
    match im {
        Impl::Rlock => {
            w.cmd(&acquire);
        }
        _ => {
            // Redisson and SET NX clients both sleep on a timer: Redisson on the returned
            // PTTL (plus its unlock channel), SET NX on its poll interval.
            loop {
                let reply = w.cmd(&acquire);
                let granted = match im {
                    Impl::Redisson => reply.is_nil(),
                    _ => !reply.is_nil(),
                };
                if granted {
                    break;
                }
                let sleep = match im {
                    Impl::Redisson => reply.int().max(1) as u64,
                    _ => 5,
                };
                std::thread::sleep(Duration::from_millis(sleep));
            }
        }
    }
    wall_ms()
}

fn wall_ms() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}
