//! The read-write lock (`RWLOCK.*`): readers share, a writer holds alone, one FIFO queue in
//! which a reader behind a waiting writer waits. Its key is Redisson's `RReadWriteLock` hash
//! (`mode`, read and write hold counts) with a timeout key per read hold.

pub mod commands;
pub mod family;
pub mod layout;
pub mod rules;
pub mod serve;
mod sidekeys;
pub mod store;
pub mod table;
pub mod take;
