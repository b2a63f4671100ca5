//! `CountDownLatch` against real redis-server processes with the module loaded: counting
//! down, waits that share one connection and open together, retried sets and count-downs, and
//! waits that are given up (a latch's `RLOCK.CANCEL` names no owner, so it would take out every
//! wait of the latch on the shared connection: the client must keep the others waiting).

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod support;

use rlock_client::{CountDownLatch, Error};
use std::time::{Duration, Instant};
use support::proxy::Proxy;
use support::{client, client_at, notified_waiters, retries_answered, server};
use tokio::task::JoinHandle;

const SECOND: Duration = Duration::from_secs(1);

/// A wait in a task of its own: what it returned, and when.
fn waiting(
    latch: CountDownLatch,
    limit: Option<Duration>,
) -> JoinHandle<Result<(bool, Instant), Error>> {
    tokio::spawn(async move {
        let opened = match limit {
            Some(limit) => latch.wait_for(limit).await?,
            None => latch.wait().await.map(|()| true)?,
        };
        Ok((opened, Instant::now()))
    })
}

async fn outcome(task: JoinHandle<Result<(bool, Instant), Error>>) -> (bool, Instant) {
    tokio::time::timeout(5 * SECOND, task)
        .await
        .expect("the wait ended in time")
        .expect("task")
        .expect("no error")
}

