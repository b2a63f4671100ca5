//! Serving the read-write lock's queue (a run of readers at the head together, or one writer);
//! taking a holding is `take.rs`'s.

use crate::api::{bytes, now_ms, Ctx};
use crate::error::{Error, Result};
use crate::holdings::publish;
use crate::kinds::Want;
use crate::queue::{self, Admission, Request, Verdict};
use crate::stats;
use crate::store::LockKey;

use super::rules as rwlock;
use super::store as rwstore;
use super::take::take_rw;

/// The read-write lock's rules as the queue asks them, over one opened key.
struct ReadWrite<'a> {
    lock: &'a mut LockKey,
    db: i32,
}

impl Admission for ReadWrite<'_> {
    fn admit(&mut self, want: Want) -> Verdict {
        let Some(access) = rwlock::access(want) else {
            return Verdict::Wait;
        };
        match rwstore::mode(self.lock) {
            Err(_) => Verdict::Fail(Error::WrongType),
            Ok(mode) if rwlock::may_enter(mode, access) => Verdict::Enter,
            Ok(_) => Verdict::Wait,
        }
    }

    fn enter(&mut self, ask: &Request, want: Want) -> Result<i64> {
        let access = rwlock::access(want).ok_or(Error::Internal)?;
        match take_rw(self.lock, self.db, ask, access, false)? {
            Some(token) => {
                stats::HANDOFFS.add();
                Ok(token)
            }
            // Admitted by the rules, so only a refusal of the owner's own (an upgrade) is left.
            None => Err(Error::Upgrade),
        }
    }
}

/// Admits waiters at the head of the queue for as long as the rules let them in. Returns,
/// when any was admitted, the lease end to watch next (the earliest holding's while others
/// still wait).
pub fn admit(lock: &mut LockKey, db: i32) -> Option<i64> {
    let key = bytes(lock.name()).to_vec();
    if queue::serve(db, &key, &mut ReadWrite { lock, db }) == 0 {
        return None;
    }
    let watch = match queue::count(db, &key) {
        0 => None,
        _ => rwstore::next_lease_end(lock).ok().flatten(),
    };
    Some(watch.or(lock.expire_at()).unwrap_or_else(now_ms))
}

/// Tells Redisson's waiters the lock is open to them: `1` (Redisson's "wake every waiter") on
/// `redisson_rwlock:{key}`.
pub fn announce_open(ctx: Ctx, key: &[u8]) {
    publish(ctx, &super::layout::channel(key), b"1");
}
