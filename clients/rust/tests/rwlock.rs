//! `RwLock` against real redis-server processes with the module loaded: shared reads, the
//! exclusive write, downgrade, the FIFO queue seen from the client (no writer starvation),
//! retried calls, cancelled waits.

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod support;

use rlock_client::{Error, RwLock};
use std::time::Duration;
use support::proxy::Proxy;
use support::{client, client_at, retries_answered, rw_holders, rw_waiting, server};

/// The holders as (owner, mode, holds), sorted by owner.
fn holders(redis: &common::Server, key: &str) -> Vec<(String, String, i64)> {
    let mut holders = rw_holders(redis, key);
    holders.sort();
    holders
}

fn held(owner: &str, mode: &str, holds: i64) -> (String, String, i64) {
    (owner.to_string(), mode.to_string(), holds)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_a_writer_excludes_and_three_lines_do_it() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);

    let doc = RwLock::new(&client, "doc:7");
    let writing = doc.write().await?;
    assert!(writing.token() > 0);
    assert_eq!(
        holders(&redis, "doc:7"),
        vec![held(doc.owner(), "write", 1)]
    );
    writing.release().await?;
    assert!(holders(&redis, "doc:7").is_empty());

    // Two readers at once; a writer is kept out while either reads.
    let (first, second, writer) = (
        RwLock::new(&client, "doc:7"),
        RwLock::new(&client, "doc:7"),
        RwLock::new(&client, "doc:7"),
    );
    let a = first.read().await?;
    let b = second.read().await?;
    assert!(b.token() > a.token(), "each reader gets its own token");
    assert!(matches!(writer.write().await, Err(Error::NotAcquired)));
    a.release().await?;
    assert!(matches!(writer.write().await, Err(Error::NotAcquired)));
    b.release().await?;
    let w = writer.write().await?;
    assert!(matches!(first.read().await, Err(Error::NotAcquired)));
    assert!(matches!(second.write().await, Err(Error::NotAcquired)));
    w.release().await?;
    assert!(holders(&redis, "doc:7").is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retried_reads_and_writes_count_once() -> Result<(), Error> {
    let redis = server();
    let proxy = Proxy::start(redis.port).await;
    let client = client_at(proxy.port);
    // Without the watchdog: with it, the dropped connection would end the first holding
    // (its binding), and the retry would be a new grant rather than an answer by id.
    for (mode, lock) in [
        ("read", RwLock::new(&client, "r").watchdog(false)),
        ("write", RwLock::new(&client, "w").watchdog(false)),
    ] {
        let key = lock.key().to_string();
        let take = || async {
            match mode {
                "read" => lock.read().await.map(|g| (g.token(), Some(g), None)),
                _ => lock.write().await.map(|g| (g.token(), None, Some(g))),
            }
        };
        let answered = retries_answered(&redis);
        // The acquire reaches the server, its reply is lost with the connection, and the
        // client sends it again (same id) on a fresh connection: still one hold.
        proxy.drop_reply_to("RWLOCK.ACQUIRE");
        let (token, outer_read, outer_write) = take().await?;
        assert_eq!(holders(&redis, &key), vec![held(lock.owner(), mode, 1)]);
        assert_eq!(
            retries_answered(&redis),
            answered + 1,
            "the second send was a retry"
        );

        let (again, inner_read, inner_write) = take().await?;
        assert_eq!(again, token);
        assert_eq!(holders(&redis, &key), vec![held(lock.owner(), mode, 2)]);
        proxy.drop_reply_to("RWLOCK.RELEASE");
        match (inner_read, inner_write) {
            (Some(guard), _) => guard.release().await?,
            (_, Some(guard)) => guard.release().await?,
            _ => unreachable!(),
        }
        assert_eq!(
            holders(&redis, &key),
            vec![held(lock.owner(), mode, 1)],
            "a retried release gives back one hold"
        );
        assert_eq!(retries_answered(&redis), answered + 2);
        match (outer_read, outer_write) {
            (Some(guard), _) => guard.release().await?,
            (_, Some(guard)) => guard.release().await?,
            _ => unreachable!(),
        }
        assert!(holders(&redis, &key).is_empty());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_read_or_write_wait_leaves_the_queue() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let holder = RwLock::new(&client, "k").watchdog(false);
    let writing = holder.write().await?;

    let reader = RwLock::new(&client, "k").wait_forever();
    let read_wait = tokio::spawn(async move { reader.read().await.map(drop) });
    let writer = RwLock::new(&client, "k").wait_forever();
    let write_wait = tokio::spawn(async move { writer.write().await.map(drop) });
    common::wait_until("both queued", || rw_waiting(&redis, "k") == (1, 1));

    write_wait.abort();
    common::wait_until("the writer left", || rw_waiting(&redis, "k") == (1, 0));
    // A wait ended by the caller's own timeout leaves too.
    let impatient = RwLock::new(&client, "k").wait_forever();
    let timed_out = tokio::time::timeout(Duration::from_millis(200), impatient.write()).await;
    assert!(timed_out.is_err());
    common::wait_until("the impatient writer left", || {
        rw_waiting(&redis, "k") == (1, 0)
    });
    read_wait.abort();
    common::wait_until("the queue empty", || rw_waiting(&redis, "k") == (0, 0));

    // Nobody left in the queue is granted: releasing leaves the lock free.
    writing.release().await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(holders(&redis, "k").is_empty());
    Ok(())
}
