//! `rlock-hold <redis-url> <lock|read|write|permits=N|leader=CANDIDATE> <key>`: takes a
//! watchdog holding (no wait; for `leader=`, campaigns in the election `key` as `CANDIDATE`
//! until it leads) in a process of its own, prints `held <token>`, and holds until its standard input
//! ends or says `release`; then releases and prints `released`. A small tool for trying
//! things by hand, and the holding process the client's tests kill with SIGKILL.

use rlock_client::{Election, Lock, RwLock, Semaphore};
use std::io::BufRead;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, what, key] = args.as_slice() else {
        return Err(
            "usage: rlock-hold <redis-url> <lock|read|write|permits=N|leader=CANDIDATE> <key>"
                .into(),
        );
    };
    let client = redis::Client::open(url.as_str())?;
    // The handles live until the end: dropping one closes its watchdog connection.
    let (lock, rw, sem) = (
        Lock::new(&client, key.as_str()),
        RwLock::new(&client, key.as_str()),
        Semaphore::new(&client, key.as_str()),
    );
    let election = what
        .strip_prefix("leader=")
        .map(|candidate| Election::new(&client, key.as_str(), candidate));
    let (token, release) = match what.as_str() {
        _ if election.is_some() => {
            let election = election.as_ref().expect("an election");
            let term = election.campaign().await?;
            let resign: Release = Box::pin(election.resign());
            (term, resign)
        }
        "lock" => hold(lock.acquire().await?),
        "read" => hold(rw.read().await?),
        "write" => hold(rw.write().await?),
        other => {
            let n = other
                .strip_prefix("permits=")
                .and_then(|n| n.parse().ok())
                .ok_or("the second argument is lock, read, write, permits=N or leader=CANDIDATE")?;
            hold(sem.acquire_many(n).await?)
        }
    };
    println!("held {token}");
    tokio::task::spawn_blocking(|| {
        let stdin = std::io::stdin();
        let asked = stdin.lock().lines().map_while(Result::ok);
        for line in asked {
            if line.trim() == "release" {
                break;
            }
        }
    })
    .await?;
    release.await?;
    println!("released");
    Ok(())
}

type Release<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = rlock_client::Result<()>> + 'a>>;

/// The token of a guard, and its release for later.
fn hold<K: 'static>(guard: rlock_client::Guard<K>) -> (u64, Release<'static>) {
    (guard.token(), Box::pin(guard.release()))
}
