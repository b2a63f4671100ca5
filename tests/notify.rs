//! Waiting without a blocked connection (`NOTIFY`, docs/notify.md): grants, timeouts and
//! losses told as messages on the connection's channel, one queue with blocked waiters.

mod common;
use common::{wait_until, Conn, Pending, Server, Value};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A parsed message: (event, type, value, key, owner).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Message {
    event: String,
    kind: String,
    value: String,
    key: Vec<u8>,
    owner: Vec<u8>,
}

/// Parses `<event> <type> <value> <key-length> <key> <owner>` as docs/notify.md says.
fn parse(raw: &[u8]) -> Message {
    let mut fields = raw.splitn(5, |b| *b == b' ');
    let mut word = || String::from_utf8(fields.next().expect("field").to_vec()).expect("utf8");
    let (event, kind, value, len) = (word(), word(), word(), word());
    let rest = fields.next().expect("key and owner");
    let len: usize = len.parse().expect("key length");
    assert_eq!(
        rest.get(len),
        Some(&b' '),
        "one space after the key: {raw:?}"
    );
    Message {
        event,
        kind,
        value,
        key: rest[..len].to_vec(),
        owner: rest[len + 1..].to_vec(),
    }
}

/// A connection that receives grant messages: RESP3 (subscribed, still running commands) or a
/// RESP2 subscriber beside a command connection.
struct Receiver {
    commands: Conn,
    /// The RESP2 subscriber; None when `commands` receives its own messages (RESP3).
    subscriber: Option<Conn>,
    id: i64,
    channel: String,
    stash: VecDeque<Message>,
}

fn is_push(v: &Value) -> bool {
    matches!(v, Value::Array(items) if matches!(items.first(), Some(Value::Bulk(w)) if w == b"message" || w == b"subscribe"))
}

impl Receiver {
    fn resp3(server: &Server) -> Receiver {
        let mut commands = server.conn();
        commands.q("HELLO 3");
        let id = commands.q("CLIENT ID").int();
        let channel = commands.q("RLOCK.CHANNEL").text();
        assert!(is_push(&commands.cmd(&["SUBSCRIBE", &channel])));
        Receiver {
            commands,
            subscriber: None,
            id,
            channel,
            stash: VecDeque::new(),
        }
    }

    fn resp2(server: &Server) -> Receiver {
        let mut subscriber = server.conn();
        let id = subscriber.q("CLIENT ID").int();
        let channel = subscriber.q("RLOCK.CHANNEL").text();
        subscriber.cmd(&["SUBSCRIBE", &channel]);
        Receiver {
            commands: server.conn(),
            subscriber: Some(subscriber),
            id,
            channel,
            stash: VecDeque::new(),
        }
    }

    /// Runs a command, keeping the messages that arrive before its reply.
    fn q(&mut self, line: &str) -> Value {
        let line = match &self.subscriber {
            // A RESP2 client names its subscriber's id after NOTIFY.
            Some(_) if line.ends_with(" NOTIFY") || line.contains(" NOTIFY ") => {
                line.replacen(" NOTIFY", &format!(" NOTIFY {}", self.id), 1)
            }
            _ => line.to_string(),
        };
        self.commands
            .send(&line.split_whitespace().collect::<Vec<_>>())
            .expect("send");
        loop {
            let v = self.commands.read().expect("reply");
            if self.subscriber.is_none() && is_push(&v) {
                self.keep(v);
            } else {
                return v;
            }
        }
    }

    fn keep(&mut self, v: Value) {
        let items = v.items();
        if items[0].text() == "message" {
            assert_eq!(items[1].text(), self.channel);
            let Value::Bulk(raw) = &items[2] else {
                panic!("{v:?}")
            };
            self.stash.push_back(parse(raw));
        }
    }

