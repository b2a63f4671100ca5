//! The ACL matrix (docs/security.md): for each of the 34 commands, a user restricted to
//! `~app:*` and to no channels is refused outside its pattern (NOPERM, nothing changed, nothing
//! revealed) and served inside it. The other team's locks are set up by the admin.

mod common;
use common::{snapshot, Conn, Server, Value};
use std::collections::BTreeSet;

/// What a call on the other team's keys must do.
enum Outside {
    /// Refused with NOPERM, the server's state as before.
    Refused(&'static str),
    /// Served (it has no key argument), but its reply names nothing of the other team's.
    Hides(&'static str),
}

/// One command: the call outside `app`'s pattern, and one inside it. `$token` is the token of
/// `app:lock`, taken by the first row. Inside calls run in order, on `app`'s own keys.
const MATRIX: [(Outside, &str); 34] = [
    (
        Outside::Refused("RLOCK.ACQUIRE secret:lock o PX 1000"),
        "RLOCK.ACQUIRE app:lock o PX 60000",
    ),
    (
        Outside::Refused("RLOCK.ACQUIREALL 2 app:all secret:lock o PX 1000"),
        "RLOCK.ACQUIREALL 2 app:a1 app:a2 o PX 60000",
    ),
    (
        Outside::Refused("RLOCK.RELEASEALL 2 app:a1 secret:lock finance-job"),
        "RLOCK.RELEASEALL 2 app:a1 app:a2 o",
    ),
    (
        Outside::Refused("RLOCK.RENEW secret:lock finance-job PX 1000"),
        "RLOCK.RENEW app:lock o PX 60000",
    ),
    (
        Outside::Refused("RLOCK.INFO secret:lock"),
        "RLOCK.INFO app:lock",
    ),
    (
        Outside::Refused("RLOCK.LEADER secret:lock"),
        "RLOCK.LEADER app:lock",
    ),
    (
        // The lock is app's, the inner command's key is not.
        Outside::Refused("RLOCK.GUARD app:lock o $token SET secret:guarded x"),
        "RLOCK.GUARD app:lock o $token SET app:guarded x",
    ),
    (
        Outside::Hides("RLOCK.SCAN 0 COUNT 1000"),
        "RLOCK.SCAN 0 COUNT 1000",
    ),
    (
        Outside::Refused("RLOCK.CANCEL secret:lock finance-2"),
        "RLOCK.CANCEL app:lock nobody",
    ),
    (Outside::Hides("RLOCK.CHANNEL 1"), "RLOCK.CHANNEL"),
    (
        Outside::Refused("RLOCK.RELEASE secret:lock finance-job"),
        "RLOCK.RELEASE app:lock o",
    ),
    (
        Outside::Refused("RLOCK.FORCERELEASE secret:lock"),
        "RLOCK.FORCERELEASE app:lock",
    ),
    (
        Outside::Refused("RWLOCK.ACQUIRE secret:rw o READ PX 1000"),
        "RWLOCK.ACQUIRE app:rw o WRITE PX 60000",
    ),
    (
        Outside::Refused("RWLOCK.RENEW secret:rw finance-job PX 1000"),
        "RWLOCK.RENEW app:rw o PX 60000",
    ),
    (
        Outside::Refused("RWLOCK.INFO secret:rw"),
        "RWLOCK.INFO app:rw",
    ),
    (
        Outside::Refused("RWLOCK.RELEASE secret:rw finance-job WRITE"),
        "RWLOCK.RELEASE app:rw o WRITE",
    ),
    (
        Outside::Refused("RWLOCK.FORCERELEASE secret:rw"),
        "RWLOCK.FORCERELEASE app:rw",
    ),
    (
        Outside::Refused("RLATCH.SET secret:latch2 1"),
        "RLATCH.SET app:latch 1",
    ),
    (
        Outside::Refused("RLATCH.COUNT secret:latch"),
        "RLATCH.COUNT app:latch",
    ),
    (
        Outside::Refused("RLATCH.COUNTDOWN secret:latch"),
        "RLATCH.COUNTDOWN app:latch",
    ),
    (
        Outside::Refused("RLATCH.AWAIT secret:latch WAIT 100"),
        "RLATCH.AWAIT app:latch WAIT 100",
    ),
    (
        Outside::Refused("RSEM.SETPERMITS secret:sem2 1"),
        "RSEM.SETPERMITS app:sem 2",
    ),
    (
        Outside::Refused("RSEM.ACQUIRE secret:sem o PX 1000"),
        "RSEM.ACQUIRE app:sem o PX 60000",
    ),
    (
        Outside::Refused("RSEM.RENEW secret:sem finance-job PX 1000"),
        "RSEM.RENEW app:sem o PX 60000",
    ),
    (
        Outside::Refused("RSEM.INFO secret:sem"),
        "RSEM.INFO app:sem",
    ),
    (
        Outside::Refused("RSEM.RELEASE secret:sem finance-job"),
        "RSEM.RELEASE app:sem o",
    ),
    (
        Outside::Refused("RSEM.RELEASEMANY secret:sem ANY finance-job"),
        "RSEM.RELEASEMANY app:sem ANY o",
    ),
    (
        Outside::Refused("RSEM.ADDPERMITS secret:sem 1"),
        "RSEM.ADDPERMITS app:sem 1",
    ),
    (
        Outside::Refused("RCSEM.SETPERMITS secret:csem2 1"),
        "RCSEM.SETPERMITS app:csem 2",
    ),
    (
        Outside::Refused("RCSEM.ACQUIRE secret:csem WAIT 100"),
        "RCSEM.ACQUIRE app:csem",
    ),
    (
        Outside::Refused("RCSEM.RELEASE secret:csem"),
        "RCSEM.RELEASE app:csem",
    ),
    (
        Outside::Refused("RCSEM.ADDPERMITS secret:csem -1"),
        "RCSEM.ADDPERMITS app:csem 1",
    ),
    (
        Outside::Refused("RCSEM.AVAILABLE secret:csem"),
        "RCSEM.AVAILABLE app:csem",
    ),
    (
        Outside::Refused("RCSEM.DRAIN secret:csem"),
        "RCSEM.DRAIN app:csem",
    ),
];

/// Every string in a reply, flattened, for "nothing revealed".
fn words(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.iter().flat_map(words).collect(),
        Value::Map(pairs) => pairs
            .iter()
            .flat_map(|(k, v)| words(k).into_iter().chain(words(v)))
            .collect(),
        Value::Nil | Value::Bool(_) => vec![],
        other => vec![other.text()],
    }
}

/// The other team's secrets: names and owners that no reply to `app` may carry.
const SECRETS: [&str; 3] = ["secret", "finance", "payroll"];

fn reveals(v: &Value, token: &str) -> Option<String> {
    words(v)
        .into_iter()
        .find(|w| SECRETS.iter().any(|s| w.contains(s)) || w.contains(token))
}

/// The other team's state: a held lock with a queued waiter, a write-held read-write lock, a
/// semaphore with a holder, a latch, a plain string. Returns the lock's token and the
/// waiter's subscribed connection (keep it open).
fn other_team(server: &Server, admin: &mut Conn) -> (String, Conn) {
    let token = admin
        .q("RLOCK.ACQUIRE secret:lock finance-job PX 60000")
        .int();
    // A waiter told by message, in the queue the refused calls must leave alone.
    let mut finance = server.conn();
    let id = finance.q("CLIENT ID").int();
    let channel = finance.q("RLOCK.CHANNEL").text();
    finance.cmd(&["SUBSCRIBE", &channel]);
    let wait = format!("RLOCK.ACQUIRE secret:lock finance-2 WAIT 0 NOTIFY {id}");
    assert_eq!(admin.q(&wait).text(), "WAITING");
    assert!(
        admin
            .q("RWLOCK.ACQUIRE secret:rw finance-job WRITE PX 60000")
            .int()
            > 0
    );
    assert_eq!(admin.q("RSEM.SETPERMITS secret:sem 3").int(), 1);
    assert!(
        admin
            .q("RSEM.ACQUIRE secret:sem finance-job PX 60000")
            .int()
            > 0
    );
    assert_eq!(admin.q("RLATCH.SET secret:latch 2").int(), 1);
    assert_eq!(admin.q("RCSEM.SETPERMITS secret:csem 4").int(), 1);
    assert_eq!(admin.q("SET secret:guarded payroll").text(), "OK");
    (token.to_string(), finance)
}

/// What the admin sees: every key's contents and expiry, and the queue of the held lock.
fn state(admin: &mut Conn) -> (common::Snapshot, i64) {
    let waiters = admin.q("RLOCK.INFO secret:lock").field("waiters").int();
    (snapshot(admin), waiters)
}

/// A user limited to `~app:*` and no channels, allowed every command: the key pattern alone
/// must hold.
fn restricted_user(server: &Server, admin: &mut Conn) -> Conn {
    let setup = "ACL SETUSER app on >pw resetkeys ~app:* resetchannels +@all";
    assert_eq!(admin.q(setup).text(), "OK");
    let mut app = server.conn();
    assert_eq!(app.q("AUTH app pw").text(), "OK");
    app
}

#[test]
fn every_command_is_refused_outside_the_key_pattern_and_served_inside() {
    let server = Server::start();
    let mut admin = server.conn();
    let (secret_token, _waiter) = other_team(&server, &mut admin);
    let mut app = restricted_user(&server, &mut admin);

    let listed: BTreeSet<String> = admin
        .q("COMMAND LIST FILTERBY MODULE rlock")
        .items()
        .iter()
        .map(|c| c.text().to_uppercase())
        .collect();
    let first_word = |line: &str| line.split(' ').next().unwrap_or("").to_uppercase();
    let covered: BTreeSet<String> = MATRIX.iter().map(|(_, i)| first_word(i)).collect();
    assert_eq!(covered, listed, "the matrix covers every command, once");

    let mut token = String::new();
    for (outside, inside) in MATRIX {
        let (line, refused) = match outside {
            Outside::Refused(line) => (line, true),
            Outside::Hides(line) => (line, false),
        };
        let line = line.replace("$token", &token);
        let before = state(&mut admin);
        let reply = app.q(&line);
        if refused {
            assert!(reply.err().starts_with("NOPERM"), "{line}: {reply:?}");
        } else {
            assert!(!matches!(reply, Value::Error(_)), "{line}: {reply:?}");
        }
        assert_eq!(reveals(&reply, &secret_token), None, "{line}: {reply:?}");
        assert_eq!(state(&mut admin), before, "{line} changed nothing");

        let inside = inside.replace("$token", &token);
        let reply = app.q(&inside);
        assert!(!matches!(reply, Value::Error(_)), "{inside}: {reply:?}");
        if inside.starts_with("RLOCK.ACQUIRE app:lock") {
            token = reply.int().to_string();
        }
        if inside.starts_with("RLOCK.SCAN") {
            let keys = words(&reply);
            assert!(keys.contains(&"app:lock".to_string()), "{reply:?}");
        }
    }
}
