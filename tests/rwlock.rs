//! The read-write lock (RWLOCK.*): shared readers, one writer, FIFO batches without writer
//! starvation, per-reader leases, Redisson's layout and scripts, replication without the module.

mod common;
use common::redisson::rw as redisson;
use common::{snapshot, wait_until, Conn, Pending, Server, Value};
use std::time::{Duration, Instant};

/// Queues `commands` (each an RWLOCK.ACQUIRE ... WAIT) in this order, each blocked before the next.
fn queue_up(server: &Server, commands: &[&str]) -> Vec<Pending> {
    let already = server.blocked_clients();
    commands
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let waiter = Pending::send(server, line);
            server.wait_blocked(already + i as i64 + 1);
            waiter
        })
        .collect()
}

fn holders(c: &mut Conn, key: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = c
        .cmd(&["RWLOCK.INFO", key])
        .field("holders")
        .items()
        .iter()
        .map(|h| (h.field("owner").text(), h.field("mode").text()))
        .collect();
    out.sort();
    out
}

fn pair(owner: &str, mode: &str) -> (String, String) {
    (owner.to_string(), mode.to_string())
}

#[test]
fn readers_share_and_a_writer_is_alone() {
    let server = Server::start();
    let mut c = server.conn();
    let a = c.q("RWLOCK.ACQUIRE k a READ").int();
    let b = c.q("RWLOCK.ACQUIRE k b READ").int();
    assert!(b > a, "each reader gets its own, rising token");
    assert_eq!(
        c.q("RWLOCK.ACQUIRE k a READ").int(),
        a,
        "a re-entry keeps its token"
    );
    assert!(c.q("RWLOCK.ACQUIRE k w WRITE").is_nil());
    let info = c.q("RWLOCK.INFO k");
    assert_eq!(info.field("mode").text(), "read");
    assert_eq!(
        holders(&mut c, "k"),
        vec![pair("a", "read"), pair("b", "read")]
    );
    assert_eq!(c.q("RWLOCK.RELEASE k a READ").int(), 1);
    assert_eq!(c.q("RWLOCK.RELEASE k a READ").int(), 0);
    assert!(c.q("RWLOCK.RELEASE k a READ").is_nil());
    assert_eq!(c.q("RWLOCK.RELEASE k b READ").int(), 0);
    assert_eq!(c.q("KEYS *").items().len(), 0, "hash and timeout keys gone");
    let w = c.q("RWLOCK.ACQUIRE k w WRITE").int();
    assert!(w > b);
    assert!(c.q("RWLOCK.ACQUIRE k a READ").is_nil());
    assert!(c.q("RWLOCK.ACQUIRE k x WRITE").is_nil());
    assert!(c.q("RWLOCK.RELEASE k w READ").is_nil());
    assert_eq!(c.q("RWLOCK.INFO k").field("mode").text(), "write");
    assert_eq!(c.q("RWLOCK.FORCERELEASE k").int(), 1);
    assert!(c.q("RWLOCK.INFO k").is_nil());
    assert_eq!(c.q("RWLOCK.FORCERELEASE k").int(), 0);
}

#[test]
fn a_writer_downgrades_and_readers_enter_behind_it() {
    let server = Server::start();
    let mut c = server.conn();
    let w = c.q("RWLOCK.ACQUIRE k w WRITE").int();
    assert_eq!(c.q("RWLOCK.ACQUIRE k w WRITE").int(), w);
    let r = c.q("RWLOCK.ACQUIRE k w READ").int();
    assert!(r > w, "the read holding is a new holding");
    let reader = queue_up(&server, &["RWLOCK.ACQUIRE k other READ WAIT 5000"]).remove(0);
    assert_eq!(c.q("RWLOCK.RELEASE k w WRITE").int(), 1);
    assert_eq!(server.blocked_clients(), 1);
    assert_eq!(c.q("RWLOCK.RELEASE k w WRITE").int(), 0);
    assert!(
        reader.reply().int() > r,
        "the queued reader enters after the downgrade"
    );
    assert_eq!(c.q("RWLOCK.INFO k").field("mode").text(), "read");
    assert_eq!(
        holders(&mut c, "k"),
        vec![pair("other", "read"), pair("w", "read")]
    );
    assert!(c.q("RWLOCK.ACQUIRE k x WRITE").is_nil());
}