    /// The next message, waiting up to 5 s for it.
    fn next(&mut self) -> Message {
        if let Some(m) = self.stash.pop_front() {
            return m;
        }
        let conn = self.subscriber.as_mut().unwrap_or(&mut self.commands);
        conn.set_read_timeout(Some(Duration::from_secs(5)));
        loop {
            let conn = self.subscriber.as_mut().unwrap_or(&mut self.commands);
            let v = conn.read().expect("a message within 5 s");
            assert!(is_push(&v), "only messages arrive unasked: {v:?}");
            self.keep(v);
            if let Some(m) = self.stash.pop_front() {
                return m;
            }
        }
    }

    /// Nothing arrives within `ms`.
    fn assert_quiet(&mut self, ms: u64) {
        assert!(self.stash.is_empty(), "{:?}", self.stash);
        let conn = self.subscriber.as_mut().unwrap_or(&mut self.commands);
        conn.set_read_timeout(Some(Duration::from_millis(ms)));
        let got = conn.read();
        conn.set_read_timeout(None);
        assert!(got.is_err(), "unexpected {got:?}");
    }
}

fn granted(m: &Message, key: &str, owner: &str) -> i64 {
    assert_eq!(
        (m.event.as_str(), m.key.as_slice(), m.owner.as_slice()),
        ("granted", key.as_bytes(), owner.as_bytes()),
        "{m:?}"
    );
    m.value.parse().expect("token")
}

fn waiting(v: &Value) {
    assert_eq!(v, &Value::Simple("WAITING".into()));
}

#[test]
fn one_resp3_connection_waits_on_100_locks_while_running_commands() {
    let server = Server::start();
    let mut holder = server.conn();
    let mut r = Receiver::resp3(&server);
    for i in 0..100 {
        holder.q(&format!("RLOCK.ACQUIRE lock{i} h PX 60000"));
        for j in 0..3 {
            waiting(&r.q(&format!(
                "RLOCK.ACQUIRE lock{i} w{i}-{j} PX 60000 WAIT 0 NOTIFY"
            )));
        }
    }
    assert_eq!(server.stat("notified_waiters"), 300);
    assert_eq!(server.blocked_clients(), 0, "nobody is blocked");
    for i in 0..100 {
        assert_eq!(holder.q(&format!("RLOCK.RELEASE lock{i} h")).int(), 0);
    }
    // Other commands run on the waiting connection all along.
    assert_eq!(r.q("SET plain 1"), Value::Simple("OK".into()));
    let mut tokens = Vec::new();
    for round in 0..3 {
        let mut seen = vec![false; 100];
        for _ in 0..100 {
            let m = r.next();
            let i: usize = String::from_utf8_lossy(&m.key[4..]).parse().expect("index");
            tokens.push(granted(&m, &format!("lock{i}"), &format!("w{i}-{round}")));
            assert!(!seen[i], "one grant per lock per round");
            seen[i] = true;
            assert_eq!(r.q("GET plain").text(), "1");
            assert_eq!(
                r.q(&format!("RLOCK.INFO lock{i}")).field("owner").text(),
                format!("w{i}-{round}")
            );
            assert_eq!(r.q(&format!("RLOCK.RELEASE lock{i} w{i}-{round}")).int(), 0);
        }
    }
    assert_eq!(server.stat("notified_waiters"), 0);
    let mut sorted = tokens.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), 300, "every grant its own token");
}

#[test]
fn a_resp2_client_waits_through_its_subscriber_connection() {
    let server = Server::start();
    let mut holder = server.conn();
    let mut r = Receiver::resp2(&server);
    holder.q("RLOCK.ACQUIRE k h PX 60000");
    let refused = r.commands.q("RLOCK.ACQUIRE k w WAIT 0 NOTIFY");
    assert!(
        refused.err().contains("is not subscribed"),
        "the command connection itself is not subscribed: {refused:?}"
    );
    waiting(&r.q("RLOCK.ACQUIRE k w PX 60000 WAIT 0 NOTIFY"));
    holder.q("RLOCK.RELEASE k h");
    let token = granted(&r.next(), "k", "w");
    assert_eq!(r.q("RLOCK.INFO k").field("token").int(), token);
}

