//! Several keys at once (`RLOCK.ACQUIREALL`, `RLOCK.RELEASEALL`): every key or none, a
//! waiting request holds one place in every key's queue and is let in in one step, and
//! requests sharing a key are served in the order they came.

mod common;
use common::{snapshot, Conn, Pending, Server, Value};
use std::collections::HashMap;
use std::thread;
use std::time::{Duration, Instant};

fn tokens(v: &Value) -> Vec<i64> {
    v.items().iter().map(Value::int).collect()
}

fn owner_of(c: &mut Conn, key: &str) -> Option<String> {
    let info = c.q(&format!("RLOCK.INFO {key}"));
    (!info.is_nil()).then(|| info.field("owner").text())
}

#[test]
fn every_key_or_none() {
    let server = Server::start();
    let mut c = server.conn();
    let got = tokens(&c.q("RLOCK.ACQUIREALL 2 a b o1 PX 60000"));
    assert_eq!(got.len(), 2);
    assert!(got[0] > 0 && got[1] > got[0], "{got:?}");
    for (key, token) in ["a", "b"].iter().zip(&got) {
        let info = c.q(&format!("RLOCK.INFO {key}"));
        assert_eq!(info.field("owner").text(), "o1");
        assert_eq!(info.field("token").int(), *token, "each key its own token");
    }
    // b is o1's: o2 gets neither b nor c.
    let before = snapshot(&mut c);
    assert!(c.q("RLOCK.ACQUIREALL 2 c b o2").is_nil());
    assert_eq!(snapshot(&mut c), before, "nothing taken");
    // Re-entry: o1 takes a again and c fresh.
    let again = tokens(&c.q("RLOCK.ACQUIREALL 2 a c o1"));
    assert_eq!(again[0], got[0], "a re-entered keeps its token");
    assert_eq!(c.q("RLOCK.INFO a").field("holds").int(), 2);
    // Released one hold of each; nil where o1 held nothing.
    let answers = c.q("RLOCK.RELEASEALL 3 a b d o1").items();
    assert_eq!(answers[0].int(), 1);
    assert_eq!(answers[1].int(), 0);
    assert!(answers[2].is_nil());
    assert_eq!(c.q("RLOCK.RELEASE a o1").int(), 0);
    assert_eq!(c.q("RLOCK.RELEASE c o1").int(), 0);
    assert_eq!(c.q("DBSIZE").int(), 0, "nothing stays behind");
    server.assert_no_crash();
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("SET s string");
    c.q("RLOCK.ACQUIRE held other PX 60000");
    let before = snapshot(&mut c);
    for (line, error) in [
        (
            "RLOCK.ACQUIREALL 0 a o",
            "ERR numkeys must be between 1 and 1000",
        ),
        ("RLOCK.ACQUIREALL x a o", "ERR numkeys must be an integer"),
        ("RLOCK.ACQUIREALL 3 a b o", "ERR wrong number of arguments"),
        (
            "RLOCK.ACQUIREALL 2 a a o",
            "ERR a key is named more than once",
        ),
        ("RLOCK.ACQUIREALL 2 a s o", "WRONGTYPE"),
        ("RLOCK.ACQUIREALL 2 a b rlock:x", "ERR owners starting"),
        ("RLOCK.ACQUIREALL 2 a b o PX 0", "ERR PX must be"),
        ("RLOCK.ACQUIREALL 2 a held o NOTIFY", "ERR"),
        ("RLOCK.RELEASEALL 2 a s o", "WRONGTYPE"),
        (
            "RLOCK.RELEASEALL 2 held held other",
            "ERR a key is named more than once",
        ),
    ] {
        let reply = c.q(line);
        assert!(reply.err().starts_with(error), "{line}: {reply:?}");
    }
    assert_eq!(snapshot(&mut c), before);
    assert_eq!(c.q("RLOCK.INFO held").field("owner").text(), "other");
}

