//! Leases as long as `SET ... PX` takes them: any lease whose end, now + ms, fits a 64-bit
//! integer (Redis's own check), in every family and in RENEW; longer is refused with a clear
//! error and changes nothing; the end of such a lease replicates to a module-less replica.

mod common;
use common::{snapshot, Pending, Server};

const TEN_YEARS_MS: i64 = 10 * 365 * 24 * 3600 * 1000;

#[test]
fn leases_past_a_year_are_taken_as_set_px_takes_them() {
    let server = Server::start();
    let mut c = server.conn();
    let px = TEN_YEARS_MS.to_string();
    assert_eq!(
        c.q(&format!("SET plain 1 PX {px}")).text(),
        "OK",
        "Redis's own"
    );
    assert!(c.q(&format!("RLOCK.ACQUIRE k o PX {px}")).int() > 0);
    let pttl = c.q("PTTL k").int();
    assert!(
        pttl > TEN_YEARS_MS - 5_000 && pttl <= TEN_YEARS_MS,
        "{pttl}"
    );
    assert!(c.q(&format!("RWLOCK.ACQUIRE rw o READ PX {px}")).int() > 0);
    assert!(c.q("PTTL rw").int() > TEN_YEARS_MS - 5_000);
    c.q("RSEM.SETPERMITS s 1");
    assert!(c.q(&format!("RSEM.ACQUIRE s o PX {px}")).int() > 0);
    let ttl = c.q("RSEM.INFO s").field("holders").items()[0]
        .field("ttl")
        .int();
    assert!(ttl > TEN_YEARS_MS - 5_000, "{ttl}");
    // RENEW takes them too, and the longest SET PX takes (now + ms = 2^63 - 1, to the ms).
    assert_eq!(
        c.q(&format!("RLOCK.RENEW k o PX {}", TEN_YEARS_MS * 2))
            .int(),
        1
    );
    assert!(c.q("PTTL k").int() > TEN_YEARS_MS);
    let near_max = i64::MAX - 2 * now_ms(&mut c) - 60_000;
    assert!(c.q(&format!("RLOCK.ACQUIRE far o PX {near_max}")).int() > 0);
    assert!(c.q("PTTL far").int() > near_max - 5_000);
}

fn now_ms(c: &mut common::Conn) -> i64 {
    let time = c
        .q("TIME")
        .items()
        .iter()
        .map(|v| v.text())
        .collect::<Vec<_>>();
    time[0].parse::<i64>().unwrap() * 1000 + time[1].parse::<i64>().unwrap() / 1000
}

#[test]
fn a_lease_past_the_end_of_time_is_refused_and_changes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    c.q("RLOCK.ACQUIRE k o PX 60000");
    c.q("RSEM.SETPERMITS s 1");
    let before = snapshot(&mut c);
    let max = i64::MAX.to_string();
    assert!(c
        .q(&format!("SET plain 1 PX {max}"))
        .err()
        .contains("invalid expire time"));
    for line in [
        format!("RLOCK.ACQUIRE k2 o PX {max}"),
        format!("RLOCK.RENEW k o PX {max}"),
        format!("RWLOCK.ACQUIRE rw o WRITE PX {max}"),
        format!("RSEM.ACQUIRE s o PX {max}"),
        format!("RLOCK.ACQUIREALL 2 a b o PX {max}"),
        "RLOCK.ACQUIRE k2 o PX 0".to_string(),
    ] {
        let error = c.q(&line).err();
        assert!(
            error.starts_with("ERR PX must be between 1 and "),
            "{line}: {error}"
        );
        assert!(error.ends_with(" milliseconds"), "{line}: {error}");
    }
    assert_eq!(snapshot(&mut c), before);
}

#[test]
fn waits_beside_a_long_held_lock_still_time_out() {
    // Its lease timer is armed a year ahead at most (Redis counts timers in µs): the waiter
    // times out on time, and the server stays well.
    let server = Server::start();
    let mut c = server.conn();
    let px = i64::MAX - 2 * now_ms(&mut c);
    assert!(c.q(&format!("RLOCK.ACQUIRE k o PX {px}")).int() > 0);
    let waiter = Pending::send(&server, "RLOCK.ACQUIRE k other WAIT 100");
    assert!(waiter.reply().is_nil());
    assert_eq!(c.q("RLOCK.RELEASE k o").int(), 0, "no holds left");
    assert!(c.q("RLOCK.ACQUIRE k other").int() > 0);
    server.assert_no_crash();
}

#[test]
fn a_long_lease_replicates_to_a_replica_without_the_module() {
    let master = Server::builder().master();
    let replica = Server::builder().without_module().replica_of(&master);
    let mut c = master.conn();
    let px = TEN_YEARS_MS * 100;
    c.q(&format!("RLOCK.ACQUIRE k o PX {px}"));
    c.q(&format!("RWLOCK.ACQUIRE rw o READ PX {px}"));
    common::sync_replica(&mut c);
    let expected = snapshot(&mut c);
    assert!(
        expected.iter().all(|(_, _, at)| *at > TEN_YEARS_MS),
        "{expected:?}"
    );
    assert_eq!(snapshot(&mut replica.conn()), expected);
}