#[test]
fn blocked_and_notified_waiters_are_served_in_arrival_order() {
    let server = Server::start();
    let mut c = server.conn();
    let mut r = Receiver::resp3(&server);
    c.q("RLOCK.ACQUIRE k h PX 60000");
    let b1 = Pending::send(&server, "RLOCK.ACQUIRE k b1 PX 60000 WAIT 0");
    server.wait_blocked(1);
    waiting(&r.q("RLOCK.ACQUIRE k n1 PX 60000 WAIT 0 NOTIFY"));
    let b2 = Pending::send(&server, "RLOCK.ACQUIRE k b2 PX 60000 WAIT 0");
    server.wait_blocked(2);
    waiting(&r.q("RLOCK.ACQUIRE k n2 PX 60000 WAIT 0 NOTIFY"));
    assert_eq!(c.q("RLOCK.INFO k").field("waiters").int(), 4);
    c.q("RLOCK.RELEASE k h");
    assert!(b1.reply().int() > 0);
    r.assert_quiet(100);
    c.q("RLOCK.RELEASE k b1");
    granted(&r.next(), "k", "n1");
    assert_eq!(server.blocked_clients(), 1);
    c.q("RLOCK.RELEASE k n1");
    assert!(b2.reply().int() > 0);
    c.q("RLOCK.RELEASE k b2");
    granted(&r.next(), "k", "n2");
}

#[test]
fn a_notified_waiters_disconnect_removes_it() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k h PX 60000");
    let mut gone = Receiver::resp3(&server);
    waiting(&gone.q("RLOCK.ACQUIRE k g PX 60000 WAIT 0 NOTIFY"));
    let mut r = Receiver::resp3(&server);
    waiting(&r.q("RLOCK.ACQUIRE k n PX 60000 WAIT 0 NOTIFY"));
    drop(gone);
    wait_until("the closed waiter leaves", || {
        c.q("RLOCK.INFO k").field("waiters").int() == 1
    });
    c.q("RLOCK.RELEASE k h");
    granted(&r.next(), "k", "n");
    // A RESP2 waiter whose subscriber unsubscribes is skipped at its turn.
    let mut quiet = Receiver::resp2(&server);
    waiting(&quiet.q("RLOCK.ACQUIRE k q PX 60000 WAIT 0 NOTIFY"));
    waiting(&r.q("RLOCK.ACQUIRE k m PX 60000 WAIT 0 NOTIFY"));
    let sub = quiet.subscriber.as_mut().expect("subscriber");
    sub.cmd(&["UNSUBSCRIBE"]);
    c.q("RLOCK.RELEASE k n");
    granted(&r.next(), "k", "m");
    assert_eq!(server.stat("notify_skipped"), 1);
}

#[test]
fn a_watchdog_grant_told_by_message_ends_with_its_connection_and_renews_once_confirmed() {
    let server = Server::start();
    let mut c = server.conn();
    // Unconfirmed: bound (its close would release it) but not renewed past its lease.
    c.q("RLOCK.ACQUIRE k h PX 60000");
    let mut r = Receiver::resp3(&server);
    waiting(&r.q("RLOCK.ACQUIRE k w PX 300 WAIT 0 NOTIFY WATCHDOG"));
    c.q("RLOCK.RELEASE k h");
    granted(&r.next(), "k", "w");
    assert_eq!(c.q("RLOCK.INFO k").field("watchdog").int(), r.id);
    wait_until("the unconfirmed lease ends", || {
        c.q("RLOCK.INFO k").is_nil()
    });
    assert_eq!(r.next().event, "lost");
    // Confirmed: renewed past its lease, and released at once when the connection closes.
    c.q("RLOCK.ACQUIRE k h PX 60000");
    waiting(&r.q("RLOCK.ACQUIRE k w PX 300 WAIT 0 NOTIFY WATCHDOG"));
    c.q("RLOCK.RELEASE k h");
    let token = granted(&r.next(), "k", "w");
    assert_eq!(r.q("RLOCK.RENEW k w PX 300 WATCHDOG").int(), 1);
    std::thread::sleep(Duration::from_millis(700));
    let info = c.q("RLOCK.INFO k");
    assert_eq!(
        info.field("token").int(),
        token,
        "renewed, the same holding"
    );
    assert_eq!(info.field("watchdog").int(), r.id);
    let next = Pending::send(&server, "RLOCK.ACQUIRE k next PX 60000 WAIT 0").reply_when();
    server.wait_blocked(1);
    let closed = Instant::now();
    drop(r);
    let (reply, at) = next.join().expect("waiter");
    assert!(reply.int() > 0);
    assert!(
        at - closed < Duration::from_millis(500),
        "{:?}",
        at - closed
    );
}

