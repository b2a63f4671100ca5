//! Async Rust client for rlock, the Redis module that gives Redis native lock types: a
//! reentrant, fair, fenced lock (`RLOCK.*`), read-write locks (`RWLOCK.*`), semaphores whose
//! permits belong to their holders (`RSEM.*`) and count-down latches (`RLATCH.*`).
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use rlock_client::Lock;
//! let client = redis::Client::open("redis://127.0.0.1/")?;
//!
//! let lock = Lock::new(&client, "orders:42");
//! let guard = lock.acquire().await?;
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! Every type is used in three lines, in the shapes of `tokio::sync`:
//!
//! ```no_run
//! # async fn example(client: redis::Client) -> Result<(), rlock_client::Error> {
//! use rlock_client::{CountDownLatch, RwLock, Semaphore};
//!
//! let doc = RwLock::new(&client, "doc:7");
//! let writing = doc.write().await?; // or doc.read(): a ReadGuard, shared with other readers
//! writing.release().await?;
//!
//! let pool = Semaphore::new(&client, "pool"); // pool.try_set_permits(8) once, somewhere
//! let permit = pool.acquire_many(2).await?;
//! permit.release().await?;
//!
//! let ready = CountDownLatch::new(&client, "ready"); // ready.try_set_count(3) once
//! ready.count_down().await?; // retry-safe: never counts twice
//! ready.wait().await?; // until the count reaches 0
//! # Ok(()) }
//! ```
//!
//! [`Lock`], [`RwLock`] and [`Semaphore`] are thin layers over one core, so they share the
//! builder, the guard ([`Guard`]: [`LockGuard`], [`ReadGuard`], [`WriteGuard`], [`Permit`])
//! and everything described below for the lock: owner ids, request ids and retries, the
//! watchdog connection and its keep-alive, re-binding, loss reporting, waiting by `NOTIFY`
//! and leaving the queue when a wait is dropped. [`CountDownLatch`] waits through the same
//! shared connection.
//!
//! # One server: [`Lock`] (and what every type shares)
//!
//! A [`Lock`] is a handle with its own owner id (`<uuid>:<task-or-thread id>`) and a builder
//! for how to take the lock: [`lease`](Lock::lease) (30 s), [`wait`](Lock::wait) in the
//! server's FIFO queue (none), [`watchdog`](Lock::watchdog) (on), [`max_hold`](Lock::max_hold)
//! (none). [`acquire`](Lock::acquire) returns a [`LockGuard`] holding the fencing token
//! ([`LockGuard::token`]); acquiring again through the same handle re-enters.
//!
//! - **Watchdog.** A watchdog lock lives on a connection of its own: the server renews the
//!   lease while that connection is open and ends the holding the moment it closes, so a
//!   crashed process frees its locks in milliseconds. One task per such connection sends
//!   `PING` every third of the server's `rlock.watchdog-idle-ms`. If the connection drops while
//!   the lock is held, the client re-binds from a new connection at once
//!   (`RLOCK.RENEW key owner PX lease WATCHDOG`), or reports the lock lost:
//!   [`LockGuard::lost`], [`LockGuard::is_lost`], and [`Error::Lost`] from
//!   [`LockGuard::release`].
//! - **Retries.** Every logical call carries a fresh `ID <id>` (a per-process random prefix
//!   and a counter). A call that fails on a broken connection is sent once more, with the
//!   same id, on a fresh connection: the server answers a repeated acquire or release as it
//!   answered the first, so a retry never counts twice.
//! - **Connections.** A handle talks to the primary that owns its key: the server a
//!   `redis::Client` names, or through [`Servers::sentinel`] / [`Servers::cluster`] the
//!   primary that Sentinel or the Cluster's slot map names, followed through failovers
//!   (docs/availability.md). Plain calls of a handle share one multiplexed connection, and a
//!   handle that holds with the watchdog without a `wait` has one of its own, kept open between
//!   its holdings once a release left nothing on it. Watchdog connections speak RESP3, the
//!   protocol in which redis-rs reports a dropped connection the moment it happens.
//! - **Waiting.** Handles with a [`wait`](Lock::wait) block no connection: all those of one
//!   `redis::Client` (in one tokio runtime) share one RESP3 connection, subscribed to its own
//!   `__rlock__` channel, and queue with `RLOCK.ACQUIRE ... WAIT ms NOTIFY`. The server answers
//!   at once (the token, or `WAITING`) and later sends the grant, timeout or failure as a
//!   message, which the client routes to the waiting future; any number of locks wait at
//!   once while other calls run on that connection. Dropping the `acquire` future leaves the
//!   queue (`RLOCK.CANCEL`, and a grant that raced it is released). Holdings of waiting
//!   handles live on the shared connection: a watchdog grant is confirmed with
//!   `RLOCK.RENEW ... WATCHDOG`, the connection is `PING`ed and re-binds them after a
//!   reconnect, and the server's `lost` message (force release, expiry) reports a loss. A
//!   wait whose connection drops is sent again, with its id, from a new one. The module must
//!   support `NOTIFY`.
//! - **Confirmation.** Where the primary has replicas, every acquisition, release and other
//!   write is pipelined with `WAIT n 1000` for the `n` replicas connected ([`Confirm`]): an
//!   acquisition they do not confirm in time is released and fails with
//!   [`Error::NotConfirmed`], so a failover right after it cannot give the lock to another.
//! - **Release on drop.** Dropping a guard releases in a background task when a tokio runtime
//!   is running. Call [`LockGuard::release`] to learn whether the lock was still yours.
//!
//! ```no_run
//! # async fn example(client: redis::Client) -> Result<(), rlock_client::Error> {
//! use rlock_client::Lock;
//! use std::time::Duration;
//!
//! let lock = Lock::new(&client, "reports:daily").wait(Duration::from_secs(10));
//! let guard = lock.acquire().await?;
//! tokio::select! {
//!     _ = guard.lost() => eprintln!("lock lost: stop writing"),
//!     _ = write_report(guard.token()) => {}
//! }
//! guard.release().await?;
//! # Ok(()) }
//! # async fn write_report(_fence: u64) {}
//! ```
//!
//! - **Deadlocks.** A wait that would close a cycle of owners is refused by the server at
//!   once: [`Error::Deadlock`]. The server sees cycles between owner ids, so give the handles
//!   one task nests the same id ([`Lock::owner_id`]).
//! - **Guarded writes.** [`LockGuard::guarded`] runs a write only while the holding is still
//!   the lock's (`RLOCK.GUARD`), else [`Error::Lost`] and nothing ran.
//! - **Lock-delay.** [`Lock::lock_delay`]: after a holding ends other than by its release,
//!   nobody is granted the lock for that long (`LOCKDELAY`).
//!
//! # Several locks at once: [`MultiLock`]
//!
//! [`MultiLock::try_lock`], [`try_lock_for`](MultiLock::try_lock_for) and
//! [`lock`](MultiLock::lock) take every key or none (`RLOCK.ACQUIREALL`); the [`MultiGuard`]
//! has a token per key ([`MultiGuard::tokens`], in the keys' order) and gives them all back in
//! one call ([`MultiGuard::unlock`], `RLOCK.RELEASEALL`; on drop too). Each key is an
//! ordinary lock holding afterwards. A waiting request holds one place in every key's queue
//! and waits by `NOTIFY` as a lock does, one message per key.
//!
//! # Electing a leader: [`Election`]
//!
//! etcd's verbs over one lock key: [`Election::campaign`] waits until the candidate leads and
//! returns its term (the fencing token), [`Election::leader`] asks `RLOCK.LEADER`,
//! [`Election::observe`] streams every leader change from the key's keyspace events (class
//! `d` on), [`Election::resign`] hands over, [`Election::lost`] says when leadership ended
//! otherwise.
//!
//! # Read-write locks, semaphores, latches
//!
//! - [`RwLock::read`] / [`RwLock::write`] (`RWLOCK.ACQUIRE key owner READ|WRITE`): many
//!   readers or one writer. The server's queue is FIFO, so a reader that comes while a writer
//!   waits queues behind it (no writer starvation). A handle holding the write lock may also
//!   read (downgrade); one holding only the read lock gets an error at once if it asks to
//!   write.
//! - [`Semaphore::acquire_many`] (`RSEM.ACQUIRE key owner PERMITS n`): `n` permits, given back
//!   by the [`Permit`]; a handle's permits add up under its owner id and come back at once
//!   when its connection closes. [`try_set_permits`](Semaphore::try_set_permits),
//!   [`add_permits`](Semaphore::add_permits), [`available_permits`](Semaphore::available_permits).
//! - A [`CountDownLatch`] has [`try_set_count`](CountDownLatch::try_set_count),
//!   [`count_down`](CountDownLatch::count_down) (with an `ID`, retried once: counts once),
//!   [`count`](CountDownLatch::count), [`wait`](CountDownLatch::wait) and
//!   [`wait_for`](CountDownLatch::wait_for). The waits of a latch on the shared connection
//!   open together; since a latch's `RLOCK.CANCEL` names no owner, the last of them to be
//!   given up takes the latch's waits of the connection out of the queue, and any that came
//!   meanwhile queue again.
//!
//! # Several servers: [`Redlock`]
//!
//! [`Redlock`] runs the algorithm of the Redis documentation ("Distributed Locks with Redis")
//! over N independent servers with the module, using `RLOCK.ACQUIRE` (one owner, one request
//! id, one lease, no `WAIT`) in place of `SET NX`:
//!
//! ```no_run
//! # async fn example(servers: Vec<redis::Client>) -> Result<(), rlock_client::Error> {
//! use rlock_client::Redlock;
//! use std::time::Duration;
//!
//! let lock = Redlock::new(&servers, "orders:42").lease(Duration::from_secs(10));
//! let guard = lock.acquire().await?; // held on a majority, for guard.validity()
//! println!("tokens per server: {:?}", guard.tokens());
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! It asks every server at once, each answer bounded by a small per-server timeout, and holds
//! the lock when a majority granted it within the validity time: the lease minus the time the
//! attempt took minus clock drift (1% of the lease + 2 ms). Otherwise it releases on every
//! server, waits a random delay, and tries again (`retry_count`, `retry_delay`).
//!
//! **What Redlock guarantees.** While a majority of the servers is up, at most one client
//! holds the lock during its validity time, provided the timing assumptions hold: processes
//! pause for less than the validity time, network delays are bounded, and clocks run at
//! nearly the same rate (drift within the margin) and are never stepped. A crashed server
//! must come back empty and stay out for longer than the lease, or persist with
//! `appendfsync always`.
//!
//! **What it does not.** Martin Kleppmann's critique ("How to do distributed locking", 2016)
//! still applies: Redlock is only as safe as those timing assumptions. A holder paused by GC
//! or a stalled VM, a delayed network packet, or a clock jump can let the lease expire on the
//! servers while the holder still believes it holds the lock, and a second client then takes
//! it; Redlock itself cannot detect this. The cure is fencing: the resource refuses writes
//! with an older token. But Redlock has no fencing across servers: each server issues its
//! own tokens from its own clock, so the tokens of one acquisition are unrelated numbers.
//! [`RedlockGuard::tokens`] returns them all, one per server (`None` where it did not grant
//! it); each is comparable only with later tokens *of the same server*. To fence, pick one
//! server's token consistently (and treat a holding without it as unfenced), or use a single
//! rlock server, or a consensus system, where you need correctness rather than efficiency.

#![warn(missing_docs)]

mod builder;
mod cluster;
mod commands;
mod confirm;
mod core;
mod election;
mod error;
mod family;
mod guard;
mod holding;
mod latch;
mod lock;
mod multilock;
mod notify;
mod observer;
mod redlock;
mod router;
mod rwlock;
mod semaphore;
mod sentinel;
mod servers;
mod session;
mod timing;
mod watchdog;

pub use confirm::Confirm;
pub use election::{Election, Leader};
pub use error::{Error, Result};
pub use guard::{Exclusive, Guard, LockGuard, Permit, Permits, Read, ReadGuard, Write, WriteGuard};
pub use latch::CountDownLatch;
pub use lock::Lock;
pub use multilock::{MultiGuard, MultiLock};
pub use observer::Observer;
pub use redlock::{Redlock, RedlockGuard};
pub use rwlock::RwLock;
pub use semaphore::Semaphore;
pub use servers::Servers;
