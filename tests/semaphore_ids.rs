//! Several permit ids in one call (Redisson's `RPermitExpirableSemaphore`): `RSEM.ACQUIRE ...
//! EACH` grants n permits as n owners `<owner>:<i>` of one permit each, all or none, in queue
//! order; `RSEM.RELEASEMANY ALL|ANY` gives back whole owners, all or none, or those that hold.

mod common;
use common::{snapshot, wait_until, Conn, Pending, Server, Value};
use std::time::Duration;

fn available(c: &mut Conn, key: &str) -> i64 {
    c.cmd(&["GET", key]).int()
}

/// (owner, permits, token) of every holder, by owner.
fn holders(c: &mut Conn, key: &str) -> Vec<(String, i64, i64)> {
    let mut holders: Vec<(String, i64, i64)> = c
        .cmd(&["RSEM.INFO", key])
        .field("holders")
        .items()
        .iter()
        .map(|h| {
            let permits = h.field("permits").int();
            (h.field("owner").text(), permits, h.field("token").int())
        })
        .collect();
    holders.sort();
    holders
}

/// The permits each waiter asks for, in queue order.
fn waiters(c: &mut Conn, key: &str) -> Vec<i64> {
    let info = c.cmd(&["RSEM.INFO", key]);
    info.field("waiters")
        .items()
        .iter()
        .map(Value::int)
        .collect()
}

/// Everything a call could change: the keys and the queue.
fn state(c: &mut Conn) -> (common::Snapshot, Vec<i64>) {
    (snapshot(c), waiters(c, "s"))
}

#[test]
fn each_grants_all_or_none_under_one_token() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RSEM.SETPERMITS s 3");
    let token = c.q("RSEM.ACQUIRE s a PERMITS 2 EACH PX 60000").int();
    let expected = vec![("a:1".into(), 1, token), ("a:2".into(), 1, token)];
    assert_eq!(holders(&mut c, "s"), expected);
    assert_eq!(available(&mut c, "s"), 1);
    let before = state(&mut c);
    assert!(c.q("RSEM.ACQUIRE s b PERMITS 2 EACH").is_nil(), "1 free");
    assert_eq!(state(&mut c), before, "none of the 2 taken");
    let single = c.q("RSEM.ACQUIRE s b EACH").int();
    assert!(single > token);
    assert_eq!(holders(&mut c, "s")[2], ("b:1".into(), 1, single), "n = 1");
    // Each permit is its own holding: released on its own.
    assert_eq!(c.q("RSEM.RELEASE s a:1").int(), 0);
    assert_eq!(available(&mut c, "s"), 1);
    assert_eq!(holders(&mut c, "s")[0], ("a:2".into(), 1, token));
}

#[test]
fn each_errors_change_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RSEM.SETPERMITS s 5");
    c.q("RSEM.ACQUIRE s a:2 PX 60000");
    c.q("RSEM.ACQUIRE s held PERMITS 4 PX 60000");
    let before = state(&mut c);
    for (line, expected) in [
        (
            "RSEM.ACQUIRE s a PERMITS 3 EACH",
            "ERR EACH: a:2 holds permits already",
        ),
        ("RSEM.ACQUIRE s a PERMITS 2 EACH WAIT 1000", "ERR EACH: a:2"),
        (
            "RSEM.ACQUIRE s a PERMITS 2 EACH EACH",
            "ERR EACH given more than once",
        ),
        ("RSEM.ACQUIRE s a PERMITS 0 EACH", "ERR PERMITS must be"),
        (
            "RSEM.ACQUIRE s rlock:x EACH",
            "ERR owners starting with 'rlock:'",
        ),
        ("RSEM.ACQUIRE s a EACH 2", "ERR unknown option '2'"),
    ] {
        let error = c.q(line).err();
        assert!(error.starts_with(expected), "{line}: {error}");
        assert_eq!(state(&mut c), before, "{line} changed something");
    }
    // Held again by an earlier EACH grant: no re-entry.
    c.q("RSEM.RELEASE s a:2");
    c.q("RSEM.ACQUIRE s e EACH");
    let before = state(&mut c);
    let error = c.q("RSEM.ACQUIRE s e PERMITS 1 EACH").err();
    assert!(error.starts_with("ERR EACH: e:1"), "{error}");
    assert_eq!(state(&mut c), before);
}

