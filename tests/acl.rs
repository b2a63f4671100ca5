//! ACLs: key patterns hold for RLOCK commands; the recipes in docs/security.md work;
//! nothing reaches past a user's ACL (docs/security.md; the per-command matrix is in
//! acl_matrix.rs).

mod common;
use common::{Conn, Pending, Server};

/// A user of `keys` and `channels` (ACL rules), allowed every command, and a connection of it.
fn user(server: &Server, admin: &mut Conn, name: &str, rules: &str) -> Conn {
    let setup = format!("ACL SETUSER {name} on >pw resetkeys resetchannels {rules} +@all");
    assert_eq!(admin.q(&setup).text(), "OK");
    let mut c = server.conn();
    assert_eq!(c.q(&format!("AUTH {name} pw")).text(), "OK");
    c
}

/// A RESP2 connection subscribed to its own grant channel: (connection, id, channel).
fn subscriber(mut c: Conn) -> (Conn, i64, String) {
    let id = c.q("CLIENT ID").int();
    let channel = c.q("RLOCK.CHANNEL").text();
    c.cmd(&["SUBSCRIBE", &channel]);
    (c, id, channel)
}

/// The payload of the next message a subscriber receives.
fn next_message(c: &mut Conn) -> String {
    let push = c.read().expect("a message").items();
    assert_eq!(push[0].text(), "message", "{push:?}");
    push[2].text()
}

#[test]
fn scan_lists_only_the_locks_the_caller_may_read() {
    let server = Server::start();
    let mut admin = server.conn();
    assert!(
        admin
            .q("RLOCK.ACQUIRE secret:payroll finance-job PX 60000")
            .int()
            > 0
    );
    let mut app = user(&server, &mut admin, "app", "~app:*");
    assert!(app.q("RLOCK.ACQUIRE app:1 o PX 60000").int() > 0);
    let listed = |c: &mut Conn, line: &str| -> Vec<String> {
        let page = c.q(line).items();
        page[1]
            .items()
            .iter()
            .map(|e| e.items()[0].text())
            .collect()
    };
    let calls = [
        "RLOCK.SCAN 0",
        "RLOCK.SCAN 0 COUNT 1000",
        "RLOCK.SCAN 0 MATCH secret:* COUNT 1000",
    ];
    for line in calls {
        let keys = listed(&mut app, line);
        assert!(
            !keys.iter().any(|k| k.starts_with("secret")),
            "{line}: {keys:?}"
        );
    }
    assert_eq!(listed(&mut app, "RLOCK.SCAN 0 COUNT 1000"), ["app:1"]);
    // From a script, as the same user: the same filter.
    let script = "return redis.call('RLOCK.SCAN','0','COUNT','1000')";
    let page = app.cmd(&["EVAL", script, "0"]).items();
    assert_eq!(page[1].items().len(), 1, "{page:?}");
    assert_eq!(listed(&mut admin, "RLOCK.SCAN 0 COUNT 1000").len(), 2);
}

#[test]
fn key_patterns_are_enforced_with_the_readme_recipe() {
    let server = Server::start();
    let mut admin = server.conn();
    // The lock-only recipe in docs/security.md (Redis 7.0 puts module commands in no category).
    let recipe = "ACL SETUSER orders-service on >secret resetkeys ~orders:* -@all \
                  +rlock.acquire +rlock.release +rlock.renew +rlock.info";
    assert_eq!(admin.q(recipe).text(), "OK");
    let mut c = server.conn();
    assert_eq!(c.q("AUTH orders-service secret").text(), "OK");
    assert!(c.q("RLOCK.ACQUIRE orders:1 w").int() > 0);
    assert_eq!(c.q("RLOCK.INFO orders:1").field("owner").text(), "w");
    assert!(c
        .q("RLOCK.ACQUIRE payments:1 w")
        .err()
        .starts_with("NOPERM"));
    assert!(
        c.q("RLOCK.FORCERELEASE orders:1")
            .err()
            .starts_with("NOPERM"),
        "not granted"
    );
    assert!(c.q("DEL orders:1").err().starts_with("NOPERM"));
    assert_eq!(c.q("RLOCK.RELEASE orders:1 w").int(), 0);
    assert_eq!(
        admin.q("EXISTS payments:1").int(),
        0,
        "the refused call wrote nothing"
    );
}

/// Every call that waits with `NOTIFY`, aimed at connection `{id}`, on `app:2`.
const NOTIFY_CALLS: [&str; 5] = [
    "RLOCK.ACQUIRE app:2 o PX 5000 WAIT 2000 NOTIFY {id}",
    "RLOCK.ACQUIREALL 2 app:2 app:3 o PX 5000 WAIT 2000 NOTIFY {id}",
    "RWLOCK.ACQUIRE app:rw o WRITE PX 5000 WAIT 2000 NOTIFY {id}",
    "RSEM.ACQUIRE app:sem o PX 5000 WAIT 2000 NOTIFY {id}",
    "RLATCH.AWAIT app:latch WAIT 2000 NOTIFY {id}",
];

