//! The lock families, one folder each: its pure rules, its storage in Redisson's layout, how
//! its queue is served (its `queue::Admission`), and its commands. A family uses the shared
//! rooms below it (queue, holdings, lifetime, store, clock, args, errors, replies) and never
//! another family. A new family is a new folder here and its commands in `lib.rs`.

pub mod latch;
pub mod lock;
pub mod rwlock;
pub mod semaphore;
