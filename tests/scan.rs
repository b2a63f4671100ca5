//! RLOCK.SCAN: which keys it lists, what it says of each, its order, filters and errors.

mod common;
use common::{Conn, Pending, Server, Value};
use std::collections::HashMap;
use std::thread::sleep;
use std::time::Duration;

#[derive(Debug)]
struct Entry {
    key: String,
    owner: String,
    holds: i64,
    held: i64,
    ttl: i64,
    waiters: i64,
}

/// One call: the next cursor and the entries, checked to be sorted longest-held first.
fn scan_once(c: &mut Conn, cursor: &str, options: &str) -> (String, Vec<Entry>) {
    let mut args = vec!["RLOCK.SCAN", cursor];
    args.extend(options.split_whitespace());
    let reply = c.cmd(&args);
    let [next, entries] = &reply.items()[..] else {
        panic!("expected [cursor, entries], got {reply:?}");
    };
    let entries: Vec<Entry> = entries
        .items()
        .iter()
        .map(|e| match &e.items()[..] {
            [key, owner, holds, held, ttl, waiters] => Entry {
                key: key.text(),
                owner: owner.text(),
                holds: holds.int(),
                held: held.int(),
                ttl: ttl.int(),
                waiters: waiters.int(),
            },
            other => panic!("expected six fields, got {other:?}"),
        })
        .collect();
    let held: Vec<i64> = entries.iter().map(|e| e.held).collect();
    assert!(
        held.windows(2).all(|w| w[0] >= w[1]),
        "not longest-held first: {entries:?}"
    );
    (next.text(), entries)
}

/// Follows the cursor to 0; every lock must come back exactly once.
fn scan_all(c: &mut Conn, options: &str) -> HashMap<String, Entry> {
    let (mut cursor, mut all, mut calls) = ("0".to_string(), HashMap::new(), 0);
    loop {
        let (next, entries) = scan_once(c, &cursor, options);
        calls += 1;
        for e in entries {
            let key = e.key.clone();
            assert!(all.insert(key.clone(), e).is_none(), "{key} listed twice");
        }
        if next == "0" {
            break;
        }
        assert!(calls < 10_000, "the cursor never came back to 0");
        cursor = next;
    }
    all
}

fn keys(entries: &HashMap<String, Entry>) -> Vec<&str> {
    let mut keys: Vec<&str> = entries.keys().map(String::as_str).collect();
    keys.sort();
    keys
}

/// Keys that are not rlock locks: other types, a plain hash, a Redisson-protocol lock.
fn add_non_locks(c: &mut Conn) {
    c.q("SET str x");
    c.q("HSET plain f v");
    c.q("RPUSH list a");
    c.q("SADD set a");
    c.q("ZADD zset 1 a");
    c.q("HSET redisson 8743c9c0-0795-4907-87fd-6c719a6b4586:1 1");
    c.q("PEXPIRE redisson 60000");
}

#[test]
fn lists_every_lock_once_with_its_holder_lease_and_waiters() {
    let server = Server::start();
    let mut c = server.conn();
    let old = c.q("RLOCK.ACQUIRE old alice PX 60000").int();
    sleep(Duration::from_millis(60));
    c.q("RLOCK.ACQUIRE mid bob PX 60000");
    c.q("RLOCK.ACQUIRE mid bob PX 60000");
    c.q("PERSIST mid");
    sleep(Duration::from_millis(60));
    c.q("RLOCK.ACQUIRE new carol");
    for i in 0..40 {
        c.cmd(&["RLOCK.ACQUIRE", &format!("bulk:{i}"), "dave", "PX", "60000"]);
        c.cmd(&["SET", &format!("filler:{i}"), "x"]);
        c.cmd(&["HSET", &format!("hash:{i}"), "f", "v"]);
    }
    add_non_locks(&mut c);
    let waiter = Pending::send(&server, "RLOCK.ACQUIRE old w WAIT 0");
    server.wait_blocked(1);

    let info_held = c.q("RLOCK.INFO old").field("held").int();
    for options in ["", "COUNT 3", "COUNT 1000"] {
        let all = scan_all(&mut c, options);
        assert_eq!(all.len(), 43, "{options}: {:?}", keys(&all));
        let e = &all["old"];
        assert_eq!((e.owner.as_str(), e.holds, e.waiters), ("alice", 1, 1));
        assert!((50_000..=60_000).contains(&e.ttl), "{e:?}");
        assert!(e.held >= info_held && e.held < info_held + 5_000, "{e:?}");
        let e = &all["mid"];
        assert_eq!(
            (e.owner.as_str(), e.holds, e.ttl, e.waiters),
            ("bob", 2, -1, 0)
        );
        let e = &all["new"];
        assert_eq!((e.owner.as_str(), e.holds, e.waiters), ("carol", 1, 0));
        assert!((20_000..=30_000).contains(&e.ttl), "{e:?}");
        assert!(all["old"].held >= all["mid"].held + 50, "{all:?}");
        assert!(all["mid"].held >= all["new"].held + 50, "{all:?}");
        assert_eq!(all["bulk:7"].owner, "dave");
    }
    // The keyspace is small: one call with a large COUNT sees all of it, in order.
    let (next, entries) = scan_once(&mut c, "0", "COUNT 1000");
    assert_eq!(next, "0");
    let order: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(order[..2], ["old", "mid"]);
    // "new" came before the bulk locks, in the same millisecond as some of them at most.
    let new_at = order.iter().position(|k| *k == "new").expect("new listed");
    let ahead = &entries[2..new_at];
    assert!(
        ahead.iter().all(|e| e.held == entries[new_at].held),
        "{entries:?}"
    );

    // The lock as listed is the lock as it is: after a handoff, the waiter holds it.
    assert_eq!(c.q("RLOCK.RELEASE old alice").int(), 0);
    assert!(waiter.reply().int() > old);
    let all = scan_all(&mut c, "MATCH old");
    let e = &all["old"];
    assert_eq!((e.owner.as_str(), e.holds, e.waiters), ("w", 1, 0));
    assert!(e.held < 1_000, "{e:?}");
}

