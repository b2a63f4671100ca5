//! W2: many contenders on one hot lock: handoffs/s, acquire latency, and how many commands
//! each implementation spends per acquisition.

use crate::common::{redisson, Conn, Server};
use crate::driver::{
    acquire_args, percentile, redisson_lock, release_args, reset, total_calls, Impl, Shas, Table,
    RUN,
};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub fn run(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    for contenders in [16usize, 64, 256] {
        let workload = format!("W2 hot lock, {contenders} contenders");
        let mut rates = BTreeMap::new();
        for im in [Impl::Rlock, Impl::Redisson, Impl::SetNx] {
            reset(&mut c);
            let stop = AtomicBool::new(false);
            let latencies = Mutex::new(Vec::new());
            let key = format!("hot:{contenders}:{}", im.name());
            let started = Instant::now();
            std::thread::scope(|s| {
                for id in 0..contenders {
                    let (stop, latencies, key) = (&stop, &latencies, key.as_str());
                    s.spawn(move || contender(server, shas, im, key, id, stop, latencies));
                }
                std::thread::sleep(RUN);
                stop.store(true, Ordering::Relaxed);
                // Let blocked RLOCK waiters go: force-release until nobody waits.
                while server.blocked_clients() > 0 {
                    server.conn().cmd(&["DEL", &key]);
                    std::thread::sleep(Duration::from_millis(5));
                }
            });
            let elapsed = started.elapsed().as_secs_f64();
            let mut lat = latencies.into_inner().expect("latencies");
            lat.sort_by(|a, b| a.total_cmp(b));
            let acquired = lat.len() as f64;
            let commands_per_acquire = total_calls(&mut c) as f64 / acquired.max(1.0);
            let name = im.name();
            let rate = acquired / elapsed;
            rates.insert(name, rate);
            let (p50, p99, max) = (
                percentile(&lat, 0.5),
                percentile(&lat, 0.99),
                percentile(&lat, 1.0),
            );
            for (figure, value) in [
                ("handoffs_per_s", rate),
                ("p50_ms", p50),
                ("p99_ms", p99),
                ("max_ms", max),
                ("commands_per_acquire", commands_per_acquire),
            ] {
                table.num(&format!("w2.{contenders}.{name}.{figure}"), value);
            }
            table.add(
                &workload,
                &format!("{name} acquires/s | p50 p99 max ms | cmds/acquire"),
                format!("{rate:.0} | {p50:.1} {p99:.1} {max:.1} | {commands_per_acquire:.1}"),
                String::new(),
            );
        }
        table.add(
            &workload,
            "rlock / redisson acquires/s",
            format!("{:.1}x", rates["rlock"] / rates["redisson"]),
            if contenders == 64 {
                "goal >= 5x".into()
            } else {
                String::new()
            },
        );
    }
}

/// One contender: loops acquire (waiting) -> release on `key` until `stop`, the way each
/// implementation's client library waits.
fn contender(
    server: &Server,
    shas: &Shas,
    im: Impl,
    key: &str,
    id: usize,
    stop: &AtomicBool,
    latencies: &Mutex<Vec<f64>>,
) {
    let owner = format!("contender-{id}");
    let mut c = server.conn();
    let mut sub: Option<Conn> = None;
    let mut mine = Vec::new();
    let release = release_args(im, shas, key, &owner);
    let acquire = acquire_args(im, shas, key, &owner, true);
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        match im {
            Impl::Rlock => {
                c.cmd(&acquire);
            }
            Impl::Redisson => {
                let channel = redisson::channel(key);
                if !redisson_lock(server, &mut c, &mut sub, &acquire, &channel, stop, None) {
                    break;
                }
            }
            Impl::SetNx => {
                // Poll with a short fixed back-off: the usual single-instance client loop.
                while c.cmd(&acquire).is_nil() {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
        mine.push(started.elapsed().as_secs_f64() * 1000.0);
        c.cmd(&release);
    }
    latencies.lock().expect("latencies").extend(mine);
}
