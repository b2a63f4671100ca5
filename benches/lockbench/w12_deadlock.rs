//! W12: what deadlock detection costs. Per enqueue: the server time of an `RLOCK.ACQUIRE ...
//! WAIT ... NOTIFY` that queues (on a held lock, while another lock has waiters, so the search
//! runs) with `rlock.deadlock-detection` on and off, five interleaved rounds. Worst case: one
//! wait at the end of a chain of owners, each holding a lock and waiting for the next one's.

use crate::common::{Conn, Server};
use crate::driver::{commandstats, reset, Rounds, Table, ROUNDS};
use std::time::Instant;

const WORKLOAD: &str = "W12 deadlock detection";
const WAITS: usize = 2_000;
const CHAINS: [usize; 3] = [10, 100, 1_000];

pub fn run(server: &Server, _shas: &crate::driver::Shas, table: &mut Table) {
    let mut c = server.conn();
    let mut rounds = Rounds::new("w12");
    for _ in 0..ROUNDS {
        for (side, on) in [("off", "no"), ("on", "yes")] {
            rounds.push(side, &[("enqueue_usec", enqueue_usec(server, &mut c, on))]);
        }
    }
    table.add(
        WORKLOAD,
        &format!("server µs per queued acquire ({WAITS} NOTIFY waits on a held lock): detection on ÷ off"),
        rounds.ratio("enqueue_usec", "on", "off"),
        format!(
            "off {}; on {}",
            rounds.show("off", "enqueue_usec", 2),
            rounds.show("on", "enqueue_usec", 2)
        ),
    );
    for chain in CHAINS {
        for _ in 0..ROUNDS {
            rounds.push(
                &format!("chain{chain}"),
                &[("ms", chain_ms(server, &mut c, chain))],
            );
        }
        table.add(
            WORKLOAD,
            &format!("ms for one wait at the end of a chain of {chain} waiting holders"),
            rounds.show(&format!("chain{chain}"), "ms", 3),
            String::new(),
        );
    }
    c.q("CONFIG SET rlock.deadlock-detection yes");
    rounds.finish(table);
    reset(&mut c);
}

/// A connection subscribed to its own grant channel, and its client id.
fn receiver(server: &Server) -> (Conn, i64) {
    let mut sub = server.conn();
    let id = sub.q("CLIENT ID").int();
    let channel = sub.q("RLOCK.CHANNEL").text();
    sub.cmd(&["SUBSCRIBE", &channel]);
    (sub, id)
}

fn enqueue_usec(server: &Server, c: &mut Conn, detection: &str) -> f64 {
    reset(c);
    c.q(&format!("CONFIG SET rlock.deadlock-detection {detection}"));
    let (_sub, id) = receiver(server);
    // Another lock with a waiter: without one no cycle is possible and the search is skipped.
    c.q("RLOCK.ACQUIRE other holder PX 600000");
    c.q(&format!(
        "RLOCK.ACQUIRE other waiter WAIT 600000 NOTIFY {id}"
    ));
    c.q("RLOCK.ACQUIRE hot holder PX 600000");
    crate::driver::reset_stats(c);
    let mut buf = Vec::new();
    for i in 0..WAITS {
        let owner = format!("w{i}");
        let id = id.to_string();
        Conn::encode(
            &mut buf,
            &[
                &b"RLOCK.ACQUIRE"[..],
                b"hot",
                owner.as_bytes(),
                b"WAIT",
                b"600000",
                b"NOTIFY",
                id.as_bytes(),
            ],
        );
    }
    c.send_raw(&buf).expect("send");
    crate::driver::read_replies(c, WAITS);
    commandstats(c)
        .get("rlock.acquire")
        .map_or(f64::NAN, |s| s.1)
}

/// Builds a chain o0 -> k1 (held by o1) -> ... -> o(n-1) waits k(n)... and times one more wait
/// whose search walks all of it (no cycle: the last lock is held by an owner that waits for
/// nothing).
fn chain_ms(server: &Server, c: &mut Conn, n: usize) -> f64 {
    reset(c);
    c.q("CONFIG SET rlock.deadlock-detection yes");
    let (_sub, id) = receiver(server);
    for i in 0..=n {
        c.q(&format!("RLOCK.ACQUIRE k{i} o{i} PX 600000"));
    }
    for i in 0..n {
        c.q(&format!(
            "RLOCK.ACQUIRE k{} o{i} WAIT 600000 NOTIFY {id}",
            i + 1
        ));
    }
    let started = Instant::now();
    let reply = c.q(&format!("RLOCK.ACQUIRE k0 x WAIT 600000 NOTIFY {id}"));
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(reply.text(), "WAITING");
    ms
}
