//! The plain lock's rules, free of Redis: the lock is one owner's reentrant holding (the
//! arithmetic in `reentry`, shared with each mode of the read-write lock), and the names of
//! rlock's fields beside the owner's count in Redisson's hash.

pub use crate::reentry::{acquire, release, View};

/// The hash field, next to the owner's hold count, that keeps the holder's fencing token.
pub const TOKEN_FIELD: &[u8] = b"rlock:token";

/// The hash field that keeps the holding's hold cap (`MAXHOLD`): an absolute time in ms.
pub const CAP_FIELD: &[u8] = b"rlock:maxhold";
