//! A string counter at a key: the layout Redisson's `RSemaphore` (available permits) and
//! `RCountDownLatch` (remaining count) keep. Driven through `RedisModule_Call` with the same
//! commands Redisson's scripts run (`GET`, `SET`, `INCRBY`, `DEL`), so the key's TTL and
//! encoding behave exactly as for those clients, and each write replicates as that command.

use crate::api::{api, reply_bytes, CallReply, Ctx, RStr};
use crate::error::{Error, Result};
use crate::kinds::tagged;
use crate::own_writes::own;
use redis_module::raw;
use std::os::raw::{c_int, c_longlong};

/// Frees a call reply on drop.
struct Reply(CallReply);

impl Drop for Reply {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: a live reply of RedisModule_Call, freed once, here.
            unsafe { api!(RedisModule_FreeCallReply)(self.0) };
        }
    }
}

impl Reply {
    fn kind(&self) -> c_int {
        if self.0.is_null() {
            return raw::REDISMODULE_REPLY_UNKNOWN as c_int;
        }
        // SAFETY: a live reply.
        unsafe { api!(RedisModule_CallReplyType)(self.0) }
    }

    fn integer(&self) -> Result<i64> {
        if self.kind() != raw::REDISMODULE_REPLY_INTEGER as c_int {
            return Err(self.error());
        }
        // SAFETY: a live integer reply.
        Ok(unsafe { api!(RedisModule_CallReplyInteger)(self.0) })
    }

    /// What a reply that is not the expected kind means: WRONGTYPE for another type at the
    /// key, else a counter we cannot read.
    fn error(&self) -> Error {
        // SAFETY: a live reply (or NULL, which reply_bytes handles).
        let text = unsafe {
            (self.kind() == raw::REDISMODULE_REPLY_ERROR as c_int)
                .then(|| {
                    let mut len = 0usize;
                    let ptr = api!(RedisModule_CallReplyStringPtr)(self.0, &mut len);
                    (!ptr.is_null()).then(|| std::slice::from_raw_parts(ptr.cast::<u8>(), len))
                })
                .flatten()
        };
        match text {
            Some(t) if t.starts_with(b"WRONGTYPE") => Error::WrongType,
            _ => Error::CorruptCounter,
        }
    }
}

/// The counter's value; None when the key does not exist. WRONGTYPE for another type.
pub fn get(ctx: Ctx, key: RStr) -> Result<Option<i64>> {
    // SAFETY: `ctx` and `key` are live; the format names one string.
    let reply = Reply(unsafe { api!(RedisModule_Call)(ctx, c"GET".as_ptr(), c"s".as_ptr(), key) });
    match reply.kind() {
        k if k == raw::REDISMODULE_REPLY_NULL as c_int => Ok(None),
        k if k == raw::REDISMODULE_REPLY_STRING as c_int => {
            // SAFETY: a live string reply.
            let bytes = unsafe { reply_bytes(reply.0) }.unwrap_or_default();
            std::str::from_utf8(bytes)
                .ok()
                .and_then(|s| s.parse().ok())
                .map(Some)
                .ok_or(Error::CorruptCounter)
        }
        _ => Err(reply.error()),
    }
}

/// `SET key n`.
pub fn set(ctx: Ctx, key: RStr, n: i64) {
    drop(call_with_number(ctx, c"SET", key, n));
}

/// `INCRBY key n` (n may be negative): the new value.
pub fn add(ctx: Ctx, key: RStr, n: i64) -> Result<i64> {
    call_with_number(ctx, c"INCRBY", key, n).integer()
}

/// `<command> key n`, replicated, marked as this module's own write.
fn call_with_number(ctx: Ctx, command: &std::ffi::CStr, key: RStr, n: i64) -> Reply {
    // SAFETY: the format names a string and a long long; '!' replicates the command.
    own(|| {
        Reply(unsafe {
            api!(RedisModule_Call)(ctx, command.as_ptr(), c"!sl".as_ptr(), key, n as c_longlong)
        })
    })
}

/// `DEL key`.
pub fn delete(ctx: Ctx, key: RStr) {
    // SAFETY: as in `set`.
    drop(own(|| {
        Reply(unsafe { api!(RedisModule_Call)(ctx, c"DEL".as_ptr(), c"!s".as_ptr(), key) })
    }));
}

/// Where Redisson's `RSemaphore` waiters listen for released permits: `redisson_sc:{key}`
/// (both semaphore families publish the new count there, as Redisson's release does).
pub fn semaphore_channel(key: &[u8]) -> Vec<u8> {
    [&b"redisson_sc:"[..], &tagged(key)].concat()
}
