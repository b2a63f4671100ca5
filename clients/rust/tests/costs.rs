//! What an uncontended acquire+release pair costs, counted exactly (issue 46): commands on the
//! server, new connections, tasks started by an acquire, allocations, and the size of the
//! futures a pair builds. A benchmark is noisy; a count is not, so these fail the moment the
//! uncontended path grows a round trip, a connection, a task or its allocations.
//!
//! Each case warms up first (the first pair opens what the lock needs), then counts over
//! PAIRS pairs on a server of its own (nothing else runs commands on it), reading the server's
//! figures on one connection of the test's own, opened before.

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod support;

use common::Conn;
use rlock_client::{Error, Lock};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::future::Future;
use std::task::Poll;
use std::time::{Duration, Instant};
use support::{client, server};

const PAIRS: i64 = 100;

/// Counted apart: ROLE is the replica count read for confirmation, at most once a second;
/// CONFIG GET and PING are the keep-alive's (the interval, read once; a PING every third of
/// rlock.watchdog-idle-ms while a holding is kept); PUBSUB NUMSUB is run inside the server by
/// the module (its check that a NOTIFY connection is subscribed), no round trip; INFO is the
/// test's own.
const TIMED: [&str; 3] = ["role", "config|get", "ping"];
const NOT_PER_PAIR: [&str; 2] = ["pubsub|numsub", "info"];

fn command_calls(admin: &mut Conn) -> BTreeMap<String, i64> {
    admin
        .cmd(&["INFO", "commandstats"])
        .text()
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("cmdstat_")?;
            let (name, stats) = rest.split_once(':')?;
            let calls = stats
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            Some((name.to_string(), calls))
        })
        .collect()
}

fn connections_received(admin: &mut Conn) -> i64 {
    let stats = admin.cmd(&["INFO", "stats"]).text();
    let line = stats
        .lines()
        .find_map(|l| l.strip_prefix("total_connections_received:"));
    line.expect("total_connections_received")
        .trim()
        .parse()
        .expect("number")
}

/// What PAIRS pairs of `lock` cost after one to warm up.
struct Cost {
    /// The commands the server ran for them, less the timed ones and those not per pair.
    per_pair: BTreeMap<String, i64>,
    /// The timed calls, and how long the pairs took.
    timed: i64,
    elapsed: Duration,
    /// The connections they opened.
    connections: i64,
}

async fn count(admin: &mut Conn, lock: &Lock) -> Result<Cost, Error> {
    lock.acquire().await?.release().await?;
    let connections = connections_received(admin);
    let before = command_calls(admin);
    let started = Instant::now();
    for _ in 0..PAIRS {
        lock.acquire().await?.release().await?;
    }
    let elapsed = started.elapsed();
    let mut per_pair = BTreeMap::new();
    let mut timed = 0;
    for (name, calls) in command_calls(admin) {
        let more = calls - before.get(&name).copied().unwrap_or(0);
        if more == 0 || NOT_PER_PAIR.contains(&name.as_str()) {
            continue;
        }
        if TIMED.contains(&name.as_str()) {
            timed += more;
        } else {
            per_pair.insert(name, more);
        }
    }
    // Less the INFO above, on the test's own connection (opened before the pairs).
    let connections = connections_received(admin) - connections;
    Ok(Cost {
        per_pair,
        timed,
        elapsed,
        connections,
    })
}

/// Two commands a pair, the timed ones within their rates, and no new connection.
fn assert_lean(cost: &Cost) {
    assert_eq!(cost.per_pair, two_commands(), "commands in {PAIRS} pairs");
    let (timed, elapsed) = (cost.timed, cost.elapsed);
    assert!(
        timed as f64 <= 2.0 * (elapsed.as_secs_f64() + 2.0),
        "{timed} timed calls in {elapsed:?}"
    );
    assert_eq!(
        cost.connections, 0,
        "{PAIRS} pairs opened {} connections",
        cost.connections
    );
}