/// Takes every key of `NOTIFY_CALLS` as `holder`, so that each call would wait.
fn hold_every_key(app: &mut Conn) {
    assert!(app.q("RLOCK.ACQUIRE app:2 holder PX 60000").int() > 0);
    assert!(app.q("RWLOCK.ACQUIRE app:rw holder READ PX 60000").int() > 0);
    assert_eq!(app.q("RSEM.SETPERMITS app:sem 1").int(), 1);
    assert!(app.q("RSEM.ACQUIRE app:sem holder PX 60000").int() > 0);
    assert_eq!(app.q("RLATCH.SET app:latch 1").int(), 1);
}

fn waiters(c: &mut Conn) -> i64 {
    let lock = c.q("RLOCK.INFO app:2").field("waiters").int();
    let rw = c.q("RWLOCK.INFO app:rw").field("waiting_writers").int();
    let sem = c.q("RSEM.INFO app:sem").field("waiters").items().len() as i64;
    lock + rw + sem
}

#[test]
fn notify_at_another_users_connection_is_refused_with_nothing_queued_or_sent() {
    let server = Server::start();
    let mut admin = server.conn();
    let finance = user(&server, &mut admin, "finance", "~secret:* &__rlock__:*");
    let (mut victim, victim_id, victim_channel) = subscriber(finance);
    let mut app = user(&server, &mut admin, "app", "~app:*");
    hold_every_key(&mut app);
    // The id of a connection that does not exist is refused alike: no oracle of ids.
    for id in [victim_id, 999_999] {
        for call in NOTIFY_CALLS {
            let line = call.replace("{id}", &id.to_string());
            let refused = app.q(&line).err();
            let expected = format!("NOPERM NOTIFY: connection {id} is not this user's");
            assert!(refused.starts_with(&expected), "{line}: {refused}");
        }
    }
    assert_eq!(waiters(&mut app), 0, "nothing queued");
    assert_eq!(server.blocked_clients(), 0);
    assert_eq!(app.q("RLATCH.COUNTDOWN app:latch").int(), 0);
    assert_eq!(app.q("RLOCK.RELEASE app:2 holder").int(), 0);
    // Messages arrive in order: the first the victim gets is the admin's marker.
    admin.cmd(&["PUBLISH", &victim_channel, "marker"]);
    assert_eq!(next_message(&mut victim), "marker", "no message was sent");
    let log = admin.q("ACL LOG 1").items()[0].pairs();
    let field = |name: &str| log.iter().find(|(k, _)| k == name).map(|(_, v)| v.text());
    assert_eq!(field("reason").as_deref(), Some("channel"));
    assert_eq!(field("username").as_deref(), Some("app"));
}

#[test]
fn notify_at_a_connection_of_the_same_user_is_served() {
    let server = Server::start();
    let mut admin = server.conn();
    let rules = "~app:* &__rlock__:*";
    let (mut told, id, _) = subscriber(user(&server, &mut admin, "svc", rules));
    let mut svc = user(&server, &mut admin, "svc", rules);
    hold_every_key(&mut svc);
    let line = format!("RLOCK.ACQUIRE app:2 o PX 5000 WAIT 2000 NOTIFY {id}");
    assert_eq!(svc.q(&line).text(), "WAITING");
    assert_eq!(svc.q("RLOCK.RELEASE app:2 holder").int(), 0);
    assert!(next_message(&mut told).starts_with("granted lock "));
}

#[test]
fn cancel_of_an_owners_waits_needs_write_access() {
    let server = Server::start();
    let mut admin = server.conn();
    assert!(admin.q("RLOCK.ACQUIRE app:1 holder PX 60000").int() > 0);
    let waiter = Pending::send(&server, "RLOCK.ACQUIRE app:1 w WAIT 0");
    server.wait_blocked(1);
    let mut reader = user(&server, &mut admin, "reader", "%R~app:*");
    let refused = reader.cmd(&["RLOCK.CANCEL", "app:1", "w"]).err();
    assert!(refused.starts_with("NOPERM RLOCK.CANCEL"), "{refused}");
    assert_eq!(admin.q("RLOCK.INFO app:1").field("waiters").int(), 1);
    // Its own latch waits ("") need only what waiting on a latch needs: read.
    assert_eq!(reader.cmd(&["RLOCK.CANCEL", "app:1", ""]).int(), 0);
    let mut writer = user(&server, &mut admin, "writer", "~app:*");
    assert_eq!(writer.q("RLOCK.CANCEL app:1 w").int(), 1);
    assert!(waiter.reply().is_nil());
}

