//! The queue rules checked against a model: a pure model of each family's documented rules
//! (who may enter now, in what order) and a real server driven through the same seeded random
//! events, compared after every event: exclusion, FIFO order of grants, and work conservation
//! (no waiter still waits that the rules would let in). `RLOCK_MODEL_EVENTS` sets the events
//! per seed (default 1,000; three seeds), `RLOCK_MODEL_SEED` replays one seed,
//! `RLOCK_MODEL_SHOW` sets how many of the last events a failure shows (default 40).

mod common;
#[path = "model/harness.rs"]
mod harness;
#[path = "model/plain.rs"]
mod plain;

#[test]
fn plain_lock() {
    harness::run_seeds("plain_lock", harness::events(1000), plain::check);
}

#[path = "model/rwlock.rs"]
mod rwlock;

#[test]
fn read_write_lock() {
    harness::run_seeds("read_write_lock", harness::events(1000), rwlock::check);
}

#[path = "model/semaphore.rs"]
mod semaphore;

#[test]
fn semaphore() {
    harness::run_seeds("semaphore", harness::events(1000), semaphore::check);
}

#[path = "model/multikey.rs"]
mod multikey;

#[test]
fn several_keys() {
    harness::run_seeds("several_keys", harness::events(1000), multikey::check);
}

#[path = "model/counting.rs"]
mod counting;

#[test]
fn counting_semaphore() {
    harness::run_seeds("counting_semaphore", harness::events(1000), counting::check);
}