fn two_commands() -> BTreeMap<String, i64> {
    BTreeMap::from([
        ("rlock.acquire".to_string(), PAIRS),
        ("rlock.release".to_string(), PAIRS),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_lock_pair_costs_two_commands_and_no_connection() -> Result<(), Error> {
    let redis = server();
    let lock = Lock::new(&client(&redis), "k").wait(Duration::from_secs(30));
    assert_lean(&count(&mut redis.conn(), &lock).await?);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_lock_pair_costs_two_commands_and_no_connection() -> Result<(), Error> {
    let redis = server();
    let lock = Lock::new(&client(&redis), "k")
        .watchdog(false)
        .lease(Duration::from_secs(10));
    assert_lean(&count(&mut redis.conn(), &lock).await?);
    Ok(())
}

/// A watchdog holding taken without a wait lives on a connection of its own (the server ends
/// it the moment that connection closes). The handle keeps that connection between its
/// holdings (parked once a release leaves nothing on it), so pairs after the first cost what
/// the others cost: before, each opened one (HELLO and the redis crate's COMMAND INFO on it,
/// 100 connections for 100 pairs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watchdog_lock_pair_costs_two_commands_and_no_connection() -> Result<(), Error> {
    let redis = server();
    let lock = Lock::new(&client(&redis), "k");
    assert_lean(&count(&mut redis.conn(), &lock).await?);
    Ok(())
}

/// The runtime's live tasks while an acquire of `lock` is on the wire (polled once: sent, its
/// reply not yet read), and before it, after a warm-up pair.
async fn tasks_while_acquiring(lock: &Lock) -> Result<(usize, usize), Error> {
    lock.acquire().await?.release().await?;
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let mut acquiring = Box::pin(lock.acquire());
    let mut early = None;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(done) = acquiring.as_mut().poll(cx) {
            early = Some(done);
        }
        Poll::Ready(())
    })
    .await;
    let during = metrics.num_alive_tasks();
    let guard = match early {
        Some(done) => done?,
        None => acquiring.await?,
    };
    guard.release().await?;
    Ok((before, during))
}

/// A waiting acquire runs its call in the acquiring future: before, each started a task for
/// it (so that a cancelled acquire still learned whether it held at once; now only a
/// cancelled one hands its call to a task). The lock without a wait starts none either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_starts_no_task() -> Result<(), Error> {
    let redis = server();
    let waiting = Lock::new(&client(&redis), "w").wait(Duration::from_secs(30));
    let (before, during) = tasks_while_acquiring(&waiting).await?;
    assert_eq!(
        during, before,
        "tasks alive while a waiting acquire is on the wire"
    );
    let first_example = Lock::new(&client(&redis), "n");
    let (before, during) = tasks_while_acquiring(&first_example).await?;
    assert_eq!(
        during, before,
        "tasks alive while an acquire without a wait is on the wire"
    );
    Ok(())
}

thread_local! {
    /// Allocations made on this thread (no destructor, so the allocator may count at any time).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, counting each thread's allocations (a reallocation counts as one).
struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// The compare-and-delete release users write beside `SET key token NX PX` (the bench's).
const COMPARE_AND_DELETE: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// The allocations of PAIRS pairs of `lock` after one to warm up, on this thread.
async fn lock_allocations(lock: &Lock) -> Result<u64, Error> {
    lock.acquire().await?.release().await?;
    let before = allocations();
    for _ in 0..PAIRS {
        lock.acquire().await?.release().await?;
    }
    Ok(allocations() - before)
}

/// The allocations of PAIRS pairs of `SET key token NX PX` + the compare-and-delete script
/// (`EVALSHA`) through the redis crate's multiplexed connection, after one to warm up.
async fn set_nx_allocations(client: &redis::Client) -> redis::RedisResult<u64> {
    let mut conn = client.get_multiplexed_async_connection().await?;
    let release = redis::Script::new(COMPARE_AND_DELETE);
    let mut before = 0;
    for pair in 0..=PAIRS {
        if pair == 1 {
            before = allocations();
        }
        let mut set = redis::cmd("SET");
        set.arg("s").arg("token").arg("NX").arg("PX").arg(10_000);
        let held: Option<String> = set.query_async(&mut conn).await?;
        assert!(held.is_some(), "SET NX refused");
        let deleted: i64 = release
            .key("s")
            .arg("token")
            .invoke_async(&mut conn)
            .await?;
        assert_eq!(deleted, 1);
    }
    Ok(allocations() - before)
}

/// The first example's pair (the watchdog, no wait) allocates no more than the pattern it
/// replaces, `SET NX PX` + compare-and-delete through the same redis crate (the bench's
/// `set-nx` side). A current-thread runtime runs everything of both on this thread, the redis
/// crate's connection tasks included. Before: 33 a pair against 20 (a request id and a
/// command name formatted per call, commands grown an argument at a time, the guard's own
/// copies of key and owner, a hold-cap marker without a cap); now 14.
#[tokio::test]
async fn a_watchdog_lock_pair_allocates_no_more_than_set_nx_and_compare_and_delete(
) -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let ours = lock_allocations(&Lock::new(&client, "k")).await?;
    let theirs = set_nx_allocations(&client).await?;
    println!("{PAIRS} pairs: {ours} allocations for the Lock, {theirs} for SET NX PX + compare-and-delete");
    assert!(
        ours <= theirs,
        "{PAIRS} pairs: {ours} allocations for the Lock, {theirs} for SET NX PX + compare-and-delete"
    );
    Ok(())
}

/// A pair's futures are built, then moved as they are awaited (a copy of the whole state
/// each time). A connection's opening, rare, is boxed rather than part of every call's
/// future: before, 7,032 bytes an acquire's and 6,120 a release's; now about 2,200 and 1,300.
#[tokio::test]
async fn a_pairs_futures_carry_no_connecting() -> Result<(), Error> {
    const LIMIT: usize = 3 * 1024;
    let redis = server();
    for lock in [
        Lock::new(&client(&redis), "k"),
        Lock::new(&client(&redis), "w").wait(Duration::from_secs(30)),
    ] {
        let acquiring = lock.acquire();
        let acquire_size = std::mem::size_of_val(&acquiring);
        let releasing = acquiring.await?.release();
        let release_size = std::mem::size_of_val(&releasing);
        releasing.await?;
        println!("futures: acquire {acquire_size} bytes, release {release_size} bytes");
        assert!(
            acquire_size <= LIMIT,
            "an acquire's future: {acquire_size} bytes"
        );
        assert!(
            release_size <= LIMIT / 2,
            "a release's future: {release_size} bytes"
        );
    }
    Ok(())
}
