//! `LockGuard::guarded`: writes that run only while the guard's holding is the lock's
//! (`RLOCK.GUARD`), on real redis-server processes.

#[path = "../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod support;

use rlock_client::{Error, Lock};
use std::time::Duration;
use support::{client, server};

fn set(key: &str, value: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("SET");
    cmd.arg(key).arg(value);
    cmd
}

/// The holder's guarded writes run and reply the inner reply; once the lock was
/// force-released and taken by another owner, the old guard's write is refused as `Lost`
/// and the data keeps the new holder's value. For a watchdog handle (own connection), one
/// without the watchdog, and a waiting one (the shared `NOTIFY` connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_holders_guarded_write_is_refused_after_a_force_release() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let handles = [
        ("watchdog", Lock::new(&client, "k")),
        ("plain", Lock::new(&client, "k").watchdog(false)),
        (
            "waiting",
            Lock::new(&client, "k").wait(Duration::from_secs(1)),
        ),
    ];
    for (what, old) in handles {
        let old = old.acquire().await?;
        let () = old.guarded(&set("data", what)).await?;
        let count: i64 = old.guarded(redis::cmd("INCR").arg("writes")).await?;
        assert!(count > 0, "{what}: the inner command's reply");
        assert_eq!(redis.conn().cmd(&["GET", "data"]).text(), what);

        assert_eq!(redis.conn().cmd(&["RLOCK.FORCERELEASE", "k"]).int(), 1);
        let new = Lock::new(&client, "k").acquire().await?;
        let () = new.guarded(&set("data", "new")).await?;

        let refused = old.guarded::<()>(&set("data", "stale")).await;
        assert!(matches!(refused, Err(Error::Lost)), "{what}: {refused:?}");
        assert_eq!(redis.conn().cmd(&["GET", "data"]).text(), "new", "{what}");
        new.release().await?;
        drop(old);
    }
    Ok(())
}

/// A guard whose holding was released by another path (force release, nobody took it) is
/// refused too, and a server error other than the refusal stays a server error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_free_lock_refuses_and_a_read_is_a_server_error() -> Result<(), Error> {
    let redis = server();
    let client = client(&redis);
    let guard = Lock::new(&client, "k").acquire().await?;
    let read = guard
        .guarded::<Option<String>>(redis::cmd("GET").arg("data"))
        .await;
    assert!(matches!(read, Err(Error::Redis(_))), "{read:?}");

    assert_eq!(redis.conn().cmd(&["RLOCK.FORCERELEASE", "k"]).int(), 1);
    let refused = guard.guarded::<()>(&set("data", "late")).await;
    assert!(matches!(refused, Err(Error::Lost)), "{refused:?}");
    assert!(redis.conn().cmd(&["GET", "data"]).is_nil());
    Ok(())
}