#[test]
fn a_waiting_request_gets_all_its_keys_in_one_step() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE b holder PX 60000");
    let waiting = Pending::send(&server, "RLOCK.ACQUIREALL 2 a b o1 PX 60000 WAIT 10000");
    server.wait_blocked(1);
    assert_eq!(c.q("RLOCK.INFO b").field("waiters").int(), 1);
    // a is free, but o1 waits first in its queue: a newcomer waits behind it (the price).
    assert!(c.q("RLOCK.ACQUIRE a o2").is_nil());
    assert_eq!(
        c.q("EXISTS a").int(),
        0,
        "nobody holds part of o1's request"
    );
    let behind = Pending::send(&server, "RLOCK.ACQUIRE a o2 PX 60000 WAIT 10000");
    server.wait_blocked(2);
    assert_eq!(c.q("RLOCK.RELEASE b holder").int(), 0);
    let got = tokens(&waiting.reply());
    assert_eq!(got.len(), 2);
    assert_eq!(owner_of(&mut c, "a").as_deref(), Some("o1"));
    assert_eq!(owner_of(&mut c, "b").as_deref(), Some("o1"));
    assert_eq!(c.q("RLOCK.INFO a").field("token").int(), got[0]);
    assert_eq!(c.q("RLOCK.INFO b").field("token").int(), got[1]);
    assert_eq!(server.blocked_clients(), 1, "o2 waits for o1's a");
    c.q("RLOCK.RELEASEALL 2 a b o1");
    assert!(behind.reply().int() > got[1], "then o2 gets a");
    server.assert_no_crash();
}

#[test]
fn a_request_that_times_out_leaves_every_queue_and_those_behind_go_on() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE b holder PX 60000");
    let group = Pending::send(&server, "RLOCK.ACQUIREALL 2 a b o1 WAIT 1500");
    server.wait_blocked(1);
    let behind = Pending::send(&server, "RLOCK.ACQUIRE a o2 PX 60000 WAIT 10000").reply_when();
    server.wait_blocked(2);
    let (nil, timed_out) = group.reply_when().join().expect("o1");
    assert!(nil.is_nil());
    let (token, at) = behind.join().expect("o2");
    assert!(token.int() > 0, "o2 gets the free a once o1's request left");
    let after = at.saturating_duration_since(timed_out);
    assert!(after < Duration::from_millis(500), "{after:?}");
    assert_eq!(c.q("RLOCK.INFO b").field("waiters").int(), 0);
    assert_eq!(server.info_field("rlock", "rlock_waiters"), "0");
}

#[test]
fn a_cancelled_or_disconnected_request_leaves_every_queue() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE c holder PX 60000");
    let mut gone = Pending::send(&server, "RLOCK.ACQUIREALL 2 a c o1 WAIT 0");
    server.wait_blocked(1);
    assert_eq!(c.q("RLOCK.INFO c").field("waiters").int(), 1);
    // Cancelling it through any of its keys takes it out of all.
    assert_eq!(c.q("RLOCK.CANCEL c o1").int(), 1);
    assert!(gone.conn.read().expect("nil").is_nil());
    let _again = Pending::send(&server, "RLOCK.ACQUIREALL 2 a c o1 WAIT 0");
    server.wait_blocked(1);
    let closing = Pending::send(&server, "RLOCK.ACQUIREALL 2 c b o3 WAIT 0");
    server.wait_blocked(2);
    drop(closing);
    common::wait_until("o3's request left", || server.blocked_clients() == 1);
    assert_eq!(c.q("RLOCK.INFO c").field("waiters").int(), 1);
    assert_eq!(server.info_field("rlock", "rlock_locks_with_waiters"), "2");
    assert_eq!(
        c.q("RLOCK.ACQUIRE b o4").int() > 0,
        true,
        "b has nobody waiting now"
    );
}

