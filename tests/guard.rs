//! Writes guarded by the lock (`RLOCK.GUARD`), the leader query (`RLOCK.LEADER`) and holder
//! changes as keyspace events: what election and fenced writes are built on.

mod common;
use common::cluster::Cluster;
use common::{snapshot, wait_until, Conn, Server, Value};

fn token_of(reply: Value) -> String {
    reply.int().to_string()
}

#[test]
fn a_guarded_write_runs_only_for_the_holder_with_its_token() {
    let server = Server::start();
    let mut c = server.conn();
    let token = token_of(c.q("RLOCK.ACQUIRE l w1 PX 10000"));
    assert_eq!(
        c.q(&format!("RLOCK.GUARD l w1 {token} SET k v1")).text(),
        "OK"
    );
    assert_eq!(c.q("GET k").text(), "v1");
    // The inner command's own reply comes back, whatever its type.
    assert_eq!(
        c.q(&format!("RLOCK.GUARD l w1 {token} INCRBY n 5")).int(),
        5
    );

    let refused = [
        (
            format!(
                "RLOCK.GUARD l w1 {} SET k v2",
                token.parse::<i64>().unwrap() - 1
            ),
            "NOTOWNER",
        ),
        (format!("RLOCK.GUARD l w2 {token} SET k v2"), "NOTOWNER"),
        (format!("RLOCK.GUARD free w1 {token} SET k v2"), "NOTOWNER"),
        (
            format!("RLOCK.GUARD l w1 {token} GET k"),
            "ERR RLOCK.GUARD runs one write",
        ),
        (
            format!("RLOCK.GUARD l w1 {token} BLPOP q 0"),
            "ERR RLOCK.GUARD runs one write",
        ),
        (
            format!("RLOCK.GUARD l w1 {token} EVAL x 0"),
            "ERR RLOCK.GUARD runs one write",
        ),
        (
            format!("RLOCK.GUARD l w1 {token} SET k"),
            "ERR wrong number",
        ),
        (
            format!("RLOCK.GUARD l w1 abc SET k v2"),
            "ERR token must be an integer",
        ),
        ("RLOCK.GUARD l w1".to_string(), "ERR wrong number"),
    ];
    let before = snapshot(&mut c);
    for (line, error) in &refused {
        let reply = c.q(line);
        assert!(reply.err().starts_with(error), "{line}: {reply:?}");
    }
    assert_eq!(snapshot(&mut c), before, "a refused call changes nothing");

    c.q("HSET rw mode write");
    assert!(c
        .q(&format!("RLOCK.GUARD rw w1 {token} SET k v2"))
        .err()
        .starts_with("WRONGTYPE"));
    server.assert_no_crash();
}

/// A holder that paused past its lease (here: that sends its write after the lease ended and
/// someone else took the lock) is refused; the new holder's write goes through.
#[test]
fn a_holder_past_its_lease_is_refused_and_the_new_holder_writes() {
    let server = Server::start();
    let mut paused = server.conn();
    let mut next = server.conn();
    let old = token_of(paused.q("RLOCK.ACQUIRE l slow PX 100"));
    paused.q("SET balance 100");
    let waiting = common::Pending::send(&server, "RLOCK.ACQUIRE l fast PX 10000 WAIT 5000");
    let new = token_of(waiting.reply());
    let stale = paused.q(&format!("RLOCK.GUARD l slow {old} SET balance 0"));
    assert!(stale.err().starts_with("NOTOWNER"), "{stale:?}");
    assert_eq!(next.q("GET balance").text(), "100", "the key is unchanged");
    assert_eq!(
        next.q(&format!("RLOCK.GUARD l fast {new} SET balance 150"))
            .text(),
        "OK"
    );
    assert_eq!(next.q("GET balance").text(), "150");
}

#[test]
fn the_inner_command_is_checked_against_the_callers_acl() {
    let server = Server::start();
    let mut admin = server.conn();
    admin.q("ACL SETUSER svc on >pw resetkeys ~orders:* -@all +rlock.acquire +rlock.guard +set");
    admin.q("ACL SETUSER noset on >pw resetkeys ~orders:* -@all +rlock.acquire +rlock.guard");
    let mut svc = server.conn();
    assert_eq!(svc.q("AUTH svc pw").text(), "OK");
    let token = token_of(svc.q("RLOCK.ACQUIRE orders:l w PX 10000"));
    assert_eq!(
        svc.q(&format!("RLOCK.GUARD orders:l w {token} SET orders:1 a"))
            .text(),
        "OK"
    );
    let other_key = svc.q(&format!("RLOCK.GUARD orders:l w {token} SET payments:1 a"));
    assert!(other_key.err().starts_with("NOPERM"), "{other_key:?}");
    assert_eq!(admin.q("EXISTS payments:1").int(), 0);

    let mut noset = server.conn();
    assert_eq!(noset.q("AUTH noset pw").text(), "OK");
    let token = token_of(noset.q("RLOCK.ACQUIRE orders:m w PX 10000"));
    let no_command = noset.q(&format!("RLOCK.GUARD orders:m w {token} SET orders:2 a"));
    assert!(no_command.err().starts_with("NOPERM"), "{no_command:?}");
    assert_eq!(admin.q("EXISTS orders:2").int(), 0);
}