#[test]
fn a_deadlock_reply_names_no_key_the_caller_may_not_read() {
    let server = Server::start();
    let mut admin = server.conn();
    assert!(admin.q("RLOCK.ACQUIRE secret:s finance PX 60000").int() > 0);
    assert!(admin.q("RLOCK.ACQUIRE app:a o1 PX 60000").int() > 0);
    let _o1_waits = Pending::send(&server, "RLOCK.ACQUIRE secret:s o1 WAIT 0");
    server.wait_blocked(1);
    assert!(admin.q("RLOCK.ACQUIRE app:b finance PX 60000").int() > 0);
    let mut app = user(&server, &mut admin, "app", "~app:*");
    // finance holds secret:s, for which o1 waits; o1 holds app:a: finance waiting for it
    // closes the cycle.
    let reply = app.q("RLOCK.ACQUIRE app:a finance WAIT 1000").err();
    assert_eq!(
        reply,
        "DEADLOCK this wait would close a cycle: finance waits for app:a held by o1; \
         o1 waits for a key this user may not read"
    );
    let full = admin.q("RLOCK.ACQUIRE app:a finance WAIT 1000").err();
    assert!(
        full.contains("o1 waits for secret:s held by finance"),
        "{full}"
    );
}

#[test]
fn the_notify_recipe_waits_by_message() {
    let server = Server::start();
    let mut admin = server.conn();
    let recipe = "ACL SETUSER orders-service on >secret resetkeys ~orders:* resetchannels \
                  &__rlock__:* -@all +rlock.acquire +rlock.release +rlock.renew +rlock.info \
                  +rlock.channel +rlock.cancel +client|id +hello +subscribe +unsubscribe +ping";
    assert_eq!(admin.q(recipe).text(), "OK");
    let login = |mut c: Conn| {
        assert_eq!(c.q("AUTH orders-service secret").text(), "OK");
        c
    };
    let (mut told, id, _) = subscriber(login(server.conn()));
    let mut c = login(server.conn());
    assert!(c.q("RLOCK.ACQUIRE orders:1 holder PX 60000").int() > 0);
    let wait = format!("RLOCK.ACQUIRE orders:1 w PX 60000 WAIT 5000 NOTIFY {id}");
    assert_eq!(c.q(&wait).text(), "WAITING");
    assert_eq!(c.q("RLOCK.RELEASE orders:1 holder").int(), 0);
    assert!(next_message(&mut told).starts_with("granted lock "));
    assert_eq!(c.q("RLOCK.CANCEL orders:1 w").int(), 0);
}

#[test]
fn the_observer_recipe_sees_every_change_and_changes_nothing() {
    let server = Server::start();
    let mut admin = server.conn();
    admin.q("CONFIG SET notify-keyspace-events Kd");
    let recipe = "ACL SETUSER observer on >secret resetkeys %R~election:* resetchannels \
                  &__keyspace@0__:election:* -@all +rlock.leader +subscribe +unsubscribe +ping";
    assert_eq!(admin.q(recipe).text(), "OK");
    let mut observer = server.conn();
    assert_eq!(observer.q("AUTH observer secret").text(), "OK");
    assert!(observer.q("RLOCK.LEADER election:x").is_nil());
    let refused = observer.q("RLOCK.ACQUIRE election:x o").err();
    assert!(refused.starts_with("NOPERM"), "{refused}");
    observer.q("SUBSCRIBE __keyspace@0__:election:x");
    assert!(admin.q("RLOCK.ACQUIRE election:x leader-1 PX 60000").int() > 0);
    assert_eq!(next_message(&mut observer), "rlock.acquired");
}

#[test]
fn loading_warns_when_locks_could_be_evicted() {
    let server = Server::builder()
        .arg("maxmemory-policy", "volatile-lru")
        .start();
    assert!(
        server.log().contains("maxmemory-policy is"),
        "{}",
        server.log()
    );
    let quiet = Server::start();
    assert!(!quiet.log().contains("maxmemory-policy is"));
}

/// `redis_version` as (major, minor); Valkey reports the Redis version it is compatible with.
fn version(c: &mut common::Conn) -> (u32, u32) {
    let info = c.q("INFO server").text();
    let v = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .expect("version")
        .trim()
        .to_string();
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[test]
fn write_commands_are_in_the_write_category_where_the_server_supports_it() {
    let server = Server::start();
    let mut admin = server.conn();
    if version(&mut admin) < (7, 2) {
        eprintln!(
            "Redis 7.0 has no ACL categories for module commands: the recipes in docs/security.md apply"
        );
        return;
    }
    assert_eq!(
        admin
            .q("ACL SETUSER reader on >secret ~* +@all -@write")
            .text(),
        "OK"
    );
    let mut c = server.conn();
    c.q("AUTH reader secret");
    assert!(c.q("RLOCK.ACQUIRE k w").err().starts_with("NOPERM"));
    assert!(c.q("RLOCK.INFO k").is_nil());
}