/// The ids of the connections subscribed to a channel: the shared waiting connections.
fn subscribed(redis: &common::Server) -> usize {
    let list = redis.conn().cmd(&["CLIENT", "LIST"]).text();
    list.lines()
        .filter(|line| line.split(' ').any(|field| field == "sub=1"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latch_counts_down_and_opens_for_every_waiter_at_once() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);

    let ready = CountDownLatch::new(&client, "ready");
    assert!(ready.wait_for(SECOND).await?, "a latch never set is open");
    assert!(ready.try_set_count(2).await?);
    assert!(!ready.try_set_count(5).await?, "set only once");
    assert_eq!(ready.count().await?, 2);

    // Thirty waits, one shared connection, no blocked connection.
    let tasks: Vec<_> = (0..30)
        .map(|i| {
            let limit = (i % 2 == 0).then_some(30 * SECOND);
            waiting(CountDownLatch::new(&client, "ready"), limit)
        })
        .collect();
    common::wait_until("thirty waits queued", || notified_waiters(&redis) == 30);
    assert_eq!(redis.blocked_clients(), 0);
    assert_eq!(subscribed(&redis), 1);

    assert_eq!(CountDownLatch::new(&client, "ready").count_down().await?, 1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        tasks.iter().all(|task| !task.is_finished()),
        "not open at 1"
    );
    let opened_at = Instant::now();
    assert_eq!(ready.count_down().await?, 0);
    for task in tasks {
        let (opened, at) = outcome(task).await;
        assert!(opened);
        assert!(at.duration_since(opened_at) < SECOND);
    }
    assert_eq!(ready.count().await?, 0);
    assert_eq!(notified_waiters(&redis), 0);
    assert!(ready.wait_for(SECOND).await?, "open now");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_runs_out_says_so_and_leaves_the_queue() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let latch = CountDownLatch::new(&client, "l");
    assert!(latch.try_set_count(1).await?);

    let started = Instant::now();
    assert!(!latch.wait_for(Duration::from_millis(300)).await?);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_millis(800),
        "{waited:?}"
    );
    common::wait_until("the wait left the queue", || notified_waiters(&redis) == 0);
    assert_eq!(latch.count().await?, 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn giving_up_one_wait_keeps_the_others_of_the_latch_waiting() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let setter = CountDownLatch::new(&client, "l");
    assert!(setter.try_set_count(1).await?);

    // Three waits on the one shared connection: the first is dropped, the second gives up at
    // its deadline; the third must still be let in when the latch opens.
    let dropped = waiting(CountDownLatch::new(&client, "l"), None);
    common::wait_until("one queued", || notified_waiters(&redis) == 1);
    let short = waiting(
        CountDownLatch::new(&client, "l"),
        Some(Duration::from_millis(200)),
    );
    let patient = waiting(CountDownLatch::new(&client, "l"), None);
    common::wait_until("three queued", || notified_waiters(&redis) == 3);
    dropped.abort();
    let (opened, _) = outcome(short).await;
    assert!(!opened);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!patient.is_finished());

    setter.count_down().await?;
    let (opened, _) = outcome(patient).await;
    assert!(opened, "the remaining wait opened");
    assert_eq!(notified_waiters(&redis), 0);

    // Once the last wait of a latch is given up, the queue is empty.
    let other = CountDownLatch::new(&client, "m");
    assert!(other.try_set_count(1).await?);
    let (a, b) = (
        waiting(CountDownLatch::new(&client, "m"), None),
        waiting(CountDownLatch::new(&client, "m"), None),
    );
    common::wait_until("two queued", || notified_waiters(&redis) == 2);
    a.abort();
    b.abort();
    common::wait_until("the queue empty", || notified_waiters(&redis) == 0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn waits_that_come_while_another_leaves_are_still_let_in() -> Result<(), Error> {
    const KEYS: usize = 200;
    let redis = server();
    let client = client(&redis);
    // On each of many latches, one wait is given up while a new one starts, all at once on
    // the one shared connection. Where the leaving wait was the last of its latch it sends
    // the latch's cancel, which takes out every wait of the latch on the connection: also a
    // new one that queued after the leaving wait looked, and before the cancel went out.
    // That one must queue again and be let in.
    let keys: Vec<String> = (0..KEYS).map(|k| format!("l:{k}")).collect();
    for key in &keys {
        assert!(
            CountDownLatch::new(&client, key.as_str())
                .try_set_count(1)
                .await?
        );
    }
    let leaving: Vec<_> = keys
        .iter()
        .map(|key| waiting(CountDownLatch::new(&client, key.as_str()), None))
        .collect();
    common::wait_until("every first wait queued", || {
        notified_waiters(&redis) == KEYS as i64
    });
    let mut staying = Vec::new();
    for (key, leaving) in keys.iter().zip(leaving) {
        leaving.abort();
        staying.push(waiting(
            CountDownLatch::new(&client, key.as_str()),
            Some(30 * SECOND),
        ));
    }
    // Settled: every cancel answered, every wait it took out queued again. (Without the
    // queueing again, some of the new waits never open: seen in every run of 200.)
    tokio::time::sleep(Duration::from_millis(300)).await;
    for key in &keys {
        assert_eq!(
            CountDownLatch::new(&client, key.as_str())
                .count_down()
                .await?,
            0
        );
    }
    for (k, task) in staying.into_iter().enumerate() {
        let (opened, _) = outcome(task).await;
        assert!(opened, "the new wait on {}", keys[k]);
    }
    common::wait_until("the queue empty", || notified_waiters(&redis) == 0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_set_and_count_down_count_once() -> Result<(), Error> {
    let redis = server();
    let proxy = Proxy::start(redis.port).await;
    let client = client_at(proxy.port);
    let latch = CountDownLatch::new(&client, "l");

    // Each call reaches the server, its reply is lost with the connection, and the client
    // sends it again with the same id on a fresh connection: the set is `true` again (not
    // "already set"), the count-down one down, not two.
    proxy.drop_reply_to("RLATCH.SET");
    assert!(
        latch.try_set_count(3).await?,
        "the retry of the call that set it"
    );
    assert_eq!(retries_answered(&redis), 1, "the second send was a retry");
    proxy.drop_reply_to("RLATCH.COUNTDOWN");
    assert_eq!(latch.count_down().await?, 2);
    assert_eq!(retries_answered(&redis), 2);
    assert_eq!(latch.count().await?, 2);
    assert!(!latch.try_set_count(9).await?, "set already");
    assert_eq!(latch.count_down().await?, 1);
    Ok(())
}
