//! What upkeep asks of the read-write lock (the family contract), and what its commands share
//! with it: serving the queue after the holdings changed, watching the earliest lease end,
//! and renewing or ending a watchdog holding.

use crate::api::{bytes, now_ms, Ctx};
use crate::clock::lease_end;
use crate::families::contract::{Family, HandOver};
use crate::holdings;
use crate::kinds::{LockType, Want, Word};
use crate::lifetime::watchdog::{Binding, LockId};
use crate::queue;
use crate::stats;
use crate::store::{open_if, open_to_renew, LockKey};
use crate::watch::{after_grant, arm_renewals, watch_key, watch_lease};

use super::layout::{decode_token, MODE_FIELD, READ_TOKEN_PREFIX, WRITE_TOKEN_PREFIX};
use super::rules as rwlock;
use super::serve::{admit, announce_open};
use super::store::{self as rwstore, Settled};

pub struct ReadWrite;

impl Family for ReadWrite {
    fn words(&self) -> &'static [&'static Word] {
        &[rwlock::READ.word, rwlock::WRITE.word]
    }

    /// The tokens are `rlock:read:<owner>` / `rlock:write:<owner>` fields of a hash with a
    /// `mode` field.
    fn stored_token(&self, _key: &[u8], hash: &LockKey) -> Option<i64> {
        let mode = hash.get(MODE_FIELD)?;
        (mode == b"read" || mode == b"write").then_some(())?;
        let is_token = |f: &[u8]| f.starts_with(READ_TOKEN_PREFIX) || f.starts_with(WRITE_TOKEN_PREFIX);
        let fields = hash.fields();
        let tokens = fields.iter().filter(|(f, _)| is_token(f));
        tokens.filter_map(|(_, v)| decode_token(v)).max()
    }

    fn kind(&self) -> Option<LockType> {
        Some(LockType::ReadWrite)
    }

    fn keeps_lock_hash(&self) -> bool {
        true
    }

    fn waits_for_owners(&self) -> bool {
        true
    }

    /// The holders `want` excludes (a writer excludes all; a reader, the writer), and the
    /// waiters ahead that exclude it (a reader queued behind a writer waits for that writer).
    fn blockers(&self, lock: &LockKey, db: i32, want: Want, owner: &[u8]) -> Vec<Vec<u8>> {
        let write = want == rwlock::WRITE;
        let holders = rwstore::holders(lock).unwrap_or_default();
        let readers = holders.readers.into_iter().filter(|_| write);
        let ahead = queue::ahead_of(db, bytes(lock.name()), owner).into_iter();
        let ahead = ahead.filter(|(_, w)| write || *w == rwlock::WRITE);
        let holding = holders.writer.into_iter().chain(readers).map(|h| h.owner);
        holding.chain(ahead.map(|(o, _)| o)).collect()
    }

    /// Drops the read holdings whose lease ended first, which may free the lock or let
    /// waiters in.
    fn check_held(&self, ctx: Ctx, lock: &mut LockKey, db: i32, expired: bool, hand: HandOver) {
        let key = bytes(lock.name());
        match rwstore::settle(lock, now_ms(), None) {
            Ok(settled) => {
                if settled == Settled::Free && expired && queue::count(db, key) > 0 {
                    stats::EXPIRY_WAKEUPS.add();
                }
                serve_rw(ctx, lock, db, settled, hand);
            }
            Err(_) => queue::fail_all(db, key),
        }
    }

    fn serve_free(&self, ctx: Ctx, lock: &mut LockKey, db: i32) -> bool {
        let granted = admit(lock, db);
        let served = after_grant(ctx, db, bytes(lock.name()), granted);
        if served {
            watch_rw(ctx, db, lock);
        }
        served
    }

    fn announce_free(&self, ctx: Ctx, key: &[u8]) {
        announce_open(ctx, key);
    }

    fn set_lease(&self, ctx: Ctx, id: &LockId, binding: &Binding, now: i64, lease_ms: i64) -> bool {
        let bound = |l: &LockKey| still_bound(l, binding);
        let Some((_name, mut lock)) = open_to_renew(ctx, id, &binding.owner, bound) else {
            return false;
        };
        let owner = &binding.owner;
        let at = lease_end(now, lease_ms, rwstore::cap(&lock, owner));
        if at <= now || !rwstore::renew(&mut lock, owner, at, now).unwrap_or(false) {
            return false;
        }
        watch_rw(ctx, id.0, &lock);
        true
    }

    fn end_holding(&self, ctx: Ctx, id: &LockId, binding: &Binding, hand_over: HandOver) {
        let Some((_name, mut lock)) = open_if(ctx, (id.0, &id.1), |l| still_bound(l, binding))
        else {
            return;
        };
        stats::WATCHDOG_RELEASES.add();
        if let Ok(settled) = rwstore::release_owner(&mut lock, &binding.owner, now_ms()) {
            holdings::tell_change(ctx, &id.1, c"rwlock.dropped");
            serve_rw(ctx, &mut lock, id.0, settled, hand_over);
        }
    }
}

/// Whether the lock is still held by the binding's holding (owner and token).
fn still_bound(lock: &LockKey, binding: &Binding) -> bool {
    lock.kind() == Some(LockType::ReadWrite)
        && rwstore::mine(lock, &binding.owner)
            .is_ok_and(|mine| rwlock::holds_token(&mine, binding.token))
}

/// After a read-write lock's holdings changed: a free lock goes to its queue (or Redisson's
/// waiters hear of it, by `hand_over`), a held one admits whom its rules let in, and while
/// others wait, the earliest lease end is watched.
pub fn serve_rw(ctx: Ctx, lock: &mut LockKey, db: i32, settled: Settled, hand_over: HandOver) {
    if settled == Settled::Free {
        hand_over(lock);
        return;
    }
    if admit(lock, db).is_some() {
        arm_renewals(ctx);
    }
    watch_rw(ctx, db, lock);
}

/// Watches a held read-write lock's earliest lease end: while anyone waits or is told of a
/// loss, as for every lock, and also whenever a reader's lease ends before the key's own TTL,
/// so that a dead reader leaves the hash (and the TTL follows the longest lease left) within
/// ms whether or not anyone waits.
pub fn watch_rw(ctx: Ctx, db: i32, lock: &LockKey) {
    let key = bytes(lock.name());
    let next = rwstore::next_lease_end(lock).ok().flatten();
    let reader_ends_first = next.zip(lock.expire_at()).is_some_and(|(at, end)| at < end);
    if reader_ends_first {
        watch_key(ctx, (db, std::rc::Rc::from(key)), next);
    } else {
        watch_lease(ctx, db, key, next);
    }
}
