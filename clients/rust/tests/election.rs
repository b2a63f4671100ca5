//! `Election`: campaign, leader, observe, resign and loss reporting, on real redis-server
//! processes with keyspace events of the module class on.

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod support;

use common::Server;
use rlock_client::{Election, Error, Leader, Observer};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::holder::HoldingProcess;
use support::proxy::Proxy;
use support::{bound_to, client, client_at, kill_client, server, wait_waiters};

const NAME: &str = "election:scheduler";
/// How soon a follower leads and an observer sees it: far below the 30 s lease a client-side
/// watchdog would leave, and a bound that a loaded machine meets (the 50 ms is a
/// speed goal, for the bench: typical runs here see a few ms).
const SEEN_WITHIN: Duration = Duration::from_millis(1000);

fn with_events() -> Server {
    let redis = server();
    redis
        .conn()
        .cmd(&["CONFIG", "SET", "notify-keyspace-events", "Kd"]);
    redis
}

/// `RLOCK.LEADER` calls the server has answered (`INFO commandstats`).
fn leader_calls(redis: &Server) -> u64 {
    let stats = redis.info_field("commandstats", "cmdstat_rlock.leader");
    stats
        .split(',')
        .find_map(|field| field.strip_prefix("calls="))
        .map_or(0, |calls| calls.parse().expect("a count"))
}

/// Candidates, each on a connection of its own (through its own proxy: waits of one server
/// address share one connection), queued in the order given.
async fn candidates(redis: &Server, names: &[&str]) -> (Vec<Proxy>, Vec<Arc<Election>>) {
    let mut proxies = Vec::new();
    let mut elections = Vec::new();
    for name in names {
        let proxy = Proxy::start(redis.port).await;
        elections.push(Arc::new(Election::new(client_at(proxy.port), NAME, *name)));
        proxies.push(proxy);
    }
    (proxies, elections)
}

/// Starts the campaign of `election` in a task, once the queue holds `ahead` candidates.
fn campaign(
    redis: &Server,
    election: &Arc<Election>,
    ahead: i64,
) -> tokio::task::JoinHandle<Result<u64, Error>> {
    let election = election.clone();
    let task = tokio::spawn(async move { election.campaign().await });
    wait_waiters(redis, NAME, ahead + 1);
    task
}

/// The observer's next items until one names `owner`, each within what is left of `within`.
async fn seen(observer: &mut Observer, owner: &str, since: Instant, within: Duration) -> Leader {
    loop {
        let left = within.saturating_sub(since.elapsed());
        let next = tokio::time::timeout(left, observer.next()).await;
        let item = next.unwrap_or_else(|_| panic!("{owner} not seen in {within:?}"));
        let leader = item.expect("the stream goes on").expect("no error");
        if let Some(leader) = leader.filter(|leader| leader.owner == owner) {
            return leader;
        }
    }
}

/// Three candidates: the first leads; its connection is killed on the server, so the next
/// leads, with a larger term, and an observer sees it within SEEN_WITHIN having sent no command
/// since the last change. The old leader is told it lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dropped_leader_is_followed_by_the_next_and_observers_see_it_at_once() -> Result<(), Error>
{
    let redis = with_events();
    let (_proxies, elections) = candidates(&redis, &["c1", "c2", "c3"]).await;
    let term = elections[0].campaign().await?;
    assert_eq!(elections[0].term(), Some(term));
    let second = campaign(&redis, &elections[1], 0);
    let third = campaign(&redis, &elections[2], 1);

    let watcher = Election::new(client(&redis), NAME, "watcher");
    let mut observer = watcher.observe();
    let first = seen(&mut observer, "c1", Instant::now(), Duration::from_secs(2)).await;
    assert_eq!(first.term, Some(term));
    let leader = watcher.leader().await?.expect("a leader");
    assert_eq!((leader.owner.as_str(), leader.term), ("c1", Some(term)));

    let calls = leader_calls(&redis);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(leader_calls(&redis), calls, "the observer polls nothing");

    let lost = elections[0].lost();
    let killed = Instant::now();
    kill_client(&redis, bound_to(&redis, NAME).expect("a watchdog holding"));
    let next = seen(&mut observer, "c2", killed, SEEN_WITHIN).await;
    assert!(next.term > Some(term), "terms grow: {next:?} after {term}");
    let new_term = tokio::time::timeout(SEEN_WITHIN, second)
        .await
        .expect("c2 leads")
        .expect("task")?;
    assert_eq!(Some(new_term), next.term);
    assert!(killed.elapsed() < 2 * SEEN_WITHIN);

    tokio::time::timeout(Duration::from_secs(5), lost)
        .await
        .expect("c1 is told");
    assert!(!elections[0].is_leader());
    assert!(!third.is_finished(), "c3 still waits");
    third.abort();
    Ok(())
}

