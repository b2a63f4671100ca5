//! The semaphore as Redis stores it: Redisson's counter of available permits at the key
//! (`counter`), and rlock's holders hash beside it (see `semaphore`). Every write replicates as
//! a plain command (INCRBY/SET on the counter, HSET/HDEL on the holders).

use crate::api::{bytes, Ctx, OwnedStr, RStr};
use crate::counter;
use crate::error::{Error, Result};
use crate::lifetime::retries::ids_field;

use super::rules::{holders_key, Holding};
use crate::lifetime::retries::Memory;
use crate::store::LockKey;

pub struct Semaphore {
    ctx: Ctx,
    key: RStr,
    /// The counter as read at open and kept current by this module's own writes: nothing else
    /// runs while a command or timer holds the semaphore open, and each read is a
    /// `RedisModule_Call`.
    counter: Option<i64>,
    /// Declared before the name it was opened with, so it is closed first.
    holders: LockKey,
    _holders_name: OwnedStr,
}

impl Semaphore {
    /// Opens the semaphore at `key`: WRONGTYPE when the key holds something other than a
    /// counter, or its holders key something other than a hash.
    pub fn open(ctx: Ctx, key: RStr) -> Result<Semaphore> {
        crate::store::side_keys_in_slot(ctx, bytes(key))?;
        let counter = counter::get(ctx, key)?;
        let name = OwnedStr::new(&holders_key(bytes(key)));
        let holders = LockKey::open(ctx, name.0, true)?;
        Ok(Semaphore {
            ctx,
            key,
            counter,
            holders,
            _holders_name: name,
        })
    }

    pub fn key(&self) -> RStr {
        self.key
    }

    pub fn ctx(&self) -> Ctx {
        self.ctx
    }

    /// The counter; None when the semaphore was never set.
    pub fn counter(&self) -> Option<i64> {
        self.counter
    }

    pub fn available(&self) -> i64 {
        self.counter.unwrap_or(0)
    }

    /// `SET key n` (RSEM.SETPERMITS).
    pub fn set_available(&mut self, n: i64) {
        counter::set(self.ctx, self.key, n);
        self.counter = Some(n);
    }

    /// Adds `n` (negative: takes) to the available permits: the new count.
    pub fn add_available(&mut self, n: i64) -> Result<i64> {
        let available = counter::add(self.ctx, self.key, n)?;
        self.counter = Some(available);
        Ok(available)
    }

    pub fn holding(&self, owner: &[u8]) -> Result<Option<Holding>> {
        self.holders
            .get(owner)
            .map(|v| Holding::parse(&v).ok_or(Error::CorruptHolds))
            .transpose()
    }

    /// Every holding, with its owner (rlock's own fields left out).
    pub fn holdings(&self) -> Vec<(Vec<u8>, Holding)> {
        if self.holders.is_free() {
            return Vec::new();
        }
        self.holders
            .fields()
            .into_iter()
            .filter(|(f, _)| !f.starts_with(crate::kinds::RESERVED_PREFIX))
            .filter_map(|(owner, v)| Holding::parse(&v).map(|h| (owner, h)))
            .collect()
    }

    pub fn ids(&self, owner: &[u8]) -> Memory {
        self.holders
            .get(&ids_field(owner))
            .map_or_else(Memory::default, |v| Memory::parse(&v))
    }

    /// Writes `owner`'s holding (and its request ids) in one HSET.
    pub fn set_holding(&mut self, owner: &[u8], holding: &Holding, ids: Option<&[u8]>) {
        let (value, field) = (holding.encode(), ids_field(owner));
        let mut pairs: Vec<(&[u8], &[u8])> = vec![(owner, &value)];
        if let Some(ids) = ids {
            pairs.push((&field, ids));
        }
        self.holders.hset(&pairs);
    }

    /// Removes `owner`'s holding and its request ids.
    pub fn remove_holding(&mut self, owner: &[u8]) {
        self.holders.hdel(&[owner, &ids_field(owner)]);
    }
}
