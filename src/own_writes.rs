//! The module's own writes, as its keyspace callback and other subscribers see them: marked
//! while they run (the writer serves the queue itself, so the callback needs no second look),
//! and a key they remove is told as the generic `del` event, the one the replicated `DEL` or
//! last-field `HDEL` fires on a replica: the low-level key API fires none, and a primary and
//! its replicas must tell subscribers (Redisson's `DeletedObjectListener`) the same thing. A
//! retried call answered from memory writes a `PING` (`answered_again`).

use crate::api::{api, Ctx, RStr};
use crate::stats;
use redis_module::raw;
use std::cell::Cell;
use std::os::raw::c_int;

thread_local! {
    static WRITING: Cell<bool> = const { Cell::new(false) };
}

/// Whether the keyspace event being delivered comes from this module's own write.
pub fn writing() -> bool {
    WRITING.with(Cell::get)
}

/// Runs a write (or fires an event), marked as this module's own (a nested one leaves the
/// outer one marked).
pub fn own<R>(write: impl FnOnce() -> R) -> R {
    let outer = WRITING.with(|w| w.replace(true));
    let result = write();
    WRITING.with(|w| w.set(outer));
    result
}

/// Tells subscribers that this module's write removed `key` (in the db `ctx`'s client has
/// selected). Nothing is fired unless the generic class (`g`) is on.
pub fn tell_deleted(ctx: Ctx, key: RStr) {
    let class = raw::REDISMODULE_NOTIFY_GENERIC as c_int;
    // SAFETY: reads the server's setting.
    if unsafe { api!(RedisModule_GetNotifyKeyspaceEvents)() } & class == 0 {
        return;
    }
    // SAFETY: `ctx` is a live command or timer context whose client's db is the key's; `key`
    // is live across the call and Redis copies what it keeps.
    own(|| unsafe { api!(RedisModule_NotifyKeyspaceEvent)(ctx, class, c"del".as_ptr(), key) });
}

/// A retry answered from memory writes nothing, yet its caller may pipeline `WAIT` after it to
/// learn whether the replicas have the first call's write. On Redis 7.2+ and Valkey a
/// connection's `WAIT` counts only from its own last command that propagated something (7.0:
/// from any command), so the answer propagates a `PING`: no key, no event, no change on a
/// replica, and the stream stays in order (it is appended inside this command), so a replica
/// that acknowledges it has every write before it, the first call's included.
pub fn answered_again(ctx: Ctx) {
    stats::RETRIES_ANSWERED.add();
    // SAFETY: `ctx` is the live context of the command; the empty format takes no arguments.
    unsafe { api!(RedisModule_Replicate)(ctx, c"PING".as_ptr(), c"".as_ptr()) };
}
