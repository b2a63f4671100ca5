//! The read-write lock as Redis stores it, in Redisson's `RReadWriteLock` layout: a hash with
//! `mode` (`read`/`write`), `<owner>` read hold counts, `<owner>:write` write hold counts and
//! rlock's `rlock:read:<owner>`/`rlock:write:<owner>` tokens (`t<token>`, never a number); one
//! string key per read hold, `{key}:<owner>:rwlock_timeout:<n>`, whose expiry is that reader's
//! lease; and the hash's own expiry, the longest lease of all. Writes go through `store`, which
//! replicates each as the plain command that reproduces it (HSET, HDEL, SET PXAT, PEXPIREAT, DEL).

use crate::api::bytes;
use crate::error::{Error, Result};
use crate::kinds::Access;
use crate::lifetime::retries::Memory;
use crate::store::LockKey;

use super::layout::{
    self, cap_field, count_field, encode_cap, encode_token, ids_field, timeout_key, token_field,
    Corrupt, Holders, MODE_FIELD,
};
use super::rules::{self as rwlock, Mine, Mode, Seen, MAX_READ_HOLDS};
use super::sidekeys::{delete_side_key, set_side_key, side_key_expire_at};

fn int(value: Option<Vec<u8>>) -> Result<i64> {
    value.map_or(Ok(0), |v| {
        std::str::from_utf8(&v)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or(Error::CorruptHolds)
    })
}

/// The lock's mode; None when free.
pub fn mode(lock: &LockKey) -> Result<Option<Mode>> {
    lock.get(MODE_FIELD)
        .map(|m| Mode::parse(&m).ok_or(Error::CorruptMode))
        .transpose()
}

pub fn holders(lock: &LockKey) -> Result<Holders> {
    layout::holders(&lock.fields()).map_err(|e| match e {
        Corrupt::Mode => Error::CorruptMode,
        Corrupt::Holds => Error::CorruptHolds,
    })
}

/// One owner's holdings, read field by field (O(1) in the number of readers).
pub fn mine(lock: &LockKey, owner: &[u8]) -> Result<Mine> {
    let token = |access| {
        lock.get(&token_field(owner, access))
            .and_then(|t| layout::decode_token(&t))
    };
    let reads = int(lock.get(owner))?;
    let writes = int(lock.get(&count_field(owner, Access::Exclusive)))?;
    Ok(Mine {
        reads,
        read_token: (reads > 0).then(|| token(Access::Shared)).flatten(),
        writes,
        write_token: (writes > 0).then(|| token(Access::Exclusive)).flatten(),
    })
}

/// The lock as `owner` sees it. A read holding of its own whose lease ended is dropped first,
/// so a reader that comes back after its lease gets a new holding, not the dead one's count.
pub fn seen(lock: &mut LockKey, owner: &[u8], queued: bool, now: i64) -> Result<Seen> {
    let mut mine = mine(lock, owner)?;
    if mine.reads > 0 && reader_lease_end(lock, owner, mine.reads).is_none_or(|end| end <= now) {
        settle(lock, now, None)?;
        mine = self::mine(lock, owner)?;
    }
    Ok(Seen {
        mode: mode(lock)?,
        mine,
        queued,
    })
}

/// Where a reader's lease ends: the latest expiry of its timeout keys (None: all gone).
pub fn reader_lease_end(lock: &LockKey, owner: &[u8], holds: i64) -> Option<i64> {
    let key = bytes(lock.name());
    (1..=holds.min(MAX_READ_HOLDS))
        .filter_map(|n| side_key_expire_at(lock.ctx(), &timeout_key(key, owner, n)))
        .max()
}

fn set_reader_lease(lock: &LockKey, owner: &[u8], holds: i64, at: i64) {
    let key = bytes(lock.name());
    for n in 1..=holds.min(MAX_READ_HOLDS) {
        set_side_key(lock.ctx(), &timeout_key(key, owner, n), at);
    }
}

fn delete_reader_keys(lock: &LockKey, owner: &[u8], from: i64, to: i64) {
    let key = bytes(lock.name());
    for n in from.max(1)..=to.min(MAX_READ_HOLDS) {
        delete_side_key(lock.ctx(), &timeout_key(key, owner, n));
    }
}

/// Lengthens the key's expiry to `at` if it ends earlier (or has none yet).
fn extend_ttl(lock: &mut LockKey, at: i64) {
    if lock.expire_at().is_none_or(|current| current < at) {
        lock.set_expire_at(at);
    }
}

/// The request ids `owner`'s holdings remember.
pub fn ids(lock: &LockKey, owner: &[u8]) -> Memory {
    lock.get(&ids_field(owner))
        .map_or_else(Memory::default, |v| Memory::parse(&v))
}

pub fn set_ids(lock: &mut LockKey, owner: &[u8], ids: &[u8]) {
    lock.hset(&[(&ids_field(owner), ids)]);
}

