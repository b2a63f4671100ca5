//! W6: what the server-side watchdog costs. Idle: the server CPU and module heap that
//! `LOCKS` watchdog locks take beyond as many plain ones. Per call: the server time of a
//! fresh RLOCK.ACQUIRE with each new option against none. Both in five interleaved rounds.

use crate::common::{Conn, Server, Value};
use crate::driver::{
    acquire_args, encode, fresh_acquire_usec, heap_bytes, info_field, info_number, no_options,
    read_replies, reset, spread, strings, Impl, Rounds, Shas, Table, ROUNDS,
};
use std::time::{Duration, Instant};

const WORKLOAD: &str = "W6 watchdog";
const LOCKS: usize = 10_000;
/// A binding belongs to the connection that took the lock, so each holder keeps its own share.
const HOLDERS: usize = 8;
/// Two renewal periods: each watchdog lock renews the same number of times in any such window.
const IDLE: Duration = Duration::from_secs(2);
/// The server renews a watchdog lock about every third of its lease: every second here.
const WATCHDOG_HOLD: &[&str] = &["PX", "3000", "WATCHDOG"];
/// Long enough that no plain lock expires while idle: both sides keep `LOCKS` keys with a TTL.
const PLAIN_HOLD: &[&str] = &["PX", "600000"];

/// (bench.json name, what the table calls it, RLOCK.ACQUIRE options after `PX 30000`).
type Variant = (&'static str, &'static str, fn(&str) -> Vec<String>);

/// A fresh key is unique, so it serves as the unique ID as well.
const VARIANTS: [Variant; 4] = [
    ("plain", "PX 30000", no_options),
    ("watchdog", "PX 30000 WATCHDOG", |_| strings(&["WATCHDOG"])),
    ("id", "PX 30000 ID <unique>", |key| strings(&["ID", key])),
    ("maxhold", "PX 30000 MAXHOLD 60000", |_| {
        strings(&["MAXHOLD", "60000"])
    }),
];

pub fn run(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    // Until the options land in src/, the server rejects them; `make bench` must still pass.
    if unknown_option(&mut c, shas).is_some() {
        println!("W6 skipped: this build has no WATCHDOG/ID/MAXHOLD");
        reset(&mut c);
        return;
    }
    let mut rounds = Rounds::new("w6");
    for _ in 0..ROUNDS {
        let plain = hold_idle(server, &mut c, PLAIN_HOLD);
        let watchdog = hold_idle(server, &mut c, WATCHDOG_HOLD);
        let renewals = watchdog.renewals_per_s.unwrap_or(f64::NAN);
        let renewal_usec = (watchdog.cpu_ms_per_s - plain.cpu_ms_per_s) * 1000.0 / renewals;
        for (side, idle) in [("plain", &plain), ("watchdog", &watchdog)] {
            rounds.push(
                side,
                &[
                    ("idle_cpu_ms_per_s", idle.cpu_ms_per_s),
                    ("heap_bytes_per_lock", idle.heap_bytes / LOCKS as f64),
                    ("locks_left", idle.locks_left as f64),
                ],
            );
        }
        rounds.push(
            "watchdog",
            &[
                ("renewals_per_s", renewals),
                ("usec_per_renewal", renewal_usec),
            ],
        );
        for (name, _, options) in VARIANTS {
            let us = fresh_acquire_usec(server, &mut c, shas, Impl::Rlock, "w6", options);
            rounds.push(name, &[("acquire_usec", us)]);
        }
    }
    let cpu = rounds.difference("idle_cpu_ms_per_s", "watchdog", "plain", 2);
    table.add(
        WORKLOAD,
        &format!("server CPU ms/s, {LOCKS} idle locks for {IDLE:?}: watchdog - plain"),
        cpu,
        format!(
            "watchdog {} - plain {}; {:.0} of {LOCKS} watchdog locks left",
            rounds.show("watchdog", "idle_cpu_ms_per_s", 2),
            rounds.show("plain", "idle_cpu_ms_per_s", 2),
            spread(rounds.get("watchdog", "locks_left")).1
        ),
    );
    let renewals = if rounds.mid("watchdog", "renewals_per_s").is_nan() {
        "n/a".to_string()
    } else {
        rounds.show("watchdog", "renewals_per_s", 0)
    };
    table.add(
        WORKLOAD,
        "watchdog renewals/s; server µs per renewal",
        format!(
            "{renewals}; {}",
            rounds.show("watchdog", "usec_per_renewal", 2)
        ),
        format!("~{LOCKS} renewals/s expected"),
    );
    let heap = rounds.difference("heap_bytes_per_lock", "watchdog", "plain", 0);
    table.add(
        WORKLOAD,
        "module heap bytes per watchdog binding",
        heap,
        String::new(),
    );
    for (name, options_shown, _) in VARIANTS {
        let against_plain = if name == "plain" {
            String::new()
        } else {
            format!("{} plain", rounds.ratio("acquire_usec", name, "plain"))
        };
        table.add(
            WORKLOAD,
            &format!("server µs per fresh acquire: {options_shown}"),
            rounds.show(name, "acquire_usec", 2),
            against_plain,
        );
    }
    rounds.finish(table);
    reset(&mut c);
}

