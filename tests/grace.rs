//! A grace period on close (`rlock.watchdog-grace-ms`): a watchdog holding whose connection
//! closes is not released at once but its lease is cut to the grace, for its owner to re-bind
//! it from a new connection (`RENEW ... WATCHDOG`) before it ends.

mod common;
use common::{wait_until, Conn, Pending, Server};
use std::time::{Duration, Instant};

fn kill(admin: &mut Conn, holder: &mut Conn) {
    let id = holder.q("CLIENT ID").int();
    assert_eq!(admin.q(&format!("CLIENT KILL ID {id}")).int(), 1);
}

/// A holder whose connection is cut for 300 ms: kept with a 1 s grace, lost without one.
fn cut_for_300_ms(grace_ms: i64) -> (i64, Option<i64>) {
    let server = Server::start();
    let mut admin = server.conn();
    admin.q(&format!("CONFIG SET rlock.watchdog-grace-ms {grace_ms}"));
    let mut holder = server.conn();
    let token = holder.q("RLOCK.ACQUIRE l app:1 PX 30000 WATCHDOG").int();
    let waiter = Pending::send(&server, "RLOCK.ACQUIRE l app:2 PX 30000 WAIT 5000");
    server.wait_blocked(1);
    kill(&mut admin, &mut holder);
    let cut = Instant::now();
    if grace_ms > 0 {
        wait_until("the lease is cut to the grace", || {
            let info = admin.q("RLOCK.INFO l");
            !info.is_nil() && info.field("ttl").int() <= grace_ms && info.field("watchdog").is_nil()
        });
        assert_eq!(admin.q("RLOCK.INFO l").field("owner").text(), "app:1");
        assert_eq!(server.blocked_clients(), 1, "the waiter still waits");
    }
    std::thread::sleep(Duration::from_millis(300).saturating_sub(cut.elapsed()));
    let mut again = server.conn();
    let renewed = again.q("RLOCK.RENEW l app:1 PX 30000 WATCHDOG").int();
    let waited = if renewed == 1 {
        let info = admin.q("RLOCK.INFO l");
        assert_eq!(info.field("token").int(), token, "the same holding");
        assert_eq!(info.field("watchdog").int(), again.q("CLIENT ID").int());
        assert!(info.field("ttl").int() > 20_000, "the full lease again");
        drop(again);
        None
    } else {
        Some(waiter.reply().int())
    };
    server.assert_no_crash();
    (renewed, waited)
}

#[test]
fn a_holder_cut_off_for_300_ms_keeps_its_lock_with_a_1_s_grace() {
    let (renewed, _) = cut_for_300_ms(1000);
    assert_eq!(renewed, 1);
}

#[test]
fn without_a_grace_the_lock_goes_at_the_close() {
    let (renewed, waiter) = cut_for_300_ms(0);
    assert_eq!(renewed, 0);
    assert!(waiter.is_some_and(|token| token > 0));
}

#[test]
fn a_grace_that_runs_out_hands_the_lock_on_for_every_family() {
    let server = Server::start();
    let mut admin = server.conn();
    admin.q("CONFIG SET rlock.watchdog-grace-ms 200");
    admin.q("RSEM.SETPERMITS s 1");
    let mut holder = server.conn();
    holder.q("RLOCK.ACQUIRE l a WATCHDOG");
    holder.q("RWLOCK.ACQUIRE rw a WRITE WATCHDOG");
    holder.q("RSEM.ACQUIRE s a WATCHDOG");
    let waiters = [
        Pending::send(&server, "RLOCK.ACQUIRE l b WAIT 5000"),
        Pending::send(&server, "RWLOCK.ACQUIRE rw b READ WAIT 5000"),
        Pending::send(&server, "RSEM.ACQUIRE s b WAIT 5000"),
    ];
    server.wait_blocked(3);
    let closed = Instant::now();
    kill(&mut admin, &mut holder);
    let granted: Vec<i64> = waiters.into_iter().map(|w| w.reply().int()).collect();
    let after = closed.elapsed();
    assert!(granted.iter().all(|t| *t > 0), "{granted:?}");
    assert!(
        after >= Duration::from_millis(190) && after < Duration::from_millis(1500),
        "granted {after:?} after the close, with a 200 ms grace"
    );
    assert!(server.stat("watchdog_graces") >= 3);
    server.assert_no_crash();
}