/// `owner`'s hold cap (absolute ms), if its holdings have one.
pub fn cap(lock: &LockKey, owner: &[u8]) -> Option<i64> {
    lock.get(&cap_field(owner))
        .and_then(|v| layout::decode_cap(&v))
}

/// What a write of a holding adds to the hash besides its count and token.
#[derive(Clone, Copy, Default)]
pub struct Extra<'a> {
    /// The owner's request-id memory, encoded.
    pub ids: Option<&'a [u8]>,
    /// The owner's new hold cap (absolute ms), set with its first holding.
    pub cap: Option<i64>,
}

/// Adds `extra`'s fields to a write's pairs.
fn with_extra<'a>(pairs: &mut Vec<(Vec<u8>, Vec<u8>)>, owner: &[u8], extra: Extra<'a>) {
    if let Some(ids) = extra.ids {
        pairs.push((ids_field(owner), ids.to_vec()));
    }
    if let Some(cap) = extra.cap {
        pairs.push((cap_field(owner), encode_cap(cap)));
    }
}

fn hset_owned(lock: &mut LockKey, pairs: &[(Vec<u8>, Vec<u8>)]) {
    let borrowed: Vec<(&[u8], &[u8])> = pairs.iter().map(|(f, v)| (&f[..], &v[..])).collect();
    lock.hset(&borrowed);
}

/// Writes a new holding of `access` for `owner` with `token`, its lease ending at `at`.
pub fn grant(
    lock: &mut LockKey,
    owner: &[u8],
    access: Access,
    token: i64,
    at: i64,
    extra: Extra,
) -> Result<()> {
    let before = mode(lock)?;
    let after = rwlock::mode_after(before, access);
    let mut pairs = vec![
        (count_field(owner, access), b"1".to_vec()),
        (token_field(owner, access), encode_token(token)),
    ];
    if before != Some(after) {
        pairs.insert(0, (MODE_FIELD.to_vec(), after.name().to_vec()));
    }
    with_extra(&mut pairs, owner, extra);
    hset_owned(lock, &pairs);
    if access == Access::Shared {
        set_reader_lease(lock, owner, 1, at);
    }
    extend_ttl(lock, at);
    Ok(())
}

/// One more hold for a holding, its lease ending at `at`: as Redisson's scripts do, a reader's
/// new hold gets a timeout key of its own (its earlier holds keep theirs), and a writer's lease
/// becomes `at` (the caller adds the time left, see `serve`); the key's expiry follows the
/// longest lease.
pub fn reenter(
    lock: &mut LockKey,
    owner: &[u8],
    access: Access,
    holds: i64,
    new_token: Option<i64>,
    at: i64,
    now: i64,
    extra: Extra,
) -> Result<()> {
    let mut pairs = vec![(count_field(owner, access), holds.to_string().into_bytes())];
    if let Some(token) = new_token {
        pairs.push((token_field(owner, access), encode_token(token)));
    }
    with_extra(&mut pairs, owner, extra);
    hset_owned(lock, &pairs);
    match access {
        Access::Shared => {
            let key = bytes(lock.name());
            set_side_key(lock.ctx(), &timeout_key(key, owner, holds), at);
            settle(lock, now, None)?;
        }
        Access::Exclusive => {
            settle(lock, now, Some(at))?;
        }
    }
    Ok(())
}

/// Sets `owner`'s leases to end at `at` (RENEW): false when it holds nothing.
pub fn renew(lock: &mut LockKey, owner: &[u8], at: i64, now: i64) -> Result<bool> {
    let mine = mine(lock, owner)?;
    if mine.reads > 0 {
        set_reader_lease(lock, owner, mine.reads, at);
    }
    let writer_lease = (mine.writes > 0).then_some(at);
    if mine.reads == 0 && writer_lease.is_none() {
        return Ok(false);
    }
    settle(lock, now, writer_lease)?;
    Ok(true)
}

/// Drops one hold of `owner`'s holding of `access`, `remaining` left; with 0 left the holding
/// ends. Returns the lock's state after it (see `settle`).
pub fn release(
    lock: &mut LockKey,
    owner: &[u8],
    access: Access,
    remaining: i64,
    now: i64,
) -> Result<Settled> {
    let count = count_field(owner, access);
    if remaining > 0 {
        lock.hset(&[(&count, remaining.to_string().as_bytes())]);
        if access == Access::Shared {
            // Like Redisson: the highest hold's timeout key goes with its lease, and the key's
            // expiry follows the longest lease left. Only a hold whose lease was the key's
            // own can change that: the others skip the look at every reader.
            let gone = timeout_key(bytes(lock.name()), owner, remaining + 1);
            let gone_end = side_key_expire_at(lock.ctx(), &gone);
            delete_reader_keys(lock, owner, remaining + 1, remaining + 1);
            if gone_end.is_none_or(|end| lock.expire_at().is_none_or(|at| end >= at)) {
                return settle(lock, now, None);
            }
        }
        return Ok(Settled::Held {
            mode: mode(lock)?.unwrap_or(Mode::Read),
        });
    }
    let other = match access {
        Access::Shared => Access::Exclusive,
        Access::Exclusive => Access::Shared,
    };
    let mut gone = vec![count, token_field(owner, access)];
    if int(lock.get(&count_field(owner, other)))? == 0 {
        // The owner holds nothing more: its request ids and cap go with its last holding.
        gone.extend([ids_field(owner), cap_field(owner)]);
    }
    lock.hdel(&gone.iter().map(Vec::as_slice).collect::<Vec<_>>());
    if access == Access::Shared {
        delete_reader_keys(lock, owner, 1, 1);
    }
    settle(lock, now, None)
}