/// The first W6 call: the server's error when this build does not know one of the options.
fn unknown_option(c: &mut Conn, shas: &Shas) -> Option<String> {
    VARIANTS.iter().find_map(|(name, _, options)| {
        let key = format!("w6:probe:{name}");
        let mut args = acquire_args(Impl::Rlock, shas, &key, "probe", false);
        args.extend(options(&key));
        match c.cmd(&args) {
            Value::Error(e) if e.contains("unknown option") => Some(e),
            Value::Error(e) => panic!("{args:?} failed: {e}"),
            _ => None,
        }
    })
}

struct Idle {
    cpu_ms_per_s: f64,
    /// `None` when this build keeps no `rlock_watchdog_renewals` counter.
    renewals_per_s: Option<f64>,
    heap_bytes: f64,
    locks_left: i64,
}

/// Takes `LOCKS` locks with `hold` over `HOLDERS` connections and measures the server while
/// they sit idle for `IDLE`, the holders still connected.
fn hold_idle(server: &Server, c: &mut Conn, hold: &[&str]) -> Idle {
    reset(c);
    let holders: Vec<Conn> = (0..HOLDERS)
        .map(|h| {
            let mut holder = server.conn();
            let owner = format!("holder-{h}");
            let keys = (h..LOCKS).step_by(HOLDERS);
            let count = keys.len();
            let mut buf = Vec::new();
            for i in keys {
                let mut args = strings(&["RLOCK.ACQUIRE", &format!("w6:idle:{i}"), &owner]);
                args.extend(strings(hold));
                encode(&mut buf, &args);
            }
            holder.send_raw(&buf).expect("send");
            read_replies(&mut holder, count);
            holder
        })
        .collect();
    let heap_bytes = heap_bytes(server);
    let renewals = || info_number(server, "rlock", "rlock_watchdog_renewals");
    let (cpu_before, renewals_before) = (server_cpu_ms(server), renewals());
    let started = Instant::now();
    std::thread::sleep(IDLE);
    let (cpu_after, renewals_after) = (server_cpu_ms(server), renewals());
    let elapsed = started.elapsed().as_secs_f64();
    let locks_left = c.q("DBSIZE").int();
    drop(holders);
    Idle {
        cpu_ms_per_s: (cpu_after - cpu_before) / elapsed,
        renewals_per_s: renewals_before
            .zip(renewals_after)
            .map(|(before, after)| (after - before) / elapsed),
        heap_bytes,
        locks_left,
    }
}

/// The server process's CPU time so far (all its threads), in ms.
fn server_cpu_ms(server: &Server) -> f64 {
    let info = server.info("cpu");
    let seconds = |field| info_field(&info, field).expect("used_cpu in INFO cpu");
    (seconds("used_cpu_sys") + seconds("used_cpu_user")) * 1000.0
}
