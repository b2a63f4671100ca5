//! W10's release-to-grant part: with 10 and with 10,000 waiters queued on one lock, a
//! releaser connection releases the holder; timed from just before the `RLOCK.RELEASE` to when
//! the next waiter sees its grant (blocked: its reply arrives on its connection; notified: the
//! push message arrives on the shared RESP3 connection). The granted waiter queues again at
//! the tail, so the queue keeps its length. Five interleaved rounds of `HANDOFFS` each.

use crate::common::{Conn, Server, Value};
use crate::driver::{percentile, Rounds, Table, ROUNDS};
use crate::w10_notify::{expect_waiting, notify_waits, subscribed, LEASE, WORKLOAD};
use std::collections::VecDeque;
use std::time::Instant;

/// Queue lengths of the release-to-grant part.
pub const QUEUED: [usize; 2] = [10, 10_000];
/// Timed handoffs per kind and round.
const HANDOFFS: usize = 100;

/// A queue of `n` waiters of one kind on one lock, a holder, and a releaser connection.
trait Queue {
    /// Releases the holder; returns ms until the next waiter saw its grant. The released
    /// holder queues again at the tail, so the queue keeps its length.
    fn handoff(&mut self) -> f64;
}

/// Blocked waiters, a connection each, in queue order.
struct Blocked {
    key: String,
    releaser: Conn,
    holder: (Conn, String),
    waiting: VecDeque<(Conn, String)>,
}

impl Blocked {
    fn new(server: &Server, key: &str, n: usize) -> Blocked {
        let mut releaser = server.conn();
        let mut first = server.conn();
        let token = first.cmd(&["RLOCK.ACQUIRE", key, "holder", "PX", LEASE]);
        assert!(matches!(token, Value::Int(_)), "hold {key}: {token:?}");
        let mut waiting = VecDeque::new();
        for i in 0..n {
            let mut w = server.conn();
            let owner = format!("b{i}");
            w.send(&["RLOCK.ACQUIRE", key, &owner, "PX", LEASE, "WAIT", "0"])
                .expect("send");
            // Its command was readable before this PING: the reply means it has queued, so
            // the queue order is the order of this loop.
            releaser.q("PING");
            waiting.push_back((w, owner));
        }
        Blocked {
            key: key.into(),
            releaser,
            holder: (first, "holder".into()),
            waiting,
        }
    }
}

impl Queue for Blocked {
    fn handoff(&mut self) -> f64 {
        let (mut next, next_owner) = self.waiting.pop_front().expect("a waiter");
        let release = ["RLOCK.RELEASE", &self.key, &self.holder.1];
        let started = Instant::now();
        self.releaser.send(&release).expect("send");
        let grant = next.read().expect("grant");
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        assert!(
            matches!(grant, Value::Int(t) if t > 0),
            "blocked grant: {grant:?}"
        );
        let released = self.releaser.read().expect("release");
        assert_eq!(released, Value::Int(0), "release of {}", self.holder.1);
        let (mut old, old_owner) = std::mem::replace(&mut self.holder, (next, next_owner));
        old.send(&[
            "RLOCK.ACQUIRE",
            &self.key,
            &old_owner,
            "PX",
            LEASE,
            "WAIT",
            "0",
        ])
        .expect("send");
        // Queued before the next timed release starts (see `new`).
        self.releaser.q("PING");
        self.waiting.push_back((old, old_owner));
        ms
    }
}

/// `NOTIFY` waiters, all on one shared RESP3 connection, in queue order.
struct Notified {
    key: String,
    releaser: Conn,
    shared: Conn,
    holder: String,
    waiting: VecDeque<String>,
}

impl Notified {
    fn new(server: &Server, key: &str, n: usize) -> Notified {
        let mut releaser = server.conn();
        let token = releaser.cmd(&["RLOCK.ACQUIRE", key, "holder", "PX", LEASE]);
        assert!(matches!(token, Value::Int(_)), "hold {key}: {token:?}");
        let mut shared = subscribed(server);
        let waiting: VecDeque<String> = (0..n).map(|i| format!("n{i}")).collect();
        let waits: Vec<(String, String)> = waiting
            .iter()
            .map(|o| (key.to_string(), o.clone()))
            .collect();
        notify_waits(&mut shared, &waits, &["PX", LEASE]);
        Notified {
            key: key.into(),
            releaser,
            shared,
            holder: "holder".into(),
            waiting,
        }
    }
}