#[test]
fn minheld_and_match_filter() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE job:a alice");
    sleep(Duration::from_millis(100));
    c.q("RLOCK.ACQUIRE job:b bob");
    c.q("RLOCK.ACQUIRE other:c carol");
    assert_eq!(keys(&scan_all(&mut c, "")), ["job:a", "job:b", "other:c"]);
    assert_eq!(keys(&scan_all(&mut c, "MINHELD 80")), ["job:a"]);
    assert_eq!(keys(&scan_all(&mut c, "MINHELD 0")).len(), 3);
    assert!(scan_all(&mut c, "MINHELD 3600000").is_empty());
    assert_eq!(keys(&scan_all(&mut c, "MATCH job:*")), ["job:a", "job:b"]);
    assert_eq!(keys(&scan_all(&mut c, "match *:c COUNT 1")), ["other:c"]);
    assert!(scan_all(&mut c, "MATCH other:* MINHELD 80").is_empty());
    assert_eq!(
        keys(&scan_all(&mut c, "MINHELD 80 MATCH job:* COUNT 2")),
        ["job:a"]
    );
}

#[test]
fn keys_that_are_not_rlock_locks_are_not_listed() {
    let server = Server::start();
    let mut c = server.conn();
    add_non_locks(&mut c);
    c.q("HSET token-only rlock:token 5");
    assert!(scan_all(&mut c, "").is_empty());
    // A Redisson-protocol lock gets a token at its owner's next RLOCK.ACQUIRE: then it is listed.
    c.q("RLOCK.ACQUIRE redisson 8743c9c0-0795-4907-87fd-6c719a6b4586:1");
    let all = scan_all(&mut c, "");
    assert_eq!(keys(&all), ["redisson"]);
    assert_eq!(all["redisson"].holds, 2);
}

#[test]
fn bad_arguments_get_an_error_and_change_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k alice PX 60000");
    add_non_locks(&mut c);
    let before = common::snapshot(&mut c);
    let cases: &[(&[&str], &str)] = &[
        (&["RLOCK.SCAN"], "ERR wrong number of arguments"),
        (&["RLOCK.SCAN", "x"], "ERR invalid cursor"),
        (&["RLOCK.SCAN", "-1"], "ERR invalid cursor"),
        (&["RLOCK.SCAN", "0", "COUNT"], "ERR COUNT needs a value"),
        (
            &["RLOCK.SCAN", "0", "COUNT", "x"],
            "ERR COUNT must be an integer",
        ),
        (
            &["RLOCK.SCAN", "0", "COUNT", "0"],
            "ERR COUNT must be between 1 and 100000",
        ),
        (
            &["RLOCK.SCAN", "0", "COUNT", "100001"],
            "ERR COUNT must be between 1 and 100000",
        ),
        (
            &["RLOCK.SCAN", "0", "MINHELD", "-1"],
            "ERR MINHELD must be between 0 and",
        ),
        (
            &["RLOCK.SCAN", "0", "MINHELD", "1.5"],
            "ERR MINHELD must be an integer",
        ),
        (&["RLOCK.SCAN", "0", "MATCH"], "ERR MATCH needs a value"),
        (
            &["RLOCK.SCAN", "0", "MATCH", "a", "match", "b"],
            "ERR MATCH given more than once",
        ),
        (
            &["RLOCK.SCAN", "0", "COUNT", "5", "COUNT", "5"],
            "ERR COUNT given more than once",
        ),
        (
            &["RLOCK.SCAN", "0", "TYPE", "hash"],
            "ERR unknown option 'TYPE'",
        ),
    ];
    for (args, expected) in cases {
        let reply = c.cmd(args);
        assert!(reply.err().starts_with(expected), "{args:?}: {reply:?}");
    }
    assert_eq!(common::snapshot(&mut c), before);
    assert_eq!(keys(&scan_all(&mut c, "")), ["k"]);
}

