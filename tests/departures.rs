//! A waiter that leaves the queue (timeout, disconnect, `RLOCK.CANCEL`, `CLIENT UNBLOCK`, its
//! receiver unsubscribing) lets in those behind it that the rules now admit, at once, as a
//! release does: for every family that shares the queue and both kinds of waiter.

mod common;
use common::{Conn, Server, Value};
use std::time::{Duration, Instant};

/// How a waiter is told its outcome.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Via {
    Blocked,
    Notify,
}

/// How the waiter at the head leaves.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Departure {
    Timeout,
    Disconnect,
    Cancel,
    Unblock,
    Unsubscribe,
}

/// A queued waiter: its own connection (blocked in the command, or subscribed to its channel).
struct Waiter {
    conn: Conn,
    via: Via,
    id: i64,
}

impl Waiter {
    /// Queues `line` (which ends in its `WAIT ms`) and checks that it waits.
    fn queue(server: &Server, commands: &mut Conn, line: &str, via: Via) -> Waiter {
        let mut conn = server.conn();
        let id = conn.q("CLIENT ID").int();
        match via {
            Via::Blocked => {
                conn.send(&line.split_whitespace().collect::<Vec<_>>())
                    .expect("send");
            }
            Via::Notify => {
                let channel = conn.q("RLOCK.CHANNEL").text();
                conn.cmd(&["SUBSCRIBE", &channel]);
                let reply = commands.q(&format!("{line} NOTIFY {id}"));
                assert_eq!(reply.text(), "WAITING", "{line}");
            }
        }
        Waiter { conn, via, id }
    }

    /// The outcome: `Some(token)` when granted, None when it timed out or was cancelled.
    fn outcome(&mut self) -> Option<i64> {
        self.conn.set_read_timeout(Some(Duration::from_secs(10)));
        let reply = self.conn.read().expect("an outcome within 10 s");
        match self.via {
            Via::Blocked => (!reply.is_nil()).then(|| reply.int()),
            Via::Notify => {
                let Value::Bulk(message) = &reply.items()[2] else {
                    panic!("a message: {reply:?}")
                };
                let text = String::from_utf8_lossy(message).into_owned();
                let mut words = text.split(' ');
                match words.next() {
                    Some("granted") => words.nth(1).map(|t| t.parse().expect("token")),
                    Some("timeout") => None,
                    other => panic!("unexpected message {other:?}: {text}"),
                }
            }
        }
    }
}

/// One family's scene: `hold` keeps the head out, `head` waits first (and leaves), `behind`
/// waits behind it and could enter as soon as the head is gone.
struct Scene {
    hold: &'static [&'static str],
    head: &'static str,
    head_owner: &'static str,
    behind: &'static str,
}

const RWLOCK: Scene = Scene {
    hold: &["RWLOCK.ACQUIRE k r1 READ PX 10000"],
    head: "RWLOCK.ACQUIRE k w WRITE",
    head_owner: "w",
    behind: "RWLOCK.ACQUIRE k r2 READ WAIT 5000",
};

const SEMAPHORE: Scene = Scene {
    hold: &["RSEM.SETPERMITS k 3", "RSEM.ACQUIRE k a PERMITS 2 PX 10000"],
    head: "RSEM.ACQUIRE k b PERMITS 3",
    head_owner: "b",
    behind: "RSEM.ACQUIRE k c PERMITS 1 WAIT 5000",
};