#[test]
fn a_message_for_a_connection_in_its_own_exec_comes_after_the_exec_reply() {
    let server = Server::start();
    let mut r = Receiver::resp3(&server);
    r.q("RLOCK.ACQUIRE k h PX 60000");
    assert_eq!(r.q("MULTI"), Value::Simple("OK".into()));
    r.q("RLOCK.ACQUIRE k w PX 60000 WAIT 0 NOTIFY");
    r.q("RLOCK.RELEASE k h");
    let exec = r.q("EXEC");
    let items = exec.items();
    assert_eq!(items.len(), 2, "the EXEC reply is whole: {exec:?}");
    waiting(&items[0]);
    assert_eq!(items[1], Value::Int(0));
    granted(&r.next(), "k", "w");
}

#[test]
fn timeouts_are_told_on_time() {
    let server = Server::start();
    let mut c = server.conn();
    let mut r = Receiver::resp3(&server);
    c.q("RLOCK.ACQUIRE k h PX 60000");
    let started = Instant::now();
    waiting(&r.q("RLOCK.ACQUIRE k w WAIT 200 NOTIFY"));
    let m = r.next();
    let took = started.elapsed();
    assert_eq!(
        (m.event.as_str(), m.kind.as_str(), m.value.as_str()),
        ("timeout", "lock", "-")
    );
    assert!(
        took >= Duration::from_millis(195) && took < Duration::from_millis(700),
        "{took:?}"
    );
    assert_eq!(c.q("RLOCK.INFO k").field("waiters").int(), 0);
    assert_eq!(server.stat("wait_timeouts"), 1);
}

