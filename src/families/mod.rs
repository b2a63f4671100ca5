//! The lock families, one folder each: its pure rules, its storage in Redisson's layout, how
//! its queue is served (its `queue::Admission`), what upkeep asks of it (its `Family`, in
//! `family.rs`), and its commands. A family uses the shared rooms below it (queue, holdings,
//! watch, lifetime, store, clock, args, errors, replies) and never another family.
//!
//! `FAMILIES` is the one place that names them for upkeep: a new family is a new folder, and a
//! line here (and its commands in `lib.rs`).

pub mod contract;
pub mod counting;
pub mod latch;
pub mod lock;
pub mod rwlock;
pub mod semaphore;

use crate::kinds::{LockType, Want};
pub use contract::Family;

/// Every family, as upkeep reaches it.
static FAMILIES: &[&dyn Family] = &[
    &lock::family::Plain,
    &rwlock::family::ReadWrite,
    &semaphore::family::Permits,
    &latch::family::Latch,
    &counting::family::Counting,
];

/// The family whose waiters ask for `want`.
pub fn serving(want: Want) -> Option<&'static dyn Family> {
    FAMILIES.iter().copied().find(|f| f.serves(want))
}

/// The family of holdings (and lock hashes) of `kind`.
pub fn of_kind(kind: LockType) -> Option<&'static dyn Family> {
    FAMILIES.iter().copied().find(|f| f.kind() == Some(kind))
}