#[test]
fn the_inner_write_replicates_and_reaches_the_aof_as_itself() {
    let master = Server::builder()
        .arg("appendonly", "yes")
        .arg("appendfsync", "always")
        .master();
    let replica = Server::builder().without_module().replica_of(&master);
    let mut c = master.conn();
    let token = token_of(c.q("RLOCK.ACQUIRE l w PX 60000"));
    c.q(&format!("RLOCK.GUARD l w {token} HSET h f v"));
    c.q(&format!("RLOCK.GUARD l w {token} SET s x"));
    common::sync_replica(&mut c);
    let mut r = replica.conn();
    assert_eq!(r.q("HGET h f").text(), "v");
    assert_eq!(r.q("GET s").text(), "x");
    let aof = std::fs::read_dir(&master.dir)
        .expect("dir")
        .flatten()
        .flat_map(|e| {
            let p = e.path();
            if p.is_dir() {
                std::fs::read_dir(p)
                    .map(|d| d.flatten().map(|e| e.path()).collect())
                    .unwrap_or_default()
            } else {
                vec![p]
            }
        })
        .filter(|p| p.to_string_lossy().contains(".aof"))
        .map(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned())
        .collect::<String>();
    assert!(aof.contains("HSET"), "the inner write is in the AOF");
    assert!(
        !aof.to_lowercase().contains("rlock.guard"),
        "the guard itself is not"
    );
}

#[test]
fn in_a_cluster_the_inner_keys_must_share_the_lock_slot() {
    let cluster = Cluster::start();
    let mut client = cluster.client();
    let token = token_of(client.cmd(&["RLOCK.ACQUIRE", "{acct}:lock", "w", "PX", "60000"]));
    let ok = client.cmd(&[
        "RLOCK.GUARD",
        "{acct}:lock",
        "w",
        &token,
        "SET",
        "{acct}:balance",
        "1",
    ]);
    assert_eq!(ok.text(), "OK");
    let cross = client.cmd(&[
        "RLOCK.GUARD",
        "{acct}:lock",
        "w",
        &token,
        "SET",
        "other",
        "1",
    ]);
    assert!(cross.err().starts_with("CROSSSLOT"), "{cross:?}");
    let mut node = cluster.nodes[0].conn();
    let keys = node
        .q("COMMAND GETKEYS RLOCK.GUARD l w 1 MSET a 1 b 2")
        .items();
    let keys: Vec<String> = keys.iter().map(Value::text).collect();
    assert_eq!(keys, ["l", "a", "b"]);
}

#[test]
fn leader_answers_the_holder_its_term_and_lease() {
    let server = Server::start();
    let mut c = server.conn();
    assert!(c.q("RLOCK.LEADER l").is_nil());
    let token = c.q("RLOCK.ACQUIRE l node-a:7000 PX 10000").int();
    let leader = c.q("RLOCK.LEADER l");
    assert_eq!(leader.field("owner").text(), "node-a:7000");
    assert_eq!(leader.field("token").int(), token);
    let ttl = leader.field("ttl").int();
    assert!(ttl > 9000 && ttl <= 10000, "{ttl}");
    // A lock taken by a Redisson client: its holder, without a token.
    c.q("HSET r 3e1c:1 1");
    c.q("PEXPIRE r 5000");
    let redisson = c.q("RLOCK.LEADER r");
    assert_eq!(redisson.field("owner").text(), "3e1c:1");
    assert!(redisson.field("token").is_nil());
    assert!(c.q("RLOCK.LEADER").err().starts_with("ERR wrong number"));
}

/// Reads keyspace notifications for `key` from a subscribed RESP2 connection.
fn events(sub: &mut Conn, n: usize) -> Vec<String> {
    sub.set_read_timeout(Some(std::time::Duration::from_secs(5)));
    (0..n)
        .map(|_| sub.read().expect("an event").items()[2].text())
        .collect()
}

#[test]
fn holder_changes_are_keyspace_events_of_the_module_class() {
    let server = Server::start();
    let mut c = server.conn();
    let mut sub = server.conn();
    sub.q("SUBSCRIBE __keyspace@0__:l");
    // Off by default: nothing is published for the acquire below.
    c.q("RLOCK.ACQUIRE l a PX 10000");
    c.q("RLOCK.RELEASE l a");
    assert_eq!(c.q("CONFIG SET notify-keyspace-events Kd").text(), "OK");
    c.q("RLOCK.ACQUIRE l a PX 10000");
    let waiter = common::Pending::send(&server, "RLOCK.ACQUIRE l b PX 10000 WAIT 5000");
    server.wait_blocked(1);
    c.q("RLOCK.RELEASE l a");
    waiter.reply();
    c.q("RLOCK.FORCERELEASE l");
    let mut holder = server.conn();
    holder.q("RLOCK.ACQUIRE l c WATCHDOG");
    drop(holder);
    assert_eq!(
        events(&mut sub, 6),
        [
            "rlock.acquired",
            "rlock.released",
            "rlock.acquired",
            "rlock.forced",
            "rlock.acquired",
            "rlock.dropped"
        ]
    );
    wait_until("the watchdog holding is gone", || {
        c.q("RLOCK.INFO l").is_nil()
    });
}
