//! The five commands' replies and their handling of bad input, on a real server.

mod common;
use common::{Server, Value};

#[test]
fn acquire_grants_a_free_lock_with_a_token_and_a_lease() {
    let server = Server::start();
    let mut c = server.conn();
    let token = c.q("RLOCK.ACQUIRE order:1 alice PX 10000").int();
    assert!(token > 0);
    assert_eq!(c.q("HGET order:1 alice").text(), "1");
    assert_eq!(c.q("HGET order:1 rlock:token").int(), token);
    let ttl = c.q("PTTL order:1").int();
    assert!((9000..=10000).contains(&ttl), "ttl {ttl}");
}

#[test]
fn acquire_uses_the_default_lease() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k alice");
    let ttl = c.q("PTTL k").int();
    assert!((29000..=30000).contains(&ttl), "ttl {ttl}");
}

#[test]
fn reentry_counts_holds_keeps_the_token_and_resets_the_lease() {
    let server = Server::start();
    let mut c = server.conn();
    let token = c.q("RLOCK.ACQUIRE k alice PX 1000").int();
    assert_eq!(c.q("RLOCK.ACQUIRE k alice PX 50000").int(), token);
    assert_eq!(c.q("HGET k alice").text(), "2");
    assert!(c.q("PTTL k").int() > 40000);
}

#[test]
fn a_lock_held_by_another_owner_replies_nil() {
    let server = Server::start();
    let mut c = server.conn();
    let token = c.q("RLOCK.ACQUIRE k alice").int();
    assert!(c.q("RLOCK.ACQUIRE k bob").is_nil());
    assert!(c.q("RLOCK.ACQUIRE k bob PX 100").is_nil());
    assert_eq!(c.q("RLOCK.INFO k").field("owner").text(), "alice");
    assert_eq!(c.q("RLOCK.INFO k").field("token").int(), token);
    assert!(c.q("HGET k bob").is_nil());
}

#[test]
fn tokens_rise_for_every_new_holder() {
    let server = Server::start();
    let mut c = server.conn();
    let mut last = 0;
    for owner in ["a", "b", "c", "d"] {
        let token = c.cmd(&["RLOCK.ACQUIRE", "k", owner]).int();
        assert!(token > last, "{token} after {last}");
        last = token;
        assert_eq!(c.cmd(&["RLOCK.RELEASE", "k", owner]).int(), 0);
    }
    c.q("RLOCK.ACQUIRE k e");
    c.q("RLOCK.FORCERELEASE k");
    assert!(c.q("RLOCK.ACQUIRE k f").int() > last);
}

#[test]
fn release_counts_down_then_frees_the_lock() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k alice");
    c.q("RLOCK.ACQUIRE k alice");
    assert!(c.q("RLOCK.RELEASE k bob").is_nil());
    assert_eq!(c.q("RLOCK.RELEASE k alice").int(), 1);
    assert_eq!(c.q("EXISTS k").int(), 1);
    assert_eq!(c.q("RLOCK.RELEASE k alice").int(), 0);
    assert_eq!(c.q("EXISTS k").int(), 0);
    assert!(c.q("RLOCK.RELEASE k alice").is_nil());
}

#[test]
fn a_full_release_publishes_redissons_unlock_message() {
    let server = Server::start();
    let mut sub = server.conn();
    sub.q("SUBSCRIBE redisson_lock__channel:{k}");
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k alice");
    c.q("RLOCK.ACQUIRE k alice");
    c.q("RLOCK.RELEASE k alice");
    c.q("RLOCK.RELEASE k alice");
    let message = sub.read().expect("message").items();
    assert_eq!(message[1].text(), "redisson_lock__channel:{k}");
    assert_eq!(message[2].text(), "0");
    // Only the full release published: the next message is the one from the next release.
    c.q("CONFIG SET rlock.redisson-publish no");
    c.q("RLOCK.ACQUIRE k alice");
    c.q("RLOCK.RELEASE k alice");
    c.q("CONFIG SET rlock.redisson-publish yes");
    c.q("RLOCK.ACQUIRE k bob");
    c.q("RLOCK.FORCERELEASE k");
    let message = sub.read().expect("message").items();
    assert_eq!(message[2].text(), "0");
    sub.set_read_timeout(Some(std::time::Duration::from_millis(200)));
    assert!(sub.read().is_err(), "no further message");
}

#[test]
fn renew_resets_the_lease_for_the_holder_only() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k alice PX 1000");
    assert_eq!(c.q("RLOCK.RENEW k bob PX 60000").int(), 0);
    assert!(c.q("PTTL k").int() <= 1000);
    assert_eq!(c.q("RLOCK.RENEW k alice PX 60000").int(), 1);
    assert!(c.q("PTTL k").int() > 59000);
    assert_eq!(c.q("RLOCK.RENEW k alice").int(), 1);
    assert!(c.q("PTTL k").int() <= 30000);
    assert_eq!(c.q("RLOCK.RENEW nothing alice").int(), 0);
}