#[test]
fn cancel_retry_and_bad_input() {
    let server = Server::start();
    let mut c = server.conn();
    let mut r = Receiver::resp3(&server);
    c.q("RLOCK.ACQUIRE k h PX 60000");
    waiting(&r.q("RLOCK.ACQUIRE k a PX 60000 WAIT 0 NOTIFY ID r1"));
    waiting(&r.q("RLOCK.ACQUIRE k b PX 60000 WAIT 0 NOTIFY"));
    // The same call retried from a new connection takes over its entry, keeping its place.
    let mut again = Receiver::resp3(&server);
    waiting(&again.q("RLOCK.ACQUIRE k a PX 60000 WAIT 0 NOTIFY ID r1"));
    assert_eq!(c.q("RLOCK.INFO k").field("waiters").int(), 2);
    // Cancelled: b leaves, a blocked c answered nil.
    let blocked = Pending::send(&server, "RLOCK.ACQUIRE k c PX 60000 WAIT 0");
    server.wait_blocked(1);
    assert_eq!(r.q("RLOCK.CANCEL k b").int(), 1);
    assert_eq!(c.q("RLOCK.CANCEL k c").int(), 1);
    assert!(blocked.reply().is_nil());
    assert_eq!(c.q("RLOCK.CANCEL k nobody").int(), 0);
    c.q("RLOCK.RELEASE k h");
    let token = granted(&again.next(), "k", "a");
    r.assert_quiet(100);
    // A retry after the grant replies its token.
    assert_eq!(
        again
            .q("RLOCK.ACQUIRE k a PX 60000 WAIT 0 NOTIFY ID r1")
            .int(),
        token
    );
    // Rejected calls change nothing.
    let state = |c: &mut Conn| {
        let info = c.q("RLOCK.INFO k");
        ["owner", "holds", "token", "waiters"].map(|f| info.field(f))
    };
    let before = state(&mut c);
    for (line, error) in [
        ("RLOCK.ACQUIRE k z NOTIFY", "NOTIFY needs WAIT"),
        ("RLOCK.ACQUIRE k z WAIT 0 NOTIFY", "is not subscribed"),
        (
            "RLOCK.ACQUIRE k z WAIT 0 NOTIFY 999999",
            "connection 999999 is not subscribed",
        ),
        (
            "RLOCK.ACQUIRE k z WAIT 0 NOTIFY NOTIFY",
            "NOTIFY given more than once",
        ),
        ("RLOCK.CANCEL k", "wrong number of arguments"),
        ("RLOCK.CHANNEL x", "must be an integer"),
    ] {
        let reply = c.q(line);
        assert!(reply.err().contains(error), "{line}: {reply:?}");
    }
    assert_eq!(state(&mut c), before);
    let script = c.cmd(&[
        "EVAL",
        "return redis.call('RLOCK.ACQUIRE','s','o','WAIT','0','NOTIFY')",
        "0",
    ]);
    assert!(script.err().contains("needs the client-id"), "{script:?}");
    // Binary-safe: a key with spaces and CRLF, an owner with spaces.
    c.q("RLOCK.ACQUIRE k h2 PX 60000");
    let key = "a b\r\nc";
    let v = {
        let id = r.id.to_string();
        let args = ["RLOCK.ACQUIRE", key, "o w n", "WAIT", "0", "NOTIFY", &id];
        c.cmd(&["RLOCK.ACQUIRE", key, "x", "PX", "60000"]);
        c.cmd(&args)
    };
    waiting(&v);
    c.cmd(&["RLOCK.RELEASE", key, "x"]);
    let m = r.next();
    assert_eq!(
        (m.key.as_slice(), m.owner.as_slice()),
        (key.as_bytes(), &b"o w n"[..])
    );
}

#[test]
fn a_holder_granted_with_notify_hears_of_its_loss() {
    let server = Server::start();
    let mut c = server.conn();
    let mut r = Receiver::resp3(&server);
    // Lease end, with nobody queued.
    let token = r.q("RLOCK.ACQUIRE k w PX 200 WAIT 0 NOTIFY").int();
    let m = r.next();
    assert_eq!(
        (m.event.as_str(), m.value.parse::<i64>().ok()),
        ("lost", Some(token))
    );
    // FORCERELEASE and DEL.
    for end in ["RLOCK.FORCERELEASE k", "DEL k"] {
        let token = r.q("RLOCK.ACQUIRE k w PX 60000 WAIT 0 NOTIFY").int();
        c.q(end);
        let m = r.next();
        assert_eq!(
            (m.event.as_str(), m.value.parse::<i64>().ok()),
            ("lost", Some(token)),
            "{end}"
        );
    }
    // MAXHOLD ends it under a queue, which gets it.
    r.q("RLOCK.ACQUIRE k w PX 60000 WAIT 0 NOTIFY MAXHOLD 200");
    waiting(&r.q("RLOCK.ACQUIRE k next PX 60000 WAIT 0 NOTIFY"));
    let (first, second) = (r.next(), r.next());
    let mut events = [first.event.clone(), second.event.clone()];
    events.sort();
    assert_eq!(events, ["granted".to_string(), "lost".to_string()]);
    // Its own release tells nothing.
    c.q("RLOCK.FORCERELEASE k");
    assert_eq!(r.next().event, "lost");
    r.q("RLOCK.ACQUIRE k w PX 60000 WAIT 0 NOTIFY");
    assert_eq!(r.q("RLOCK.RELEASE k w").int(), 0);
    r.assert_quiet(300);
}

