//! Server-side waiting: FIFO handoff, timeouts, and wakeups on expiry, deletion and more.

mod common;
use common::{Conn, Pending, Server, Value};
use std::time::{Duration, Instant};

/// Queues `owners` behind the current holder of `key`, in this order.
fn queue_up(server: &Server, key: &str, owners: &[&str], extra: &str) -> Vec<Pending> {
    let already = server.blocked_clients();
    owners
        .iter()
        .enumerate()
        .map(|(i, owner)| {
            let waiter = Pending::send(server, &format!("RLOCK.ACQUIRE {key} {owner} {extra}"));
            server.wait_blocked(already + i as i64 + 1);
            waiter
        })
        .collect()
}

#[test]
fn waiters_are_served_in_arrival_order() {
    let server = Server::start();
    let mut c = server.conn();
    let mut last = c.q("RLOCK.ACQUIRE k holder").int();
    let owners = ["w1", "w2", "w3", "w4", "w5"];
    let waiters = queue_up(&server, "k", &owners, "WAIT 0");
    assert_eq!(c.q("RLOCK.INFO k").field("waiters").int(), 5);
    let mut holder = "holder".to_string();
    for (owner, waiter) in owners.iter().zip(waiters) {
        assert_eq!(c.cmd(&["RLOCK.RELEASE", "k", &holder]).int(), 0);
        let token = waiter.reply().int();
        assert!(token > last, "tokens rise along the queue");
        last = token;
        assert_eq!(c.q("RLOCK.INFO k").field("owner").text(), *owner);
        holder = owner.to_string();
    }
    assert_eq!(server.blocked_clients(), 0);
    assert_eq!(server.stat("handoffs"), 5);
}

#[test]
fn a_wait_times_out_with_nil_close_to_its_deadline() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k holder");
    let started = Instant::now();
    assert!(c.q("RLOCK.ACQUIRE k w WAIT 250").is_nil());
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(250), "{waited:?}");
    assert!(
        waited < Duration::from_millis(600),
        "{waited:?} (generous bound)"
    );
    assert_eq!(c.q("RLOCK.INFO k").field("waiters").int(), 0);
    assert_eq!(c.q("RLOCK.INFO k").field("owner").text(), "holder");
    assert_eq!(server.stat("wait_timeouts"), 1);
    assert_eq!(server.blocked_clients(), 0);
}

#[test]
fn a_dead_holders_lease_end_wakes_the_next_waiter() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k crashed PX 300");
    let lease_end = Instant::now() + Duration::from_millis(300);
    let token = c.q("RLOCK.ACQUIRE k next WAIT 5000").int();
    let late = Instant::now().saturating_duration_since(lease_end);
    assert!(token > 0);
    assert!(
        late < Duration::from_millis(150),
        "granted {late:?} after the lease end (generous bound)"
    );
    assert_eq!(c.q("RLOCK.INFO k").field("owner").text(), "next");
    assert_eq!(server.stat("expiry_wakeups"), 1);
}

#[test]
fn deleting_the_lock_key_hands_it_over() {
    let server = Server::start();
    for (i, deletion) in [
        "DEL k",
        "UNLINK k",
        "RENAME k elsewhere",
        "FLUSHDB",
        "FLUSHALL",
    ]
    .iter()
    .enumerate()
    {
        let mut c = server.conn();
        c.q("FLUSHALL");
        c.q("RLOCK.ACQUIRE k holder");
        let waiter = queue_up(&server, "k", &["next"], "WAIT 5000").remove(0);
        c.q(deletion);
        assert!(waiter.reply().int() > 0, "{deletion}");
        assert_eq!(
            c.q("RLOCK.INFO k").field("owner").text(),
            "next",
            "{deletion}"
        );
        assert_eq!(server.stat("handoffs"), i as i64 + 1);
    }
}

#[test]
fn a_lock_overwritten_by_another_type_fails_its_waiters_by_the_old_lease_end() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k holder PX 300");
    let waiters = queue_up(&server, "k", &["a", "b"], "WAIT 5000");
    c.q("SET k not-a-lock");
    let started = Instant::now();
    for waiter in waiters {
        assert!(waiter.reply().err().starts_with("WRONGTYPE"));
    }
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.blocked_clients(), 0);
}