#[test]
fn an_upgrade_is_refused_at_once_and_changes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RWLOCK.ACQUIRE k a READ");
    let before = snapshot(&mut c);
    let started = Instant::now();
    let reply = c.q("RWLOCK.ACQUIRE k a WRITE WAIT 5000");
    assert!(reply.err().contains("holds the read lock"), "{reply:?}");
    assert!(started.elapsed() < Duration::from_millis(500));
    assert_eq!(snapshot(&mut c), before);
}

#[test]
fn the_queue_admits_readers_in_batches_and_writers_alone() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RWLOCK.ACQUIRE k holder WRITE");
    let waiters = queue_up(
        &server,
        &[
            "RWLOCK.ACQUIRE k r1 READ WAIT 0",
            "RWLOCK.ACQUIRE k r2 READ WAIT 0",
            "RWLOCK.ACQUIRE k w WRITE WAIT 0",
            "RWLOCK.ACQUIRE k r3 READ WAIT 0",
            "RWLOCK.ACQUIRE k r4 READ WAIT 0",
        ],
    );
    let info = c.q("RWLOCK.INFO k");
    assert_eq!(info.field("waiting_readers").int(), 4);
    assert_eq!(info.field("waiting_writers").int(), 1);
    let mut waiters = waiters.into_iter();
    let mut next = || waiters.next().expect("waiter");
    let (r1, r2, w, r3, r4) = (next(), next(), next(), next(), next());
    c.q("RWLOCK.RELEASE k holder WRITE");
    assert!(r1.reply().int() > 0);
    assert!(r2.reply().int() > 0);
    assert_eq!(server.blocked_clients(), 3, "w, r3, r4 still wait");
    assert_eq!(
        holders(&mut c, "k"),
        vec![pair("r1", "read"), pair("r2", "read")]
    );
    c.q("RWLOCK.RELEASE k r1 READ");
    assert_eq!(server.blocked_clients(), 3);
    c.q("RWLOCK.RELEASE k r2 READ");
    assert!(w.reply().int() > 0);
    assert_eq!(holders(&mut c, "k"), vec![pair("w", "write")]);
    assert_eq!(server.blocked_clients(), 2);
    c.q("RWLOCK.RELEASE k w WRITE");
    assert!(r3.reply().int() > 0);
    assert!(r4.reply().int() > 0);
    assert_eq!(
        holders(&mut c, "k"),
        vec![pair("r3", "read"), pair("r4", "read")]
    );
}

#[test]
fn nobody_barges_ahead_of_the_queue() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RWLOCK.ACQUIRE k holder WRITE");
    let waiter = queue_up(&server, &["RWLOCK.ACQUIRE k queued READ WAIT 5000"]).remove(0);
    // The DEL frees the lock and the intruder asks before the deferred handoff could run.
    c.q("MULTI");
    c.q("DEL k");
    c.q("RWLOCK.ACQUIRE k intruder WRITE");
    let replies = c.q("EXEC").items();
    assert!(replies[1].is_nil(), "the intruder got {:?}", replies[1]);
    assert!(waiter.reply().int() > 0);
    assert_eq!(holders(&mut c, "k"), vec![pair("queued", "read")]);
}

