//! Redisson's fair-lock queue beside a plain lock: `redisson_lock_queue:{K}` (its waiters'
//! ids, first in line first) and `redisson_lock_timeout:{K}` (each one's give-up time, ms).
//! Read only, never written: a Redisson fair waiter listens on a channel of its own, so a
//! release must name the one Redisson's next acquire will let in.

use crate::api::{api, bytes, Ctx, OwnedStr};
use redis_module::raw;
use std::os::raw::c_int;

/// A key opened for reading; closed on drop.
struct ReadKey {
    ctx: Ctx,
    key: *mut raw::RedisModuleKey,
    _name: OwnedStr,
}

impl ReadKey {
    fn open(ctx: Ctx, prefix: &[u8], lock: &[u8]) -> ReadKey {
        let name = OwnedStr::joined(&[prefix, b":{", lock, b"}"]);
        // SAFETY: `ctx` is the live context of this callback; `name` outlives the key (a
        // field dropped after `Drop::drop` closed it).
        let key = unsafe { api!(RedisModule_OpenKey)(ctx, name.0, raw::REDISMODULE_READ as c_int) };
        ReadKey {
            ctx,
            key,
            _name: name,
        }
    }

    fn is_list(&self) -> bool {
        // SAFETY: `self.key` is open (KeyType accepts NULL too).
        unsafe { api!(RedisModule_KeyType)(self.key) as isize == raw::REDISMODULE_KEYTYPE_LIST }
    }

    fn len(&self) -> usize {
        // SAFETY: `self.key` is open.
        unsafe { api!(RedisModule_ValueLength)(self.key) }
    }

    /// Element `index` of a list key, copied out; None past its end.
    fn list_get(&self, index: usize) -> Option<OwnedElement> {
        let index = std::os::raw::c_long::try_from(index).ok()?;
        // SAFETY: `self.key` is an open list key; ListGet returns a new string or NULL.
        let element = unsafe { api!(RedisModule_ListGet)(self.key, index) };
        (!element.is_null()).then_some(OwnedElement {
            ctx: self.ctx,
            element,
        })
    }

    /// The score of `member` in a sorted-set key; None if it has none (or the key is no zset).
    fn zset_score(&self, member: &OwnedElement) -> Option<f64> {
        let mut score = 0f64;
        // SAFETY: `self.key` is open; ZsetScore returns ERR for an empty or other-type key.
        let found = unsafe { api!(RedisModule_ZsetScore)(self.key, member.element, &mut score) };
        (found == crate::api::OK).then_some(score)
    }
}

impl Drop for ReadKey {
    fn drop(&mut self) {
        // SAFETY: opened in `open`, closed once, here.
        unsafe { api!(RedisModule_CloseKey)(self.key) }
    }
}

/// A string `RedisModule_ListGet` made, freed (with the context it was made in) on drop.
struct OwnedElement {
    ctx: Ctx,
    element: crate::api::RStr,
}

impl Drop for OwnedElement {
    fn drop(&mut self) {
        // SAFETY: made by ListGet under `self.ctx`, freed once, here.
        unsafe { api!(RedisModule_FreeString)(self.ctx, self.element) }
    }
}

/// The Redisson fair waiter that lock `lock`'s next Redisson acquire lets in: the first of
/// its queue whose give-up time is after `now` (ms) or that has none, as Redisson's scripts
/// skip (and drop) the stale ones at the head. None without a queue.
pub fn next_redisson_waiter(ctx: Ctx, lock: &[u8], now: i64) -> Option<Vec<u8>> {
    let queue = ReadKey::open(ctx, b"redisson_lock_queue", lock);
    if !queue.is_list() {
        return None;
    }
    let timeouts = ReadKey::open(ctx, b"redisson_lock_timeout", lock);
    (0..queue.len())
        .map_while(|index| queue.list_get(index))
        .find(|waiter| timeouts.zset_score(waiter).is_none_or(|at| at > now as f64))
        .map(|waiter| bytes(waiter.element).to_vec())
}