#[test]
fn waiters_that_leave_are_never_handed_the_lock() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k holder");
    let mut waiters = queue_up(
        &server,
        "k",
        &["gone", "killed", "unblocked", "last"],
        "WAIT 0",
    );
    let last = waiters.pop().expect("last");
    let unblocked = waiters.pop().expect("unblocked");
    let killed = waiters.pop().expect("killed");
    drop(waiters); // "gone" disconnects
    server.wait_blocked(3);
    let mut killed_conn = killed.conn;
    let id = {
        // CLIENT ID of the killed waiter: ask its peer address via CLIENT LIST.
        let list = c.q("CLIENT LIST").text();
        let blocked: Vec<&str> = list
            .lines()
            .filter(|l| l.contains("cmd=rlock.acquire"))
            .collect();
        assert_eq!(blocked.len(), 3);
        let field = |line: &str, name: &str| {
            line.split(' ')
                .find_map(|kv| kv.strip_prefix(name))
                .map(str::to_string)
                .expect("field")
        };
        let mut ids: Vec<i64> = blocked
            .iter()
            .map(|l| field(l, "id=").parse().expect("id"))
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(
        c.cmd(&["CLIENT", "KILL", "ID", &id[0].to_string()]).int(),
        1
    );
    assert!(
        killed_conn.read().is_err(),
        "the killed waiter's connection is closed"
    );
    server.wait_blocked(2);
    assert_eq!(c.cmd(&["CLIENT", "UNBLOCK", &id[1].to_string()]).int(), 1);
    assert!(unblocked.reply().is_nil());
    server.wait_blocked(1);
    assert_eq!(c.q("RLOCK.INFO k").field("waiters").int(), 1);
    assert_eq!(c.q("RLOCK.RELEASE k holder").int(), 0);
    assert!(last.reply().int() > 0);
    assert_eq!(c.q("RLOCK.INFO k").field("owner").text(), "last");
    assert_eq!(server.stat("waiters"), 0);
    assert_eq!(server.stat("locks_with_waiters"), 0);
}

#[test]
fn wait_does_not_block_inside_multi_or_lua() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k holder");
    c.q("MULTI");
    c.q("RLOCK.ACQUIRE k other WAIT 0");
    assert_eq!(c.q("EXEC").items(), vec![Value::Nil]);
    let script = "return redis.call('rlock.acquire', KEYS[1], ARGV[1], 'WAIT', '0')";
    assert!(c.cmd(&["EVAL", script, "1", "k", "other"]).is_nil());
    assert_eq!(server.blocked_clients(), 0);
}

#[test]
fn the_holder_reenters_while_others_wait() {
    let server = Server::start();
    let mut c = server.conn();
    let token = c.q("RLOCK.ACQUIRE k holder").int();
    let waiter = queue_up(&server, "k", &["next"], "WAIT 5000").remove(0);
    assert_eq!(c.q("RLOCK.ACQUIRE k holder").int(), token);
    assert_eq!(c.q("RLOCK.RELEASE k holder").int(), 1);
    assert_eq!(server.blocked_clients(), 1);
    assert_eq!(c.q("RLOCK.RELEASE k holder").int(), 0);
    assert!(waiter.reply().int() > token);
}

#[test]
fn nobody_barges_ahead_of_the_queue() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k holder");
    let waiter = queue_up(&server, "k", &["queued"], "WAIT 5000").remove(0);
    // The DEL frees the lock, and the intruder asks in the same transaction, before the
    // deferred handoff could run: the queue is still served first.
    c.q("MULTI");
    c.q("DEL k");
    c.q("RLOCK.ACQUIRE k intruder");
    let replies = c.q("EXEC").items();
    assert!(replies[1].is_nil(), "the intruder got {:?}", replies[1]);
    assert!(waiter.reply().int() > 0);
    assert_eq!(c.q("RLOCK.INFO k").field("owner").text(), "queued");
}