#[test]
fn each_waits_in_order_blocked_or_told_and_is_not_passed() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RSEM.SETPERMITS s 4");
    c.q("RSEM.ACQUIRE s holder PERMITS 4 PX 60000");
    let big = Pending::send(&server, "RSEM.ACQUIRE s big PERMITS 4 PX 60000 WAIT 10000");
    server.wait_blocked(1);
    let blocked_each = Pending::send(
        &server,
        "RSEM.ACQUIRE s eb PERMITS 2 EACH PX 60000 WAIT 10000",
    );
    server.wait_blocked(2);
    let mut told = server.conn();
    let told_id = told.q("CLIENT ID").int();
    let channel = told.q("RLOCK.CHANNEL").text();
    told.cmd(&["SUBSCRIBE", &channel]);
    let notify = format!("RSEM.ACQUIRE s en PERMITS 2 EACH PX 60000 WAIT 10000 NOTIFY {told_id}");
    assert_eq!(c.q(&notify).text(), "WAITING");
    let small = Pending::send(&server, "RSEM.ACQUIRE s small PX 60000 WAIT 10000");
    server.wait_blocked(3);
    assert_eq!(waiters(&mut c, "s"), [4, 2, 2, 1]);

    // 3 free: the head wants 4, and nobody behind it passes it (a newcomer neither).
    assert_eq!(c.q("RSEM.RELEASE s holder PERMITS 3").int(), 1);
    assert!(c.q("RSEM.ACQUIRE s newcomer").is_nil());
    assert_eq!(waiters(&mut c, "s"), [4, 2, 2, 1]);
    c.q("RSEM.RELEASE s holder");
    assert!(big.reply().int() > 0);
    assert_eq!(waiters(&mut c, "s"), [2, 2, 1], "0 free now");

    // 4 back: both requests of 2 go in, in order; the small one still waits.
    assert_eq!(c.q("RSEM.RELEASE s big PERMITS 4").int(), 0);
    let blocked_token = blocked_each.reply().int();
    told.set_read_timeout(Some(Duration::from_secs(5)));
    let message = told.read().expect("the grant message").items()[2].text();
    let told_token: i64 = message
        .split(' ')
        .nth(2)
        .expect("a token")
        .parse()
        .expect("int");
    assert_eq!(
        message,
        format!("granted permits {told_token} 1 s en"),
        "owner as given"
    );
    assert!(told_token > blocked_token, "in queue order");
    let expected = [
        ("en:1".to_string(), 1, told_token),
        ("en:2".to_string(), 1, told_token),
        ("eb:1".to_string(), 1, blocked_token),
        ("eb:2".to_string(), 1, blocked_token),
    ];
    for holder in expected {
        assert!(holders(&mut c, "s").contains(&holder), "{holder:?}");
    }
    assert_eq!(waiters(&mut c, "s"), [1]);
    assert_eq!(c.q("RSEM.RELEASEMANY s ALL eb:2").int(), 1);
    assert!(small.reply().int() > told_token, "served after RELEASEMANY");
}

#[test]
fn an_each_waiter_whose_owner_came_to_hold_leaves_with_the_error_at_its_turn() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RSEM.SETPERMITS s 3");
    c.q("RSEM.ACQUIRE s h PERMITS 3 PX 60000");
    // Queued before `a` asks: nobody holds a:2 yet, so `a`'s request is taken.
    let a2 = Pending::send(&server, "RSEM.ACQUIRE s a:2 PX 60000 WAIT 10000");
    server.wait_blocked(1);
    let each = Pending::send(
        &server,
        "RSEM.ACQUIRE s a PERMITS 2 EACH PX 60000 WAIT 10000",
    );
    server.wait_blocked(2);
    let behind = Pending::send(&server, "RSEM.ACQUIRE s z PX 60000 WAIT 10000");
    server.wait_blocked(3);
    c.q("RSEM.RELEASE s h PERMITS 3");
    assert!(a2.reply().int() > 0);
    let error = each.reply().err();
    assert!(error.starts_with("ERR EACH: a:2 holds"), "{error}");
    assert!(behind.reply().int() > 0, "served behind it");
    let owners: Vec<String> = holders(&mut c, "s").into_iter().map(|h| h.0).collect();
    assert_eq!(owners, ["a:2", "z"], "nothing of a's request taken");
    assert_eq!(available(&mut c, "s"), 1);
}

