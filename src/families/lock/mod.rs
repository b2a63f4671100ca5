//! The plain lock (`RLOCK.*`): reentrant, fair, fenced; one holder at a time. Its key is
//! Redisson's `RLock` hash (`owner -> hold count`, a `PEXPIRE` lease), so Redisson clients and
//! rlock share a lock during a migration; rlock keeps its token and hold cap in `rlock:` fields.

pub mod all;
pub mod commands;
pub mod fair_queue;
pub mod family;
pub mod guard;
pub mod rules;
pub mod serve;
pub mod store;
pub mod table;
pub mod take;
