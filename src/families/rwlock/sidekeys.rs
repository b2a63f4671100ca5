//! String keys beside a lock: a read-write lock's per-read-hold timeout keys, whose expiry is
//! that reader's lease. Written through the low-level key API and replicated as the plain
//! commands that reproduce them (`SET name 1 PXAT at`, `DEL`), like the lock hash itself.

use crate::api::{api, Ctx, OwnedStr, RStr};
use crate::own_writes::tell_deleted;
use crate::store::{DEL, ONE};
use redis_module::raw;
use std::os::raw::{c_char, c_int};
use std::sync::atomic::Ordering;

const SET: *const c_char = c"SET".as_ptr();

/// A string key beside a lock (a read hold's timeout key): open for writing, closed on drop.
struct SideKey {
    key: *mut raw::RedisModuleKey,
}

impl SideKey {
    fn open(ctx: Ctx, name: RStr, write: bool) -> SideKey {
        let mode = raw::REDISMODULE_READ | if write { raw::REDISMODULE_WRITE } else { 0 };
        // SAFETY: `ctx` and `name` are live for this callback; the key is closed on drop.
        SideKey {
            key: unsafe { api!(RedisModule_OpenKey)(ctx, name, mode as c_int) },
        }
    }

    fn is_empty(&self) -> bool {
        // SAFETY: `self.key` is open (KeyType accepts NULL too).
        unsafe { api!(RedisModule_KeyType)(self.key) as isize == raw::REDISMODULE_KEYTYPE_EMPTY }
    }
}

impl Drop for SideKey {
    fn drop(&mut self) {
        // SAFETY: opened in `open`, closed once, here.
        unsafe { api!(RedisModule_CloseKey)(self.key) }
    }
}

/// Sets string key `name` to `1` expiring at `at` (ms), replicated as `SET name 1 PXAT at`.
/// Opening it first lets Redis expire an old one (and replicate that DEL first).
pub fn set_side_key(ctx: Ctx, name: &[u8], at: i64) {
    let name = OwnedStr::new(name);
    let key = SideKey::open(ctx, name.0, true);
    let one = ONE.load(Ordering::Relaxed);
    // SAFETY: the key is open for writing; StringSet copies the value; the format matches
    // (s, s, c, l).
    unsafe {
        api!(RedisModule_StringSet)(key.key, one);
        api!(RedisModule_SetAbsExpire)(key.key, at);
        api!(RedisModule_Replicate)(
            ctx,
            SET,
            c"sscl".as_ptr(),
            name.0,
            one,
            c"PXAT".as_ptr(),
            at,
        );
    }
}

/// The expiry (ms) of string key `name`; None when it is gone (or has no expiry).
pub fn side_key_expire_at(ctx: Ctx, name: &[u8]) -> Option<i64> {
    let name = OwnedStr::new(name);
    let key = SideKey::open(ctx, name.0, false);
    if key.is_empty() {
        return None;
    }
    // SAFETY: `key.key` is open.
    let at = unsafe { api!(RedisModule_GetAbsExpire)(key.key) };
    (at >= 0).then_some(at)
}

/// Deletes key `name` if it exists, replicated as `DEL`.
pub fn delete_side_key(ctx: Ctx, name: &[u8]) {
    let name = OwnedStr::new(name);
    let key = SideKey::open(ctx, name.0, true);
    if !key.is_empty() {
        // SAFETY: the key is open for writing; the format matches (s).
        unsafe {
            api!(RedisModule_DeleteKey)(key.key);
            api!(RedisModule_Replicate)(ctx, DEL, c"s".as_ptr(), name.0);
        }
        tell_deleted(ctx, name.0);
    }
}