#[test]
fn a_watchdog_connection_closing_frees_all_n() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RSEM.SETPERMITS s 3");
    let mut holder = server.conn();
    let holder_id = holder.q("CLIENT ID").int();
    holder.q("RSEM.ACQUIRE s w PERMITS 3 EACH PX 300 WATCHDOG");
    let info = c.q("RSEM.INFO s");
    let bound: Vec<i64> = info
        .field("holders")
        .items()
        .iter()
        .map(|h| h.field("watchdog").int())
        .collect();
    assert_eq!(bound, [holder_id; 3], "each bound to the connection");
    assert_eq!(server.stat("watchdog_locks"), 3);
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(holders(&mut c, "s").len(), 3, "renewed past their lease");
    let waiter = Pending::send(&server, "RSEM.ACQUIRE s next PERMITS 3 WAIT 10000");
    server.wait_blocked(1);
    holder.q("QUIT");
    assert!(waiter.reply().int() > 0, "all 3 came back");
    assert_eq!(server.stat("watchdog_releases"), 3);
}

#[test]
fn each_lease_ends_on_its_own_and_an_id_retry_answers_the_token() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RSEM.SETPERMITS s 4");
    let token = c.q("RSEM.ACQUIRE s a PERMITS 2 EACH PX 60000 ID r1").int();
    let before = state(&mut c);
    assert_eq!(
        c.q("RSEM.ACQUIRE s a PERMITS 2 EACH PX 60000 ID r1").int(),
        token
    );
    assert_eq!(state(&mut c), before, "a retry takes nothing more");
    let error = c.q("RSEM.ACQUIRE s a PERMITS 2 EACH ID r2").err();
    assert!(error.starts_with("ERR EACH: a:1"), "another id: {error}");
    c.q("RSEM.RENEW s a:1 PX 100");
    wait_until("a:1's lease to end", || available(&mut c, "s") == 3);
    assert_eq!(
        holders(&mut c, "s"),
        [("a:2".into(), 1, token)],
        "a:2 keeps its own"
    );

    c.q("RSEM.ACQUIRE s b PERMITS 3 EACH PX 100 MAXHOLD 60000");
    wait_until("every lease to end", || available(&mut c, "s") == 3);
    assert_eq!(holders(&mut c, "s"), [("a:2".into(), 1, token)]);
}

#[test]
fn release_many_gives_back_all_or_none_or_those_held() {
    let server = Server::start();
    let mut c = server.conn();
    let mut told = server.conn();
    told.q("SUBSCRIBE redisson_sc:{s}");
    c.q("RSEM.SETPERMITS s 6");
    c.q("RSEM.ACQUIRE s a PERMITS 2 PX 60000");
    c.q("RSEM.ACQUIRE s b PX 60000 WATCHDOG");
    c.q("RSEM.ACQUIRE s gone PX 100");
    wait_until("gone's lease to end", || available(&mut c, "s") == 3);
    let waiter = Pending::send(&server, "RSEM.ACQUIRE s w PERMITS 6 WAIT 10000");
    server.wait_blocked(1);
    assert_eq!(server.stat("watchdog_locks"), 1, "b's binding");
    let before = state(&mut c);
    for (line, expected) in [
        ("RSEM.RELEASEMANY s ALL a nobody b", "ERR not held: nobody"),
        ("RSEM.RELEASEMANY s ALL a b a", "ERR not held: a"),
        ("RSEM.RELEASEMANY s ALL gone a", "ERR not held: gone"),
        ("RSEM.RELEASEMANY s SOME a", "ERR mode must be ALL or ANY"),
        ("RSEM.RELEASEMANY s ALL", "ERR wrong number of arguments"),
        (
            "RSEM.RELEASEMANY s ANY a rlock:x",
            "ERR owners starting with 'rlock:'",
        ),
    ] {
        let error = c.q(line).err();
        assert!(error.starts_with(expected), "{line}: {error}");
        assert_eq!(state(&mut c), before, "{line} changed something");
    }
    assert_eq!(c.q("RSEM.RELEASEMANY s ANY nobody gone").int(), 0);
    assert_eq!(state(&mut c), before);
    // Both at once: one message with the new count, the waiter served.
    assert_eq!(c.q("RSEM.RELEASEMANY s ANY a nobody b a").int(), 2);
    assert!(waiter.reply().int() > 0, "6 free, then all 6 taken");
    assert_eq!(server.stat("watchdog_locks"), 0, "b's binding went with it");
    told.set_read_timeout(Some(Duration::from_secs(5)));
    let counts: Vec<String> = (0..3)
        .map(|_| told.read().expect("a count").items()[2].text())
        .collect();
    assert_eq!(
        counts,
        ["6", "3", "6"],
        "SETPERMITS, gone's lease end, then the call once"
    );
    told.set_read_timeout(Some(Duration::from_millis(200)));
    assert!(told.read().is_err(), "nothing more");
    assert_eq!(c.q("RSEM.RELEASEMANY s ALL w").int(), 1);
    assert_eq!(available(&mut c, "s"), 6);
}