#[test]
fn every_lock_type_waits_the_same_way() {
    let server = Server::start();
    let mut c = server.conn();
    let mut r = Receiver::resp3(&server);
    // Read-write lock: a writer waits for a reader, readers for the writer.
    c.q("RWLOCK.ACQUIRE rw h READ PX 60000");
    waiting(&r.q("RWLOCK.ACQUIRE rw w WRITE PX 60000 WAIT 0 NOTIFY"));
    c.q("RWLOCK.RELEASE rw h READ");
    let m = r.next();
    assert_eq!((m.event.as_str(), m.kind.as_str()), ("granted", "write"));
    waiting(&r.q("RWLOCK.ACQUIRE rw r1 READ PX 60000 WAIT 0 NOTIFY"));
    waiting(&r.q("RWLOCK.ACQUIRE rw r2 READ PX 60000 WAIT 0 NOTIFY"));
    r.q("RWLOCK.RELEASE rw w WRITE");
    let (a, b) = (r.next(), r.next());
    assert_eq!((a.kind.as_str(), b.kind.as_str()), ("read", "read"));
    assert_eq!(c.q("RWLOCK.FORCERELEASE rw").int(), 1);
    let lost: Vec<String> = (0..2).map(|_| r.next().event).collect();
    assert_eq!(lost, ["lost", "lost"]);
    // One reader's lease ends while another still reads: only it hears.
    let short = r
        .q("RWLOCK.ACQUIRE rw short READ PX 200 WAIT 0 NOTIFY")
        .int();
    r.q("RWLOCK.ACQUIRE rw long READ PX 60000 WAIT 0 NOTIFY");
    let m = r.next();
    assert_eq!(
        (
            m.event.as_str(),
            m.kind.as_str(),
            m.owner.as_slice(),
            m.value.parse().ok()
        ),
        ("lost", "read", &b"short"[..], Some(short))
    );
    assert_eq!(c.q("RWLOCK.INFO rw").field("mode").text(), "read");
    // Semaphore.
    c.q("RSEM.SETPERMITS s 1");
    c.q("RSEM.ACQUIRE s h PX 60000");
    waiting(&r.q("RSEM.ACQUIRE s w PERMITS 1 PX 60000 WAIT 0 NOTIFY"));
    c.q("RSEM.RELEASE s h");
    let m = r.next();
    assert_eq!((m.event.as_str(), m.kind.as_str()), ("granted", "permits"));
    // Latch, and a latch wait cancelled by its connection.
    c.q("RLATCH.SET l 1");
    waiting(&r.q("RLATCH.AWAIT l WAIT 0 NOTIFY"));
    c.q("RLATCH.SET l2 1");
    waiting(&r.q("RLATCH.AWAIT l2 WAIT 0 NOTIFY"));
    assert_eq!(
        c.cmd(&["RLOCK.CANCEL", "l2", ""]).int(),
        0,
        "not this connection's wait"
    );
    assert_eq!(r.commands.cmd(&["RLOCK.CANCEL", "l2", ""]).int(), 1);
    c.q("RLATCH.COUNTDOWN l2");
    c.q("RLATCH.COUNTDOWN l");
    let m = r.next();
    assert_eq!(
        (m.event.as_str(), m.kind.as_str(), m.value.as_str()),
        ("granted", "latch", "1")
    );
    assert!(m.owner.is_empty());
}

#[test]
fn notified_waiters_are_told_when_their_server_turns_replica() {
    let server = Server::start();
    let other = Server::start();
    let mut c = server.conn();
    let mut r = Receiver::resp3(&server);
    c.q("RLOCK.ACQUIRE k h PX 60000");
    waiting(&r.q("RLOCK.ACQUIRE k w PX 60000 WAIT 0 NOTIFY"));
    c.q(&format!("REPLICAOF 127.0.0.1 {}", other.port));
    let m = r.next();
    assert_eq!(
        (m.event.as_str(), m.value.as_str()),
        ("failed", "READONLY"),
        "{m:?}"
    );
    assert_eq!(server.stat("notified_waiters"), 0);
}