#[test]
fn info_reports_owner_holds_ttl_token_and_waiters() {
    let server = Server::start();
    let mut c = server.conn();
    assert!(c.q("RLOCK.INFO k").is_nil());
    let token = c.q("RLOCK.ACQUIRE k alice PX 20000").int();
    c.q("RLOCK.ACQUIRE k alice PX 20000");
    let info = c.q("RLOCK.INFO k");
    assert!(
        matches!(info, Value::Array(_)),
        "RESP2 gives a flat array: {info:?}"
    );
    assert_eq!(info.field("owner").text(), "alice");
    assert_eq!(info.field("holds").int(), 2);
    assert_eq!(info.field("token").int(), token);
    assert_eq!(info.field("waiters").int(), 0);
    let ttl = info.field("ttl").int();
    assert!((19000..=20000).contains(&ttl), "ttl {ttl}");

    c.q("HELLO 3");
    let info = c.q("RLOCK.INFO k");
    assert!(matches!(info, Value::Map(_)), "RESP3 gives a map: {info:?}");
    assert_eq!(info.field("owner").text(), "alice");
    assert!(c.q("RLOCK.INFO nothing").is_nil());
}

#[test]
fn force_release_removes_any_holder() {
    let server = Server::start();
    let mut c = server.conn();
    assert_eq!(c.q("RLOCK.FORCERELEASE k").int(), 0);
    c.q("RLOCK.ACQUIRE k alice");
    c.q("RLOCK.ACQUIRE k alice");
    assert_eq!(c.q("RLOCK.FORCERELEASE k").int(), 1);
    assert_eq!(c.q("EXISTS k").int(), 0);
    assert!(c.q("RLOCK.ACQUIRE k bob").int() > 0);
}

/// Every key and its TTL, so a rejected call can be shown to have changed nothing.
fn state(c: &mut common::Conn) -> Vec<(String, Vec<(String, String)>, i64)> {
    common::snapshot(c)
}

#[test]
fn bad_input_gets_a_clear_error_and_changes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k alice PX 60000");
    c.q("SET s text");
    let before = state(&mut c);
    let cases: &[(&[&str], &str)] = &[
        (&["RLOCK.ACQUIRE", "k"], "ERR wrong number of arguments"),
        (&["RLOCK.ACQUIRE"], "ERR wrong number of arguments"),
        (&["RLOCK.RELEASE", "k"], "ERR wrong number of arguments"),
        (
            &["RLOCK.RELEASE", "k", "alice", "extra"],
            "ERR unknown option 'extra'",
        ),
        (&["RLOCK.RENEW", "k"], "ERR wrong number of arguments"),
        (&["RLOCK.INFO"], "ERR wrong number of arguments"),
        (&["RLOCK.INFO", "k", "x"], "ERR wrong number of arguments"),
        (&["RLOCK.FORCERELEASE"], "ERR wrong number of arguments"),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "PX", "soon"],
            "ERR PX must be an integer",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "PX", "0"],
            "ERR PX must be between 1 and",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "PX", "-10"],
            "ERR PX must be between 1 and",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "PX", "9223372036854775807"],
            "ERR PX must be between 1 and",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "PX"],
            "ERR PX needs a value",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "WAIT", "-1"],
            "ERR WAIT must be between 0 and",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "WAIT", "1.5"],
            "ERR WAIT must be an integer",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "PX", "5", "PX", "6"],
            "ERR PX given more than once",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "NX"],
            "ERR unknown option 'NX'",
        ),
        (&["RLOCK.ACQUIRE", "k", ""], "ERR owner must not be empty"),
        (
            &["RLOCK.ACQUIRE", "k", "rlock:token"],
            "ERR owners starting with 'rlock:' are reserved",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "rlock:ids"],
            "ERR owners starting with 'rlock:' are reserved",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "WATCHDOG", "WATCHDOG"],
            "ERR WATCHDOG given more than once",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "ID", ""],
            "ERR ID must be 1 to 64 bytes",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "ID"],
            "ERR ID needs a value",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "MAXHOLD", "0"],
            "ERR MAXHOLD must be between 1 and",
        ),
        (
            &["RLOCK.ACQUIRE", "k", "alice", "TOKEN", "1"],
            "ERR unknown option 'TOKEN'",
        ),
        (
            &["RLOCK.RELEASE", "k", "alice", "ID", "a", "ID", "b"],
            "ERR ID given more than once",
        ),
        (
            &["RLOCK.RENEW", "k", "alice", "ID", "a"],
            "ERR unknown option 'ID'",
        ),
        (
            &["RLOCK.FORCERELEASE", "k", "TOKEN", "x"],
            "ERR TOKEN must be an integer",
        ),
        (
            &["RLOCK.FORCERELEASE", "k", "TOKEN"],
            "ERR TOKEN needs a value",
        ),
        (&["RLOCK.RELEASE", "k", ""], "ERR owner must not be empty"),
        (
            &["RLOCK.RENEW", "k", "alice", "PX", "0"],
            "ERR PX must be between 1 and",
        ),
        (
            &["RLOCK.RENEW", "k", "alice", "WAIT", "5"],
            "ERR unknown option 'WAIT'",
        ),
        (&["RLOCK.ACQUIRE", "s", "alice"], "WRONGTYPE"),
        (&["RLOCK.RELEASE", "s", "alice"], "WRONGTYPE"),
        (&["RLOCK.RENEW", "s", "alice"], "WRONGTYPE"),
        (&["RLOCK.INFO", "s"], "WRONGTYPE"),
        (&["RLOCK.FORCERELEASE", "s"], "WRONGTYPE"),
    ];
    for (args, expected) in cases {
        let reply = c.cmd(args);
        let error = reply.err();
        assert!(
            error.starts_with(expected),
            "{args:?}: got {error:?}, expected {expected:?}"
        );
    }
    assert_eq!(state(&mut c), before, "rejected calls changed nothing");
    assert_eq!(c.q("PING").text(), "PONG");
}