/// The fields of a grant message, `granted <type> <token> <key-length> <key> <owner>`:
/// (event, token, key, owner).
fn parse_message(payload: &[u8]) -> Option<(String, String, Vec<u8>, Vec<u8>)> {
    let mut rest = payload;
    let mut fields = Vec::new();
    for _ in 0..4 {
        let space = rest.iter().position(|&b| b == b' ')?;
        fields.push(String::from_utf8_lossy(&rest[..space]).into_owned());
        rest = &rest[space + 1..];
    }
    let len: usize = fields[3].parse().ok()?;
    let key = rest.get(..len)?.to_vec();
    let owner = rest.get(len + 1..)?.to_vec();
    Some((fields[0].clone(), fields[2].clone(), key, owner))
}

impl Queue for Notified {
    fn handoff(&mut self) -> f64 {
        let next = self.waiting.pop_front().expect("a waiter");
        let release = ["RLOCK.RELEASE", &self.key, &self.holder];
        let started = Instant::now();
        self.releaser.send(&release).expect("send");
        let message = self.shared.read().expect("grant message");
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let items = message.items();
        let payload = match items.as_slice() {
            [kind, _channel, Value::Bulk(payload)] if kind.text() == "message" => payload,
            _ => panic!("expected a grant message, got {message:?}"),
        };
        let (event, token, key, owner) = parse_message(payload)
            .unwrap_or_else(|| panic!("bad message {:?}", String::from_utf8_lossy(payload)));
        assert!(
            event == "granted"
                && token.parse::<i64>().is_ok()
                && key == self.key.as_bytes()
                && owner == next.as_bytes(),
            "expected the grant of {} to {next}, got {:?}",
            self.key,
            String::from_utf8_lossy(payload)
        );
        let released = self.releaser.read().expect("release");
        assert_eq!(released, Value::Int(0), "release of {}", self.holder);
        let old = std::mem::replace(&mut self.holder, next);
        let args = [
            "RLOCK.ACQUIRE",
            &self.key,
            &old,
            "PX",
            LEASE,
            "WAIT",
            "0",
            "NOTIFY",
        ];
        self.shared.send(&args).expect("send");
        expect_waiting(&mut self.shared, "NOTIFY wait again");
        self.waiting.push_back(old);
        ms
    }
}

pub fn latency(server: &Server, table: &mut Table, queued: usize, notify: bool) {
    let mut blocked = Blocked::new(server, &format!("w10:blocked:{queued}"), queued);
    let mut notified =
        notify.then(|| Notified::new(server, &format!("w10:notify:{queued}"), queued));
    let mut rounds = Rounds::new(&format!("w10.{queued}"));
    let mut all: [Vec<f64>; 2] = [vec![], vec![]];
    for _ in 0..ROUNDS {
        let mut sides: Vec<(&str, &mut dyn Queue)> = vec![("blocked", &mut blocked)];
        if let Some(n) = notified.as_mut() {
            sides.push(("notify", n));
        }
        for (i, (side, queue)) in sides.into_iter().enumerate() {
            let mut times: Vec<f64> = (0..HANDOFFS).map(|_| queue.handoff()).collect();
            all[i].extend(&times);
            times.sort_by(|a, b| a.total_cmp(b));
            rounds.push(
                side,
                &[
                    ("p50_ms", percentile(&times, 0.5)),
                    ("p99_ms", percentile(&times, 0.99)),
                ],
            );
        }
    }
    let workload = format!("{WORKLOAD} {queued} queued on one lock");
    let metric =
        |what: &str| format!("{what}: release-to-grant p50; p99 ms ({HANDOFFS} handoffs a round)");
    for (i, (side, what)) in [
        ("blocked", "blocked waiters (reply on their connection)"),
        (
            "notify",
            "NOTIFY waiters (push on one shared RESP3 connection)",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        if i == 1 && notified.is_none() {
            table.add(
                &workload,
                &metric(what),
                "n/a".into(),
                "this build has no NOTIFY".into(),
            );
            continue;
        }
        let mut pooled = all[i].clone();
        table.raw(&format!("w10.{queued}.{side}.handoff_ms"), pooled.clone());
        pooled.sort_by(|a, b| a.total_cmp(b));
        table.add(
            &workload,
            &metric(what),
            rounds.shows(side, &[("p50_ms", 3), ("p99_ms", 3)]),
            format!(
                "all {} handoffs: p50 {:.3}, p99 {:.3}, max {:.3}",
                pooled.len(),
                percentile(&pooled, 0.5),
                percentile(&pooled, 0.99),
                percentile(&pooled, 1.0)
            ),
        );
    }
    if notified.is_some() {
        let p50 = rounds.ratio("p50_ms", "notify", "blocked");
        let p99 = rounds.ratio("p99_ms", "notify", "blocked");
        table.add(
            &workload,
            "notify / blocked p50; p99",
            format!("{p50}; {p99}"),
            String::new(),
        );
    }
    rounds.finish(table);
}