#[test]
fn resp3_gets_the_same_nested_arrays() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k alice PX 60000");
    c.q("HELLO 3");
    let reply = c.q("RLOCK.SCAN 0 COUNT 100");
    let Value::Array(parts) = &reply else {
        panic!("expected an array, got {reply:?}");
    };
    assert_eq!(parts[0], Value::Bulk(b"0".to_vec()));
    let entries = parts[1].items();
    assert_eq!(entries.len(), 1);
    let entry = entries[0].items();
    assert_eq!(entry[0].text(), "k");
    assert_eq!(entry[1].text(), "alice");
    assert_eq!(entry[2], Value::Int(1));
    assert!(matches!(entry[3], Value::Int(held) if held >= 0));
    assert!(matches!(entry[4], Value::Int(ttl) if ttl > 50_000));
    assert_eq!(entry[5], Value::Int(0));
    assert_eq!(keys(&scan_all(&mut c, "MINHELD 0")), ["k"]);
}

#[test]
fn it_declares_no_key_and_runs_in_multi_and_scripts() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k alice");
    let info = c.q("COMMAND INFO rlock.scan").items()[0].items();
    assert_eq!(info[1].int(), -2, "arity");
    assert_eq!(
        (info[3].int(), info[4].int(), info[5].int()),
        (0, 0, 0),
        "key positions"
    );
    assert!(info[8].items().is_empty(), "key specs: {info:?}");
    assert!(c.q("COMMAND GETKEYS rlock.scan 0").err().starts_with("ERR"));
    let docs = c.q("COMMAND DOCS rlock.scan").items()[1].clone();
    assert!(docs.field("summary").text().contains("longest held first"));
    // The other commands keep their key at argv[1].
    assert_eq!(c.q("COMMAND GETKEYS rlock.info k").items()[0].text(), "k");

    c.q("MULTI");
    c.q("RLOCK.SCAN 0");
    let exec = c.q("EXEC").items();
    assert_eq!(exec[0].items()[1].items()[0].items()[0].text(), "k");
    let script = c.q("EVAL return(redis.call('rlock.scan','0')[2][1][2]) 0");
    assert_eq!(script.text(), "alice");
}

#[test]
fn in_a_cluster_each_node_lists_its_own_locks() {
    let cluster = common::cluster::Cluster::start();
    let mut client = cluster.client();
    let names: Vec<String> = (0..60).map(|i| format!("order:{i}")).collect();
    for name in &names {
        client.cmd(&["RLOCK.ACQUIRE", name, "worker-1", "PX", "60000"]);
    }
    let mut listed = Vec::new();
    for node in &cluster.nodes {
        let mut c = node.conn();
        let here = scan_all(&mut c, "COUNT 7");
        assert_eq!(here.len() as i64, c.q("DBSIZE").int(), "{}", node.port);
        for name in here.keys() {
            assert_eq!(client.port_of(name), node.port, "{name}");
        }
        listed.extend(here.into_keys());
    }
    listed.sort();
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(listed, expected);
}

/// The cost of one call over a large keyspace: 100,000 keys of which 10,000 are locks.
/// `cargo test --release --test scan -- --ignored --nocapture`
#[test]
#[ignore]
fn cost_of_one_scan_over_100k_keys() {
    let server = Server::start();
    let mut c = server.conn();
    let mut batch = Vec::new();
    for i in 0..100_000 {
        let key = format!("key:{i}");
        let args: Vec<&[u8]> = match i % 10 {
            0 => vec![
                b"RLOCK.ACQUIRE",
                key.as_bytes(),
                b"worker",
                b"PX",
                b"600000",
            ],
            1..=5 => vec![b"HSET", key.as_bytes(), b"field", b"value"],
            _ => vec![b"SET", key.as_bytes(), b"value"],
        };
        Conn::encode(&mut batch, &args);
        if i % 1000 == 999 {
            c.send_raw(&batch).expect("send");
            batch.clear();
            for _ in 0..1000 {
                assert!(!matches!(c.read().expect("reply"), Value::Error(_)));
            }
        }
    }
    assert_eq!(c.q("DBSIZE").int(), 100_000);
    let usec = |c: &mut Conn, name: &str| {
        let stats = c.q("INFO commandstats").text();
        stats
            .lines()
            .find(|l| l.starts_with(&format!("cmdstat_{name}:")))
            .unwrap_or_else(|| panic!("no {name} in {stats}"))
            .to_string()
    };
    c.q("CONFIG RESETSTAT");
    let (_, first) = scan_once(&mut c, "0", "COUNT 1000");
    println!(
        "one call: {} locks; {}",
        first.len(),
        usec(&mut c, "rlock.scan")
    );
    c.q("CONFIG RESETSTAT");
    let all = scan_all(&mut c, "COUNT 1000");
    assert_eq!(all.len(), 10_000);
    println!("full iteration: {}", usec(&mut c, "rlock.scan"));
    c.q("CONFIG RESETSTAT");
    let mut cursor = "0".to_string();
    loop {
        let reply = c.cmd(&["SCAN", &cursor, "COUNT", "1000", "TYPE", "hash"]);
        cursor = reply.items()[0].text();
        if cursor == "0" {
            break;
        }
    }
    println!(
        "plain SCAN COUNT 1000 TYPE hash, full iteration: {}",
        usec(&mut c, "scan")
    );
}