#[test]
fn a_replica_without_the_module_matches_after_each_and_release_many() {
    let master = Server::builder().master();
    let replica = Server::builder().without_module().replica_of(&master);
    let mut c = master.conn();
    c.q("RSEM.SETPERMITS s 6");
    c.q("RSEM.ACQUIRE s a PERMITS 3 EACH PX 60000 ID x");
    c.q("RSEM.ACQUIRE s b PERMITS 2 EACH PX 60000");
    c.q("RSEM.RELEASEMANY s ALL a:1 b:2");
    c.q("RSEM.RELEASEMANY s ANY a:3 nobody");
    common::sync_replica(&mut c);
    let expected = snapshot(&mut c);
    assert_eq!(holders(&mut c, "s").len(), 2, "a:2 and b:1");
    assert_eq!(snapshot(&mut replica.conn()), expected);
}

/// What `COMMAND DOCS` says of an argument: its name, type, flags and its choices' tokens.
fn documented(arg: &Value) -> (String, String, Vec<String>, Vec<String>) {
    let flags = match arg.pairs().into_iter().find(|(k, _)| k == "flags") {
        Some((_, flags)) => flags.items().iter().map(Value::text).collect(),
        None => vec![],
    };
    let choices = match arg.pairs().into_iter().find(|(k, _)| k == "arguments") {
        Some((_, choices)) => choices
            .items()
            .iter()
            .map(|c| c.field("token").text())
            .collect(),
        None => vec![],
    };
    (
        arg.field("name").text(),
        arg.field("type").text(),
        flags,
        choices,
    )
}

#[test]
fn command_docs_and_keys_name_the_new_arguments() {
    let server = Server::start();
    let mut c = server.conn();
    let docs = c.q("COMMAND DOCS rsem.releasemany").items()[1].clone();
    let args: Vec<_> = docs
        .field("arguments")
        .items()
        .iter()
        .map(documented)
        .collect();
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        args[1],
        (
            "request-id".into(),
            "string".into(),
            strings(&["optional"]),
            vec![]
        ),
        "ID comes before the mode"
    );
    assert_eq!(
        args[2],
        (
            "mode".into(),
            "oneof".into(),
            vec![],
            strings(&["ALL", "ANY"])
        )
    );
    assert_eq!(
        args[3],
        (
            "owner".into(),
            "string".into(),
            strings(&["multiple"]),
            vec![]
        )
    );
    let keys = c.q("COMMAND GETKEYS rsem.releasemany s ID r ALL a b");
    assert_eq!(
        keys.items().iter().map(Value::text).collect::<Vec<_>>(),
        ["s"]
    );
    let rw = c.q("COMMAND DOCS rwlock.acquire").items()[1].clone();
    let mode = documented(&rw.field("arguments").items()[2]);
    assert_eq!(mode.3, strings(&["READ", "WRITE"]), "{mode:?}");
    let acquire = c.q("COMMAND DOCS rsem.acquire").items()[1].clone();
    let names: Vec<String> = acquire
        .field("arguments")
        .items()
        .iter()
        .map(|a| a.field("name").text())
        .collect();
    assert!(names.contains(&"EACH".to_string()), "{names:?}");
}
