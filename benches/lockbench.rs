//! `make bench`: RLOCK against the Redisson RLock protocol (Lua scripts + pub/sub waiting) and
//! the plain `SET NX PX` pattern, side by side on one server with the module, interleaved.
//! Prints one table of medians with their spread (min-max) over interleaved rounds, ratios
//! taken round by round, and writes every round's figures to target/bench.json.
//! `cargo bench --bench lockbench -- w1` runs one workload alone.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "lockbench/driver.rs"]
mod driver;
#[path = "lockbench/w10_latency.rs"]
mod w10_latency;
#[path = "lockbench/w10_memory.rs"]
mod w10_memory;
#[path = "lockbench/w10_notify.rs"]
mod w10_notify;
#[path = "lockbench/w11_guard.rs"]
mod w11_guard;
#[path = "lockbench/w12_deadlock.rs"]
mod w12_deadlock;
#[path = "lockbench/w13_several_keys.rs"]
mod w13_several_keys;
#[path = "lockbench/w14_confirm.rs"]
mod w14_confirm;
#[path = "lockbench/w1_uncontended.rs"]
mod w1_uncontended;
#[path = "lockbench/w2_hot_lock.rs"]
mod w2_hot_lock;
#[path = "lockbench/w3_dead_holder.rs"]
mod w3_dead_holder;
#[path = "lockbench/w4_queued_waiters.rs"]
mod w4_queued_waiters;
#[path = "lockbench/w5_limit.rs"]
mod w5_limit;
#[path = "lockbench/w6_watchdog.rs"]
mod w6_watchdog;
#[path = "lockbench/w7_rwlock.rs"]
mod w7_rwlock;
#[path = "lockbench/w8_semaphore.rs"]
mod w8_semaphore;
#[path = "lockbench/w9_live_keys.rs"]
mod w9_live_keys;

use common::Server;
use driver::{Shas, Table};
use std::time::Instant;

type Workload = fn(&Server, &Shas, &mut Table);

/// In the order they run. W1, W5, W6 and W9 first: the first blocking WAIT (in W2) subscribes
/// the module to keyspace events, which then cost every write, SET NX PX included. The README
/// states that cost.
const WORKLOADS: [(&str, Workload); 14] = [
    ("w1", w1_uncontended::run),
    ("w5", w5_limit::run),
    ("w6", w6_watchdog::run),
    ("w9", w9_live_keys::run),
    ("w11", w11_guard::run),
    ("w12", w12_deadlock::run),
    ("w2", w2_hot_lock::run),
    ("w3", w3_dead_holder::run),
    ("w4", w4_queued_waiters::run),
    ("w7", w7_rwlock::run),
    ("w8", w8_semaphore::run),
    ("w13", w13_several_keys::run),
    // A primary and a replica of its own: confirmation by the replica against Redisson's.
    ("w14", w14_confirm::run),
    // Memory per NOTIFY waiter against blocked ones, and release-to-grant: W10 alone on any
    // server: `REDIS_SERVER=<path> cargo bench --bench lockbench -- w10` (see its file).
    ("w10", w10_notify::run),
];

fn main() {
    let started = Instant::now();
    let server = Server::builder()
        .arg("maxclients", "19000")
        .arg("appendonly", "no")
        .start();
    let mut c = server.conn();
    let shas = driver::load_scripts(&mut c);
    let mut table = Table::new(&driver::redis_version(&mut c));
    // Cargo appends its own `--bench` flag; only a workload name selects.
    let only = std::env::args().nth(1).filter(|a| a.starts_with('w'));
    for (name, run) in WORKLOADS {
        if only.as_deref().is_none_or(|o| o == name) {
            run(&server, &shas, &mut table);
        }
    }
    table.print();
    let path = table.write_json();
    println!(
        "\nraw figures: {} (took {:.0} s)",
        path.display(),
        started.elapsed().as_secs_f64()
    );
}