#[test]
fn a_hash_that_is_not_a_lock_is_refused_unchanged() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("HSET h alice many");
    assert!(c
        .q("RLOCK.ACQUIRE h alice")
        .err()
        .starts_with("ERR the hash at this key is not a lock"));
    assert!(c.q("RLOCK.RELEASE h alice").err().starts_with("ERR"));
    assert_eq!(c.q("HGET h alice").text(), "many");
}

#[test]
fn commands_work_inside_multi_and_lua() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("MULTI");
    c.q("RLOCK.ACQUIRE k alice");
    c.q("RLOCK.ACQUIRE k alice");
    c.q("RLOCK.INFO k");
    let replies = c.q("EXEC").items();
    assert!(replies[0].int() > 0);
    assert_eq!(replies[1].int(), replies[0].int());
    assert_eq!(replies[2].field("holds").int(), 2);

    let script = "return redis.call('rlock.acquire', KEYS[1], ARGV[1], 'PX', '5000')";
    let token = c.cmd(&["EVAL", script, "1", "lua", "bob"]).int();
    assert!(token > replies[0].int());
    let script = "return redis.call('rlock.release', KEYS[1], ARGV[1])";
    assert_eq!(c.cmd(&["EVAL", script, "1", "lua", "bob"]).int(), 0);
}

#[test]
fn configs_are_settable_at_load_time_and_with_config_set() {
    let server = Server::builder()
        .module_args(&["default-lease-ms", "5000", "redisson-publish", "no"])
        .start();
    let mut c = server.conn();
    assert_eq!(
        c.q("CONFIG GET rlock.default-lease-ms").items()[1].text(),
        "5000"
    );
    assert_eq!(
        c.q("CONFIG GET rlock.redisson-publish").items()[1].text(),
        "no"
    );
    c.q("RLOCK.ACQUIRE k alice");
    assert!(c.q("PTTL k").int() <= 5000);
    assert_eq!(c.q("CONFIG SET rlock.default-lease-ms 90000").text(), "OK");
    c.q("RLOCK.ACQUIRE k2 alice");
    assert!(c.q("PTTL k2").int() > 80000);
    assert!(c
        .q("CONFIG SET rlock.default-lease-ms 0")
        .err()
        .starts_with("ERR"));

    let server = Server::builder()
        .arg("rlock.default-lease-ms", "7000")
        .start();
    assert_eq!(
        server.conn().q("CONFIG GET rlock.default-lease-ms").items()[1].text(),
        "7000"
    );
}

#[test]
fn the_module_loads_with_module_load_and_refuses_bad_arguments() {
    let server = Server::builder().without_module().start();
    let mut c = server.conn();
    let path = common::module_path();
    let path = path.to_str().expect("utf-8 path");
    assert!(c
        .cmd(&["MODULE", "LOAD", path, "colour", "red"])
        .err()
        .starts_with("ERR"));
    assert_eq!(c.cmd(&["MODULE", "LOAD", path]).text(), "OK");
    assert!(c.q("RLOCK.ACQUIRE k a").int() > 0);
    // A failed load left no event subscription behind: events still work without a crash.
    c.q("SET x 1");
    c.q("DEL x");
    assert_eq!(c.q("PING").text(), "PONG");
}