#[test]
fn a_chain_of_500_waiters_is_served_in_order() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE chain holder");
    let mut waiters: Vec<(String, Conn)> = Vec::new();
    for i in 0..500 {
        let owner = format!("w{i}");
        let mut conn = server.conn();
        conn.cmd(&["CLIENT", "SETNAME", &owner]);
        conn.send(&["RLOCK.ACQUIRE", "chain", &owner, "WAIT", "0"])
            .expect("send");
        waiters.push((owner, conn));
        // Arrival order is what the server saw: wait for each to queue before the next.
        server.wait_blocked(i + 1);
    }
    c.q("RLOCK.RELEASE chain holder");
    let mut last = 0;
    for (owner, conn) in waiters.iter_mut() {
        let token = conn.read().expect("grant").int();
        assert!(token > last, "{owner} got {token} after {last}");
        last = token;
        assert_eq!(
            conn.cmd(&["RLOCK.RELEASE", "chain", owner]).int(),
            0,
            "{owner}"
        );
    }
    assert_eq!(server.blocked_clients(), 0);
    assert!(c.q("RLOCK.INFO chain").is_nil());
    assert_eq!(server.stat("handoffs"), 500);
}

#[test]
fn info_counts_what_happened() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k a");
    c.q("RLOCK.ACQUIRE k a");
    c.q("RLOCK.ACQUIRE k b");
    let waiters = queue_up(&server, "k", &["w"], "WAIT 5000");
    assert_eq!(server.stat("waiters"), 1);
    assert_eq!(server.stat("locks_with_waiters"), 1);
    c.q("RLOCK.FORCERELEASE k");
    for w in waiters {
        w.reply();
    }
    assert_eq!(server.stat("acquisitions"), 2);
    assert_eq!(server.stat("reentries"), 1);
    assert_eq!(server.stat("contended"), 2);
    assert_eq!(server.stat("handoffs"), 1);
    assert_eq!(server.stat("force_releases"), 1);
    assert_eq!(server.stat("waiters"), 0);
}

#[test]
fn waiters_on_many_keys_are_each_served() {
    let server = Server::start();
    let mut c = server.conn();
    let keys: Vec<String> = (0..50).map(|i| format!("key:{i}")).collect();
    for k in &keys {
        c.cmd(&["RLOCK.ACQUIRE", k, "holder", "PX", "200"]);
    }
    let waiters: Vec<Pending> = keys
        .iter()
        .map(|k| Pending::send(&server, &format!("RLOCK.ACQUIRE {k} next WAIT 5000")))
        .collect();
    server.wait_blocked(50);
    assert_eq!(server.stat("locks_with_waiters"), 50);
    for w in waiters {
        assert!(w.reply().int() > 0);
    }
    assert_eq!(server.stat("locks_with_waiters"), 0);
}

/// `SWAPDB`: a waiter waits for its key in its own db, whatever that holds now; a key that the
/// swap left free goes to its first waiter at once, a held one keeps it waiting.
#[test]
fn after_swapdb_waiters_are_served_from_what_their_db_now_holds() {
    let server = Server::start();
    let mut c = server.conn();
    assert!(c.q("RLOCK.ACQUIRE k holder PX 60000").int() > 0);
    let freed = Pending::send(&server, "RLOCK.ACQUIRE k waiter PX 60000 WAIT 5000");
    server.wait_blocked(1);
    let mut other = server.conn();
    other.q("SELECT 1");
    assert!(other.q("RLOCK.ACQUIRE k other-holder PX 60000").int() > 0);
    let held = Pending::send(&server, "SELECT 1"); // db 1's waiter, on a connection of its own
    let mut held = held.conn;
    held.read().expect("SELECT reply");
    held.send(&[
        "RLOCK.ACQUIRE",
        "k",
        "waiter-1",
        "PX",
        "60000",
        "WAIT",
        "5000",
    ])
    .expect("send");
    server.wait_blocked(2);
    // db 0's k is now db 1's (held), db 1's k is now db 0's (held as well): both still wait.
    assert_eq!(c.q("SWAPDB 0 1").text(), "OK");
    // Free db 1's k (formerly db 0's): its waiter gets it at once.
    assert_eq!(other.q("RLOCK.FORCERELEASE k").int(), 1);
    assert!(held.read().expect("granted").int() > 0);
    assert_eq!(
        server.blocked_clients(),
        1,
        "db 0's waiter still waits for other-holder"
    );
    // An empty db swapped in frees db 0's k: its waiter is served without any other event.
    assert_eq!(c.q("SWAPDB 0 2").text(), "OK");
    assert!(freed.reply().int() > 0);
    server.assert_no_crash();
}