#[test]
fn a_stream_of_readers_does_not_starve_a_writer() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RWLOCK.ACQUIRE k first READ PX 10000");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..4)
        .map(|i| {
            let (mut conn, stop) = (server.conn(), stop.clone());
            std::thread::spawn(move || {
                let owner = format!("reader-{i}");
                let mut granted = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let reply = conn.cmd(&["RWLOCK.ACQUIRE", "k", &owner, "READ", "WAIT", "2000"]);
                    if !reply.is_nil() {
                        granted += 1;
                        std::thread::sleep(Duration::from_millis(5));
                        conn.cmd(&["RWLOCK.RELEASE", "k", &owner, "READ"]);
                    }
                }
                granted
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let writer = Pending::send(&server, "RWLOCK.ACQUIRE k writer WRITE WAIT 5000");
    wait_until("the writer queued", || {
        c.q("RWLOCK.INFO k").field("waiting_writers").int() == 1
    });
    // Readers that hold may re-enter while the writer waits; newcomers queue behind it.
    assert!(c.q("RWLOCK.ACQUIRE k first READ").int() > 0);
    c.q("RWLOCK.RELEASE k first READ");
    assert!(c.q("RWLOCK.ACQUIRE k newcomer READ").is_nil());
    let started = Instant::now();
    c.q("RWLOCK.RELEASE k first READ");
    let token = writer.reply().int();
    assert!(token > 0);
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(holders(&mut c, "k"), vec![pair("writer", "write")]);
    c.q("RWLOCK.RELEASE k writer WRITE");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let granted: i32 = readers.into_iter().map(|r| r.join().expect("reader")).sum();
    assert!(granted > 4, "the reader stream ran: {granted}");
}

#[test]
fn a_dead_readers_hold_ends_at_its_lease_end() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RWLOCK.ACQUIRE k dead READ PX 300");
    c.q("RWLOCK.ACQUIRE k alive READ PX 20000");
    let writer = queue_up(&server, &["RWLOCK.ACQUIRE k w WRITE WAIT 10000"]).remove(0);
    wait_until("the dead reader's hold ends", || {
        c.q("HEXISTS k dead").int() == 0
    });
    assert_eq!(c.q("EXISTS {k}:dead:rwlock_timeout:1").int(), 0);
    assert_eq!(c.q("HEXISTS k rlock:read:dead").int(), 0);
    let pttl = c.q("PTTL k").int();
    assert!(
        (18_000..=20_000).contains(&pttl),
        "the key follows the live reader: {pttl}"
    );
    assert_eq!(server.blocked_clients(), 1, "the live reader still reads");
    // The last reader dies too: the writer is granted within a few ms of its lease end.
    c.q("RWLOCK.RENEW k alive PX 300");
    let lease_end = Instant::now() + Duration::from_millis(300);
    assert!(writer.reply().int() > 0);
    let late = Instant::now().saturating_duration_since(lease_end);
    assert!(
        late < Duration::from_millis(150),
        "{late:?} after the lease end"
    );
    assert_eq!(holders(&mut c, "k"), vec![pair("w", "write")]);
    assert_eq!(c.q("KEYS {k}:*").items().len(), 0);
}

#[test]
fn the_key_ttl_is_the_longest_reader_lease() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RWLOCK.ACQUIRE k a READ PX 5000");
    c.q("RWLOCK.ACQUIRE k b READ PX 20000");
    assert!(c.q("PTTL k").int() > 15_000);
    c.q("RWLOCK.RELEASE k b READ");
    let pttl = c.q("PTTL k").int();
    assert!((3_000..=5_000).contains(&pttl), "after a release: {pttl}");
    assert_eq!(c.q("RWLOCK.RENEW k a PX 9000").int(), 1);
    assert!(c.q("PTTL k").int() > 8_000);
    assert_eq!(c.q("RWLOCK.RENEW k nobody").int(), 0);
}

#[test]
fn redisson_readers_and_rwlock_readers_share_and_exclude_writers() {
    let server = Server::start();
    let mut c = server.conn();
    assert_eq!(redisson::read_acquire(&mut c, "k", "uuid-1:1", 30000), None);
    let token = c.q("RWLOCK.ACQUIRE k rw-reader READ PX 20000").int();
    assert!(token > 0);
    assert!(c.q("RWLOCK.ACQUIRE k rw-writer WRITE").is_nil());
    assert!(redisson::write_acquire(&mut c, "k", "uuid-2:1", 30000).is_some());
    // Redisson's read unlock on a lock RWLOCK touched: the token field is no number to it.
    c.set_read_timeout(Some(Duration::from_secs(5)));
    assert_eq!(
        redisson::read_release(&mut c, "k", "uuid-1:1", "req-1"),
        Some(0)
    );
    let pttl = c.q("PTTL k").int();
    assert!(
        (18_000..=20_000).contains(&pttl),
        "the RWLOCK reader's lease: {pttl}"
    );
    assert_eq!(holders(&mut c, "k"), vec![pair("rw-reader", "read")]);
    let mut listener = server.conn();
    listener.cmd(&["SUBSCRIBE", &redisson::channel("k")]);
    assert_eq!(c.q("RWLOCK.RELEASE k rw-reader READ").int(), 0);
    assert_eq!(listener.read().expect("message").items()[2].text(), "1");
    assert_eq!(c.q("EXISTS k").int(), 0);
    assert_eq!(
        redisson::write_acquire(&mut c, "k", "uuid-2:1", 30000),
        None
    );
}

