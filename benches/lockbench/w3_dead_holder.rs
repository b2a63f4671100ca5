//! W3: a holder that never releases; delay from its lease end to the waiter's grant.

use crate::common::Server;
use crate::driver::{acquire_args, percentile, Impl, Shas, Table};
use std::time::{Duration, SystemTime};

const ROUNDS: usize = 20;
const LEASE_MS: u64 = 100;

pub fn run(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    for im in [Impl::Rlock, Impl::Redisson, Impl::SetNx] {
        let mut delays = Vec::new();
        for round in 0..ROUNDS {
            let key = format!("dead:{}:{round}", im.name());
            let mut hold = acquire_args(im, shas, &key, "dead-holder", false);
            let lease_arg = match im {
                Impl::Rlock | Impl::Redisson => 4,
                Impl::SetNx => 5,
            };
            hold[lease_arg] = LEASE_MS.to_string();
            c.cmd(&hold);
            // PEXPIRETIME and `wall_ms` share the clock: client and server on one machine.
            let lease_end = c.cmd(&["PEXPIRETIME", &key]).int() as f64;
            let granted_at = wait_for_grant(server, shas, im, &key);
            delays.push(granted_at - lease_end);
        }
        delays.sort_by(|a, b| a.total_cmp(b));
        table.raw(
            &format!("w3.grant_after_lease_end_ms.{}", im.name()),
            delays.clone(),
        );
        table.add(
            "W3 dead holder",
            &format!("{} grant after lease end p50 / p99 ms", im.name()),
            format!(
                "{:.1} / {:.1}",
                percentile(&delays, 0.5),
                percentile(&delays, 0.99)
            ),
            if im == Impl::Rlock {
                "goal p99 < 5 ms".into()
            } else {
                String::new()
            },
        );
    }
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