#[test]
fn notify_tells_one_grant_per_key_in_order() {
    let server = Server::start();
    let mut sub = server.conn();
    let id = sub.q("CLIENT ID").int();
    let channel = sub.q("RLOCK.CHANNEL").text();
    sub.cmd(&["SUBSCRIBE", &channel]);
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE y holder PX 60000");
    let reply = c.q(&format!(
        "RLOCK.ACQUIREALL 2 y x o1 PX 60000 WAIT 5000 NOTIFY {id}"
    ));
    assert_eq!(reply.text(), "WAITING");
    c.q("RLOCK.RELEASE y holder");
    sub.set_read_timeout(Some(Duration::from_secs(5)));
    let mut seen = Vec::new();
    for _ in 0..2 {
        let message = sub.read().expect("message").items()[2].text();
        seen.push(message);
    }
    let y = c.q("RLOCK.INFO y").field("token").int();
    let x = c.q("RLOCK.INFO x").field("token").int();
    assert_eq!(
        seen,
        [
            format!("granted lock {y} 1 y o1"),
            format!("granted lock {x} 1 x o1")
        ]
    );
}

#[test]
fn deadlock_through_a_request_for_several_keys() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE b o2 PX 60000");
    // o1 heads a's queue (a is free) and waits for b, held by o2.
    let _o1 = Pending::send(&server, "RLOCK.ACQUIREALL 2 a b o1 PX 60000 WAIT 10000");
    server.wait_blocked(1);
    // o2 asking for a would wait behind o1, which waits for o2.
    let started = Instant::now();
    let reply = c.q("RLOCK.ACQUIRE a o2 WAIT 10000");
    let took = started.elapsed();
    assert_eq!(
        reply.err(),
        "DEADLOCK this wait would close a cycle: o2 waits for a held by o1; o1 waits for b held by o2"
    );
    // At once, not after the 10 s wait (a wide bound: a loaded machine is slow, not 10 s slow).
    assert!(took < Duration::from_millis(1000), "{took:?}");
    // And the request that closes a cycle is refused whole.
    c.q("RLOCK.ACQUIRE x o3 PX 60000");
    c.q("RLOCK.ACQUIRE y o4 PX 60000");
    let _o3 = Pending::send(&server, "RLOCK.ACQUIRE y o3 PX 60000 WAIT 10000");
    server.wait_blocked(2);
    let before = snapshot(&mut c);
    let reply = c.q("RLOCK.ACQUIREALL 2 z x o4 WAIT 10000");
    assert!(reply.err().starts_with("DEADLOCK"), "{reply:?}");
    assert_eq!(snapshot(&mut c), before);
    assert_eq!(c.q("RLOCK.INFO x").field("waiters").int(), 0);
}

#[test]
fn keys_are_declared_for_cluster_and_acl() {
    let server = Server::start();
    let mut c = server.conn();
    let keys = c.q("COMMAND GETKEYS RLOCK.ACQUIREALL 3 a b c o PX 10");
    assert_eq!(
        keys.items().iter().map(Value::text).collect::<Vec<_>>(),
        ["a", "b", "c"]
    );
    let keys = c.q("COMMAND GETKEYS RLOCK.RELEASEALL 2 a b o");
    assert_eq!(keys.items().len(), 2);
    c.q("ACL SETUSER limited on >pw ~a* +@all");
    let mut limited = server.conn();
    limited.q("AUTH limited pw");
    assert!(limited.q("RLOCK.ACQUIREALL 2 a1 a2 o").items().len() == 2);
    let refused = limited.q("RLOCK.ACQUIREALL 2 a3 b1 o");
    assert!(refused.err().starts_with("NOPERM"), "{refused:?}");
    assert_eq!(c.q("EXISTS a3").int(), 0);
}

/// What each of the 8 keys' holder is, read atomically.
const HOLDERS: &str = "local r = {} for i, k in ipairs(KEYS) do local o = '' \
    for _, f in ipairs(redis.call('HKEYS', k)) do if string.sub(f, 1, 6) ~= 'rlock:' then o = f end end \
    r[i] = o end return r";