#[test]
fn a_redisson_read_unlock_of_an_owner_that_rwlock_also_holds() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RWLOCK.ACQUIRE k uuid-3:1 READ");
    assert_eq!(redisson::read_acquire(&mut c, "k", "uuid-3:1", 30000), None);
    assert_eq!(c.q("HGET k uuid-3:1").text(), "2");
    c.set_read_timeout(Some(Duration::from_secs(5)));
    assert_eq!(
        redisson::read_release(&mut c, "k", "uuid-3:1", "req-2"),
        Some(0)
    );
    assert_eq!(c.q("RWLOCK.RELEASE k uuid-3:1 READ").int(), 0);
    assert_eq!(c.q("EXISTS k").int(), 0);
}

#[test]
fn writers_of_either_side_exclude_each_other_and_wake_each_other() {
    let server = Server::start();
    let mut c = server.conn();
    assert_eq!(
        redisson::write_acquire(&mut c, "k", "uuid-4:1", 60000),
        None
    );
    assert!(c.q("RWLOCK.ACQUIRE k rw READ").is_nil());
    assert!(c.q("RWLOCK.INFO k").field("holders").items()[0]
        .field("token")
        .is_nil());
    let waiter = queue_up(&server, &["RWLOCK.ACQUIRE k rw WRITE WAIT 10000"]).remove(0);
    let started = Instant::now();
    assert_eq!(
        redisson::write_release(&mut c, "k", "uuid-4:1", "req-3"),
        Some(1)
    );
    assert!(waiter.reply().int() > 0);
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "woken by the DEL"
    );
    let ttl = redisson::write_acquire(&mut c, "k", "uuid-5:1", 30000).expect("refused");
    assert!(ttl > 0);
    assert!(redisson::read_acquire(&mut c, "k", "uuid-5:1", 30000).is_some());
    let mut listener = server.conn();
    listener.cmd(&["SUBSCRIBE", &redisson::channel("k")]);
    c.q("RWLOCK.RELEASE k rw WRITE");
    assert_eq!(listener.read().expect("message").items()[2].text(), "1");
    assert_eq!(redisson::read_acquire(&mut c, "k", "uuid-5:1", 30000), None);
}

