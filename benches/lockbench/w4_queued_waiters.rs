//! W4: release-to-grant time with 10 .. 10,000 queued waiters, and memory per waiter. RLOCK
//! alone: the spread is that of the timed handoffs (one queue of each length).

use crate::common::{self, Server};
use crate::driver::{heap_bytes, reset, shown, used_memory, Shas, Table};
use std::time::Instant;

pub fn run(server: &Server, _shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    for queued in [10usize, 100, 1_000, 10_000] {
        reset(&mut c);
        let key = format!("queue:{queued}");
        c.cmd(&["RLOCK.ACQUIRE", &key, "holder"]);
        // Only the head of the queue is timed; the tail is there for its length and memory.
        let measured = queued.min(20);
        let mut head = Vec::new();
        for i in 0..measured {
            let mut w = server.conn();
            w.send(&["RLOCK.ACQUIRE", &key, &format!("head-{i}"), "WAIT", "0"])
                .expect("send");
            server.wait_blocked(i as i64 + 1);
            head.push(w);
        }
        let base = used_memory(server);
        let heap_base = heap_bytes(server);
        let mut tail = Vec::new();
        for i in measured..queued {
            let mut w = server.conn();
            w.send(&["RLOCK.ACQUIRE", &key, &format!("tail-{i}"), "WAIT", "0"])
                .expect("send");
            tail.push(w);
        }
        common::wait_until("all queued", || server.blocked_clients() == queued as i64);
        let with_waiters = used_memory(server);
        let tail_len = if queued > measured {
            (queued - measured) as f64
        } else {
            f64::NAN
        };
        let per_waiter = (with_waiters - base) / tail_len;
        let heap_per_waiter = (heap_bytes(server) - heap_base) / tail_len;

        let mut times = Vec::new();
        let mut holder = (c, "holder".to_string());
        for (i, mut w) in head.into_iter().enumerate() {
            let started = Instant::now();
            holder.0.cmd(&["RLOCK.RELEASE", &key, &holder.1]);
            w.read().expect("grant").int();
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            holder = (w, format!("head-{i}"));
        }
        c = holder.0;
        c.cmd(&["RLOCK.FORCERELEASE", &key]);
        drop(tail);
        common::wait_until("queue drained", || server.blocked_clients() == 0);
        // The same number of clients blocked natively (BLPOP), for Redis's own share.
        let base = used_memory(server);
        let mut natives = Vec::new();
        for _ in measured..queued {
            let mut w = server.conn();
            w.send(&["BLPOP", "nothing", "0"]).expect("send");
            natives.push(w);
        }
        common::wait_until("natives blocked", || {
            server.blocked_clients() == (queued - measured) as i64
        });
        let per_native = (used_memory(server) - base) / tail_len;
        drop(natives);
        table.raw(&format!("w4.{queued}.release_to_grant_ms"), times.clone());
        table.num(&format!("w4.{queued}.bytes_per_waiter"), per_waiter);
        table.num(&format!("w4.{queued}.bytes_per_blpop_client"), per_native);
        table.num(
            &format!("w4.{queued}.module_heap_bytes_per_waiter"),
            heap_per_waiter,
        );
        table.add(
            &format!("W4 {queued} queued waiters"),
            &format!(
                "release-to-grant ms, median (min-max) of {measured} handoffs; bytes/waiter: used_memory, BLPOP client, module heap"
            ),
            if tail_len.is_nan() {
                format!("{}; n/a", shown(&times, 3))
            } else {
                format!(
                    "{}; {per_waiter:.0}, {per_native:.0}, {heap_per_waiter:.0}",
                    shown(&times, 3)
                )
            },
            if tail_len.is_nan() {
                "no waiters beyond the timed ones: no memory figures".into()
            } else {
                String::new()
            },
        );
        common::wait_until("natives gone", || server.blocked_clients() == 0);
        c = server.conn();
    }
}