/// 64 clients each take random pairs of 8 keys for a while: no partial holding is ever seen,
/// every request is served, and two requests that share a key get it in the order they came.
#[test]
fn random_pairs_under_contention_are_served_whole_and_in_order() {
    let server = Server::start();
    let keys: Vec<String> = (0..8).map(|i| format!("k{i}")).collect();
    let run_for = Duration::from_secs(
        std::env::var("RLOCK_PAIRS_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(10),
    );
    let seed: u64 = std::env::var("RLOCK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261125);
    println!("seed {seed} (RLOCK_SEED to replay), {run_for:?}");
    let deadline = Instant::now() + run_for;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let observer = {
        let (mut c, stop, keys) = (server.conn(), stop.clone(), keys.clone());
        thread::spawn(move || {
            let mut looks = 0u64;
            let mut args = vec!["EVAL", HOLDERS, "8"];
            args.extend(keys.iter().map(String::as_str));
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let holders = c.cmd(&args).items();
                let mut counts: HashMap<String, usize> = HashMap::new();
                for h in holders.iter().map(Value::text).filter(|h| !h.is_empty()) {
                    *counts.entry(h).or_default() += 1;
                }
                for (owner, n) in counts {
                    assert_eq!(n, 2, "{owner} holds {n} of its 2 keys: {holders:?}");
                }
                looks += 1;
            }
            looks
        })
    };
    let clients: Vec<_> = (0..64u64)
        .map(|n| {
            let (mut c, mut sub, keys) = (server.conn(), server.conn(), keys.clone());
            thread::spawn(move || {
                let id = sub.q("CLIENT ID").int();
                let channel = sub.q("RLOCK.CHANNEL").text();
                sub.cmd(&["SUBSCRIBE", &channel]);
                sub.set_read_timeout(Some(Duration::from_secs(30)));
                let owner = format!("client{n}");
                let mut state = seed ^ (n + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let mut served = Vec::new();
                while Instant::now() < deadline {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let i = (state % 8) as usize;
                    let j = (i + 1 + (state >> 8) as usize % 7) % 8;
                    let (a, b) = (&keys[i], &keys[j]);
                    // The ticket and the request in one step: the ticket is the arrival order.
                    c.cmd(&["MULTI"]);
                    c.cmd(&["INCR", "ticket"]);
                    let id = id.to_string();
                    c.cmd(&[
                        "RLOCK.ACQUIREALL",
                        "2",
                        a,
                        b,
                        &owner,
                        "PX",
                        "30000",
                        "WAIT",
                        "0",
                        "NOTIFY",
                        &id,
                    ]);
                    let done = c.cmd(&["EXEC"]).items();
                    let ticket = done[0].int();
                    let got = match &done[1] {
                        Value::Simple(w) if w == "WAITING" => (0..2)
                            .map(|_| {
                                let m = sub.read().expect("granted within 30 s").items()[2].text();
                                let words: Vec<&str> = m.split(' ').collect();
                                assert_eq!(words[0], "granted", "{m}");
                                words[2].parse::<i64>().expect("token")
                            })
                            .collect(),
                        tokens => self::tokens(tokens),
                    };
                    served.push((ticket, [(i, got[0]), (j, got[1])]));
                    let released = c.cmd(&["RLOCK.RELEASEALL", "2", a, b, &owner]).items();
                    assert_eq!((released[0].int(), released[1].int()), (0, 0));
                }
                served
            })
        })
        .collect();
    let mut by_key: HashMap<usize, Vec<(i64, i64)>> = HashMap::new();
    let mut requests = 0;
    for client in clients {
        for (ticket, grants) in client.join().expect("a client failed") {
            requests += 1;
            for (key, token) in grants {
                by_key.entry(key).or_default().push((ticket, token));
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let looks = observer.join().expect("a partial holding was seen");
    for (key, mut grants) in by_key {
        grants.sort();
        for pair in grants.windows(2) {
            assert!(
                pair[0].1 < pair[1].1,
                "k{key}: ticket {} got token {} after ticket {} got {}",
                pair[1].0,
                pair[1].1,
                pair[0].0,
                pair[0].1
            );
        }
    }
    println!("{requests} requests served in order, {looks} atomic looks at all 8 keys");
    assert!(requests > 64, "{requests}");
    assert_eq!(server.stat("deadlocks"), 0);
    server.assert_no_crash();
}

/// A grant to a waiting request is written as plain commands, key by key: a replica without
/// the module holds the same locks.
#[test]
fn a_module_less_replica_holds_the_same_keys() {
    let master = Server::builder().master();
    let replica = Server::builder().without_module().replica_of(&master);
    let mut c = master.conn();
    c.q("RLOCK.ACQUIREALL 2 a b o1 PX 60000");
    c.q("RLOCK.ACQUIRE c holder PX 60000");
    let waiting = Pending::send(&master, "RLOCK.ACQUIREALL 2 c d o2 PX 60000 WAIT 10000");
    master.wait_blocked(1);
    c.q("RLOCK.RELEASE c holder");
    assert_eq!(tokens(&waiting.reply()).len(), 2);
    common::sync_replica(&mut c);
    let (ours, theirs) = (snapshot(&mut c), snapshot(&mut replica.conn()));
    assert_eq!(ours, theirs);
    assert_eq!(ours.len(), 4, "a, b, c and d: {ours:?}");
}

/// Found by the model (tests/model/multikey.rs): a request waiting behind others on a key its
/// owner holds enters as soon as they leave, though that key never becomes free.
#[test]
fn a_request_behind_others_on_its_own_key_enters_when_they_leave() {
    let server = Server::start();
    let mut c = server.conn();
    let held = c.q("RLOCK.ACQUIRE k2 o3 PX 60000").int();
    c.q("RLOCK.ACQUIRE k0 o4 PX 60000");
    let _o0 = Pending::send(&server, "RLOCK.ACQUIRE k2 o0 PX 60000 WAIT 60000");
    server.wait_blocked(1);
    let o3 = Pending::send(&server, "RLOCK.ACQUIREALL 2 k0 k2 o3 PX 60000 WAIT 60000");
    server.wait_blocked(2);
    // k0 frees, but o3 waits behind o0 on k2: nobody enters.
    assert_eq!(c.q("RLOCK.RELEASE k0 o4").int(), 0);
    assert_eq!(server.blocked_clients(), 2);
    assert_eq!(c.q("EXISTS k0").int(), 0);
    // o0 leaves: o3 heads both queues, k0 free and k2 its own.
    assert_eq!(c.q("RLOCK.CANCEL k2 o0").int(), 1);
    let got = tokens(&o3.reply());
    assert_eq!(got[1], held, "k2 re-entered keeps its token");
    assert_eq!(c.q("RLOCK.INFO k2").field("holds").int(), 2);
    assert_eq!(owner_of(&mut c, "k0").as_deref(), Some("o3"));
    // A newcomer re-enters a key it holds whoever waits there, as RLOCK.ACQUIRE does.
    let _o1 = Pending::send(&server, "RLOCK.ACQUIRE k2 o1 PX 60000 WAIT 60000");
    server.wait_blocked(1);
    let again = tokens(&c.q("RLOCK.ACQUIREALL 2 k2 k5 o3 PX 60000"));
    assert_eq!(again[0], held);
}

/// `WATCHDOG` binds every key to the connection: when it closes, each goes to its next waiter.
#[test]
fn a_watchdog_request_lives_and_ends_with_its_connection() {
    let server = Server::start();
    let mut c = server.conn();
    let mut holder = server.conn();
    assert_eq!(
        tokens(&holder.q("RLOCK.ACQUIREALL 2 a b o1 WATCHDOG")).len(),
        2
    );
    assert_eq!(server.info_field("rlock", "rlock_watchdog_locks"), "2");
    let on_a = Pending::send(&server, "RLOCK.ACQUIRE a o2 PX 60000 WAIT 10000");
    let on_b = Pending::send(&server, "RLOCK.ACQUIRE b o3 PX 60000 WAIT 10000");
    server.wait_blocked(2);
    drop(holder);
    assert!(on_a.reply().int() > 0);
    assert!(on_b.reply().int() > 0);
    assert_eq!(owner_of(&mut c, "a").as_deref(), Some("o2"));
    assert_eq!(owner_of(&mut c, "b").as_deref(), Some("o3"));
}