/// Ends every holding of `owner` (its watchdog connection closed): all its holds of both
/// modes, its timeout keys and its fields. Returns the lock's state after it.
pub fn release_owner(lock: &mut LockKey, owner: &[u8], now: i64) -> Result<Settled> {
    let mine = mine(lock, owner)?;
    let fields = [
        count_field(owner, Access::Shared),
        token_field(owner, Access::Shared),
        count_field(owner, Access::Exclusive),
        token_field(owner, Access::Exclusive),
        ids_field(owner),
        cap_field(owner),
    ];
    delete_reader_keys(lock, owner, 1, mine.reads);
    lock.hdel(&fields.iter().map(Vec::as_slice).collect::<Vec<_>>());
    settle(lock, now, None)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// Nobody holds it any more: the key is deleted.
    Free,
    Held {
        mode: Mode,
    },
}

/// Puts the lock right after its holdings changed or may have ended: read holdings whose lease
/// ended go (fields and timeout keys), a write mode without a writer becomes read, and the key's
/// expiry becomes the longest lease left (`writer_lease`: a writer's new lease; without it the
/// writer keeps the key's current expiry). A lock nobody holds is deleted.
pub fn settle(lock: &mut LockKey, now: i64, writer_lease: Option<i64>) -> Result<Settled> {
    if lock.is_free() {
        return Ok(Settled::Free);
    }
    let holders = holders(lock)?;
    let mut longest = None;
    let mut dead: Vec<Vec<u8>> = Vec::new();
    let mut dead_readers = 0;
    for reader in &holders.readers {
        match reader_lease_end(lock, &reader.owner, reader.holds) {
            Some(end) if end > now => longest = longest.max(Some(end)),
            _ => {
                delete_reader_keys(lock, &reader.owner, 1, reader.holds);
                // SAFETY: the lock's context is live for the command or callback.
                let db = unsafe { crate::api::api!(RedisModule_GetSelectedDb)(lock.ctx()) };
                crate::notify::owner_lost(db, bytes(lock.name()), &reader.owner);
                crate::holdings::tell_change(lock.ctx(), bytes(lock.name()), c"rwlock.expired");
                dead_readers += 1;
                dead.push(reader.owner.clone());
                dead.push(token_field(&reader.owner, Access::Shared));
                if holders
                    .writer
                    .as_ref()
                    .is_none_or(|w| w.owner != reader.owner)
                {
                    dead.push(ids_field(&reader.owner));
                    dead.push(cap_field(&reader.owner));
                }
            }
        }
    }
    if holders.writer.is_none() && dead_readers == holders.readers.len() {
        lock.delete();
        return Ok(Settled::Free);
    }
    lock.hdel(&dead.iter().map(Vec::as_slice).collect::<Vec<_>>());
    let mode = match holders.writer {
        Some(_) => Mode::Write,
        None => Mode::Read,
    };
    if holders.mode != Some(mode) {
        lock.hset(&[(MODE_FIELD, mode.name())]);
    }
    let kept = match mode {
        Mode::Write => writer_lease.or(lock.expire_at()),
        Mode::Read => None,
    };
    if let Some(at) = kept.max(longest) {
        if lock.expire_at() != Some(at) {
            lock.set_expire_at(at);
        }
    }
    Ok(Settled::Held { mode })
}

/// The earliest lease end among the lock's holdings: when a waiter should look again.
pub fn next_lease_end(lock: &LockKey) -> Result<Option<i64>> {
    let holders = holders(lock)?;
    let readers = holders
        .readers
        .iter()
        .filter_map(|r| reader_lease_end(lock, &r.owner, r.holds));
    Ok(readers.chain(lock.expire_at()).min())
}

/// Deletes the lock and every reader's timeout keys (FORCERELEASE).
pub fn delete(lock: &mut LockKey) -> Result<()> {
    for reader in holders(lock)?.readers {
        delete_reader_keys(lock, &reader.owner, 1, reader.holds);
    }
    lock.delete();
    Ok(())
}
