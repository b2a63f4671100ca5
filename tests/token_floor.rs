//! Tokens keep rising across a failover to a replica whose clock is behind the old primary's
//! (docs/guarantees.md, finding 5): the replica learns every token its primary replicates, so
//! the key's deletion, the promotion and a restart from its AOF do not take the token clock
//! back. The primary's clock is set ahead with `jepsen/clockshift` (an LD_PRELOAD library of
//! this repository), so both servers are real processes.

mod common;
use common::{wait_until, Server};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// How far ahead the old primary's wall clock runs: far more than a test takes.
const AHEAD_S: i64 = 600;

/// `clockshift.so`, built from the repository's source into `dir`.
fn clockshift(dir: &Path) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let so = dir.join("clockshift.so");
    let status = Command::new("cc")
        .args(["-O2", "-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(root.join("jepsen/clockshift/clockshift.c"))
        .status()
        .expect("run cc");
    assert!(status.success(), "building clockshift.so failed");
    so
}

/// A primary whose wall clock is `AHEAD_S` ahead, and its replica with `replica_args`.
fn ahead_primary_and_replica(replica_args: &[(&str, &str)]) -> (Server, Server) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("rlock-token-floor-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let shift = dir.join("offset");
    std::fs::write(&shift, AHEAD_S.to_string()).expect("offset file");
    let primary = Server::builder()
        .env("LD_PRELOAD", clockshift(&dir).to_str().expect("utf-8 path"))
        .env("CLOCKSHIFT_FILE", shift.to_str().expect("utf-8 path"))
        .master();
    let primary_s = primary.conn().q("TIME").items()[0].text().parse::<i64>();
    let here_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64);
    let ahead = primary_s.expect("TIME") - here_s.expect("clock");
    assert!(
        ahead >= AHEAD_S - 5,
        "the primary's clock is {ahead} s ahead, not {AHEAD_S}"
    );
    let replica = replica_args
        .iter()
        .fold(Server::builder(), |b, (name, value)| b.arg(name, value))
        .replica_of(&primary);
    (primary, replica)
}

/// A token taken and released on the primary, replicated to its one replica: the key is gone.
fn granted_and_released(primary: &Server) -> i64 {
    let acquire = "RLOCK.ACQUIRE orders old-holder PX 60000";
    granted_and_released_with(primary, acquire, &["RLOCK.RELEASE orders old-holder"])
}

/// The token of `acquire`, then the `release` commands, which leave no key `orders`.
fn granted_and_released_with(primary: &Server, acquire: &str, release: &[&str]) -> i64 {
    let mut c = primary.conn();
    let token = c.q(acquire).int();
    assert!(token > 0, "{acquire}: {token}");
    release.iter().for_each(|line| drop(c.q(line)));
    assert_eq!(
        c.q("WAIT 1 10000").int(),
        1,
        "the replica has the grant and the release"
    );
    assert_eq!(c.q("EXISTS orders").int(), 0);
    token
}

/// Promotes the replica and takes the lock there: the new primary's first token.
fn promoted_token(replica: &Server) -> i64 {
    promoted_token_with(replica, &[], "RLOCK.ACQUIRE orders new-holder PX 60000")
}

/// Promotes the replica, runs `setup` there and replies the token of `acquire`.
fn promoted_token_with(replica: &Server, setup: &[&str], acquire: &str) -> i64 {
    let mut r = replica.conn();
    assert_eq!(r.q("REPLICAOF NO ONE").text(), "OK");
    wait_until("the replica is a primary", || {
        r.q("INFO replication").text().contains("role:master")
    });
    assert_eq!(
        r.q("EXISTS orders").int(),
        0,
        "the key was deleted before the failover"
    );
    setup.iter().for_each(|line| drop(r.q(line)));
    r.q(acquire).int()
}

#[test]
fn read_write_locks_and_semaphores_pass_their_tokens_on_too() {
    let rw = |who: &str| format!("RWLOCK.ACQUIRE orders {who} WRITE PX 60000");
    let (primary, replica) = ahead_primary_and_replica(&[]);
    let old = granted_and_released_with(&primary, &rw("old"), &["RWLOCK.RELEASE orders old WRITE"]);
    let new = promoted_token_with(&replica, &[], &rw("new"));
    assert!(new > old, "read-write lock: {new} after {old}");

    let (primary, replica) = ahead_primary_and_replica(&[]);
    assert_eq!(primary.conn().q("RSEM.SETPERMITS orders 2").int(), 1);
    let sem = |who: &str| format!("RSEM.ACQUIRE orders {who} PX 60000");
    let old = granted_and_released_with(
        &primary,
        &sem("old"),
        &["RSEM.RELEASE orders old", "DEL orders"],
    );
    let new = promoted_token_with(&replica, &["RSEM.SETPERMITS orders 2"], &sem("new"));
    assert!(new > old, "semaphore: {new} after {old}");
}

#[test]
fn a_promoted_replica_whose_clock_is_behind_issues_higher_tokens() {
    let (primary, replica) = ahead_primary_and_replica(&[]);
    let old = granted_and_released(&primary);
    let new = promoted_token(&replica);
    assert!(
        new > old,
        "token went back after the failover: {new} after {old} ({} s)",
        (old - new) / 1_000_000
    );
}

#[test]
fn a_replica_restarted_from_its_aof_still_issues_higher_tokens() {
    let aof = [("appendonly", "yes"), ("appendfsync", "always")];
    let (primary, mut replica) = ahead_primary_and_replica(&aof);
    // The replica rewrites its AOF after its first sync; what it appends meanwhile is kept
    // only once that rewrite has finished.
    wait_until("the replica's first AOF rewrite", || {
        let info = replica.info("persistence");
        info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0")
    });
    let old = granted_and_released(&primary);
    // A round trip after WAIT: the replica has written the stream to its AOF before it replies.
    assert_eq!(replica.conn().q("PING").text(), "PONG");
    replica.kill9_and_restart();
    let new = promoted_token(&replica);
    assert!(
        new > old,
        "token went back after a restart and a failover: {new} after {old} ({} s)",
        (old - new) / 1_000_000
    );
}