#[test]
fn a_key_is_never_both_kinds_and_bad_input_changes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE plain owner");
    c.q("RWLOCK.ACQUIRE rw owner READ");
    c.q("SET str x");
    let before = snapshot(&mut c);
    let wrongtype = [
        "RWLOCK.ACQUIRE plain other READ",
        "RWLOCK.ACQUIRE plain owner WRITE",
        "RWLOCK.RELEASE plain owner READ",
        "RWLOCK.RENEW plain owner",
        "RWLOCK.INFO plain",
        "RWLOCK.FORCERELEASE plain",
        "RLOCK.ACQUIRE rw owner",
        "RLOCK.ACQUIRE rw other",
        "RLOCK.RELEASE rw owner",
        "RLOCK.RENEW rw owner",
        "RLOCK.INFO rw",
        "RLOCK.FORCERELEASE rw",
        "RWLOCK.ACQUIRE str owner READ",
    ];
    for line in wrongtype {
        assert!(c.q(line).err().starts_with("WRONGTYPE"), "{line}");
    }
    let errors = [
        ("RWLOCK.ACQUIRE rw owner", "wrong number of arguments"),
        ("RWLOCK.ACQUIRE rw owner BOTH", "mode must be READ or WRITE"),
        (
            "RWLOCK.ACQUIRE rw mode READ",
            "reserved by the read-write lock",
        ),
        (
            "RWLOCK.ACQUIRE rw x:write READ",
            "reserved by the read-write lock",
        ),
        ("RWLOCK.ACQUIRE rw rlock:x READ", "reserved by rlock"),
        (
            "RWLOCK.ACQUIRE rw other READ WATCHDOG WATCHDOG",
            "WATCHDOG given more than once",
        ),
        ("RWLOCK.ACQUIRE rw other READ ID", "ID needs a value"),
        (
            "RWLOCK.ACQUIRE rw other READ MAXHOLD 0",
            "MAXHOLD must be between",
        ),
        ("RWLOCK.ACQUIRE rw other READ PX 0", "PX must be between"),
        ("RWLOCK.RELEASE rw owner READ PX 5", "unknown option 'PX'"),
        ("RWLOCK.RENEW rw owner ID x", "unknown option 'ID'"),
        (
            "RWLOCK.FORCERELEASE rw TOKEN 5",
            "wrong number of arguments",
        ),
        ("RWLOCK.INFO", "wrong number of arguments"),
    ];
    for (line, text) in errors {
        let reply = c.q(line);
        assert!(reply.err().contains(text), "{line}: {reply:?}");
    }
    assert_eq!(snapshot(&mut c), before);
}

/// Reads, writes, re-entries, a downgrade, releases, a queued writer handed the lock when the
/// last reader's lease ends, a force release.
fn mixed_workload(server: &Server, c: &mut Conn) {
    c.q("RWLOCK.ACQUIRE r a READ PX 60000");
    c.q("RWLOCK.ACQUIRE r b READ PX 50000");
    c.q("RWLOCK.ACQUIRE r a READ PX 70000");
    c.q("RWLOCK.RELEASE r b READ");
    c.q("RWLOCK.ACQUIRE w writer WRITE PX 60000");
    c.q("RWLOCK.ACQUIRE w writer WRITE PX 60000");
    c.q("RWLOCK.ACQUIRE w writer READ PX 80000");
    c.q("RWLOCK.RELEASE w writer WRITE");
    c.q("RWLOCK.RELEASE w writer WRITE");
    c.q("RWLOCK.ACQUIRE x short READ PX 100");
    c.q("RWLOCK.ACQUIRE x long READ PX 200");
    let waiter = Pending::send(server, "RWLOCK.ACQUIRE x next WRITE PX 60000 WAIT 10000");
    assert!(waiter.reply().int() > 0);
    c.q("RWLOCK.ACQUIRE f someone READ");
    c.q("RWLOCK.FORCERELEASE f");
    c.q("RWLOCK.ACQUIRE gone a READ");
    c.q("RWLOCK.RELEASE gone a READ");
}

#[test]
fn a_replica_without_the_module_matches_the_master() {
    let master = Server::builder().master();
    let replica = Server::builder().without_module().replica_of(&master);
    let mut c = master.conn();
    mixed_workload(&master, &mut c);
    common::sync_replica(&mut c);
    let expected = snapshot(&mut c);
    let names: Vec<&str> = expected.iter().map(|(k, _, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "r",
            "w",
            "x",
            "{r}:a:rwlock_timeout:1",
            "{r}:a:rwlock_timeout:2",
            "{w}:writer:rwlock_timeout:1"
        ]
    );
    assert_eq!(snapshot(&mut replica.conn()), expected);
    master.assert_no_crash();
}

#[test]
fn info_replies_in_resp3_too() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("HELLO 3");
    c.q("RWLOCK.ACQUIRE k a READ PX 5000");
    let info = c.q("RWLOCK.INFO k");
    assert!(matches!(info, Value::Map(_)), "{info:?}");
    let holder = &info.field("holders").items()[0];
    assert_eq!(holder.field("holds").int(), 1);
    assert!((4_000..=5_000).contains(&holder.field("ttl").int()));
}