/// Plays a scene and returns how long after the departure the waiter behind was granted.
fn play(scene: &Scene, head_via: Via, behind_via: Via, departure: Departure) -> Duration {
    let server = Server::start();
    let mut c = server.conn();
    for line in scene.hold {
        assert!(!c.q(line).is_nil(), "{line}");
    }
    let wait = match departure {
        Departure::Timeout => 300,
        _ => 60_000,
    };
    let head_line = format!("{} WAIT {wait}", scene.head);
    let mut head = Waiter::queue(&server, &mut c, &head_line, head_via);
    let mut behind = Waiter::queue(&server, &mut c, scene.behind, behind_via);
    if head_via == Via::Blocked || behind_via == Via::Blocked {
        let blocked = [head_via, behind_via]
            .iter()
            .filter(|v| **v == Via::Blocked)
            .count();
        server.wait_blocked(blocked as i64);
    }
    let departed = match departure {
        Departure::Timeout => {
            assert_eq!(head.outcome(), None, "the head timed out");
            Instant::now()
        }
        Departure::Disconnect => {
            let at = Instant::now();
            drop(head);
            at
        }
        Departure::Cancel => {
            let at = Instant::now();
            assert_eq!(
                c.q(&format!("RLOCK.CANCEL k {}", scene.head_owner)).int(),
                1
            );
            at
        }
        Departure::Unblock => {
            let at = Instant::now();
            assert_eq!(c.q(&format!("CLIENT UNBLOCK {}", head.id)).int(), 1);
            at
        }
        Departure::Unsubscribe => {
            let at = Instant::now();
            head.conn.send(&["UNSUBSCRIBE"]).expect("send");
            at
        }
    };
    let token = behind.outcome();
    let after = departed.elapsed();
    assert!(
        token.is_some(),
        "{head_via:?} head left by {departure:?}: the {behind_via:?} waiter behind was not let in"
    );
    server.assert_no_crash();
    after
}

/// Every way of leaving, for both kinds of head and of waiter behind.
fn every_departure(scene: &Scene) {
    let mut worst = Duration::ZERO;
    for head_via in [Via::Blocked, Via::Notify] {
        for behind_via in [Via::Blocked, Via::Notify] {
            let mut departures = vec![Departure::Timeout, Departure::Disconnect, Departure::Cancel];
            departures.push(match head_via {
                Via::Blocked => Departure::Unblock,
                Via::Notify => Departure::Unsubscribe,
            });
            for departure in departures {
                let after = play(scene, head_via, behind_via, departure);
                println!("{head_via:?} head, {departure:?}, {behind_via:?} behind: {after:?}");
                worst = worst.max(after);
            }
        }
    }
    // The rule is "at once"; the bound is generous for a shared machine (before the fix the
    // waiter behind waited out its whole 5 s).
    assert!(worst < Duration::from_millis(500), "worst {worst:?}");
}

#[test]
fn a_departed_writer_lets_the_readers_behind_it_in() {
    every_departure(&RWLOCK);
}

#[test]
fn a_departed_large_request_lets_the_smaller_one_behind_it_in() {
    every_departure(&SEMAPHORE);
}

/// The plain lock and the latch admit nobody past a held lock or a closed latch, so a departure
/// alone lets nobody in; the next release (or count down) must still find the queue intact.
#[test]
fn after_departures_the_plain_lock_and_the_latch_still_serve_in_order() {
    let server = Server::start();
    let mut c = server.conn();
    assert!(!c.q("RLOCK.ACQUIRE l holder PX 10000").is_nil());
    let mut gone = Waiter::queue(&server, &mut c, "RLOCK.ACQUIRE l a WAIT 300", Via::Notify);
    let mut next = Waiter::queue(&server, &mut c, "RLOCK.ACQUIRE l b WAIT 5000", Via::Blocked);
    assert_eq!(gone.outcome(), None);
    assert_eq!(c.q("RLOCK.INFO l").field("owner").text(), "holder");
    assert_eq!(c.q("RLOCK.RELEASE l holder").int(), 0);
    assert!(next.outcome().is_some());

    c.q("RLATCH.SET d 1");
    let mut first = Waiter::queue(&server, &mut c, "RLATCH.AWAIT d WAIT 300", Via::Blocked);
    let mut second = Waiter::queue(&server, &mut c, "RLATCH.AWAIT d WAIT 5000", Via::Notify);
    assert_eq!(first.outcome(), None);
    c.q("RLATCH.COUNTDOWN d");
    assert_eq!(second.outcome(), Some(1));
    server.assert_no_crash();
}