/// The leader is a process of its own (`rlock-hold leader=c1`), killed with SIGKILL: the
/// first follower leads within SEEN_WITHIN, and both observers see it as soon.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leader_process_killed_9_is_followed_at_once_and_every_observer_sees_it(
) -> Result<(), Error> {
    let redis = with_events();
    let mut leader = HoldingProcess::start(&redis, "leader=c1", NAME);
    let (_proxies, elections) = candidates(&redis, &["c2", "c3"]).await;
    let second = campaign(&redis, &elections[0], 0);
    let third = campaign(&redis, &elections[1], 1);
    let watchers = [
        Election::new(client(&redis), NAME, "w1"),
        Election::new(client(&redis), NAME, "w2"),
    ];
    let mut observers: Vec<Observer> = watchers.iter().map(Election::observe).collect();
    for observer in &mut observers {
        let first = seen(observer, "c1", Instant::now(), Duration::from_secs(2)).await;
        assert_eq!(first.term, Some(leader.token));
    }

    let killed = Instant::now();
    leader.kill9();
    let term = tokio::time::timeout(SEEN_WITHIN, second)
        .await
        .expect("c2 leads within SEEN_WITHIN")
        .expect("task")?;
    assert!(term > leader.token, "terms grow");
    for observer in &mut observers {
        let next = seen(observer, "c2", killed, SEEN_WITHIN).await;
        assert_eq!(next.term, Some(term));
    }
    assert!(!third.is_finished(), "c3 still waits");
    third.abort();
    Ok(())
}

/// An observer cut off while the leader changes (its connection severed, new ones refused)
/// reports the new leader once it is back, by reading `RLOCK.LEADER` again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_observer_back_from_a_dropped_connection_reports_the_current_leader() -> Result<(), Error>
{
    let redis = with_events();
    let (_proxies, elections) = candidates(&redis, &["c1", "c2"]).await;
    elections[0].campaign().await?;
    let second = campaign(&redis, &elections[1], 0);

    let path = Proxy::start(redis.port).await;
    let watcher = Election::new(client_at(path.port), NAME, "watcher");
    let mut observer = watcher.observe();
    seen(&mut observer, "c1", Instant::now(), Duration::from_secs(2)).await;

    path.refuse(true);
    path.sever_client_ends();
    elections[0].resign().await?;
    second.await.expect("task")?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    path.refuse(false);
    seen(&mut observer, "c2", Instant::now(), Duration::from_secs(2)).await;
    Ok(())
}

/// Without keyspace events of the module class, observing fails at once rather than
/// waiting for events that never come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observing_without_keyspace_events_is_an_error() {
    let redis = server();
    let watcher = Election::new(client(&redis), NAME, "watcher");
    let mut observer = watcher.observe();
    let first = tokio::time::timeout(Duration::from_secs(2), observer.next()).await;
    assert!(matches!(first, Ok(Some(Err(Error::Redis(_))))), "{first:?}");
    assert!(observer.next().await.is_none(), "the stream ends");
}
