//! The fencing-token floor on replicas: a replica with the module reads the token out of every
//! lock, read-write lock and semaphore hash its primary writes (the `hset` keyspace event of
//! the replicated `HSET`) and raises its own token clock to it. Once promoted it therefore
//! issues tokens above every token the old primary issued *and replicated*, even when its own
//! clock reads earlier and the key was deleted since. The replication stream stays plain
//! commands (replicas and the AOF need no module), so the floor is learnt, not sent.
//!
//! The same events fire while an AOF is replayed at start-up, so a server restarted from its
//! AOF relearns the floor of deleted keys too; an RDB holds only the keys that still exist
//! (their tokens are seen when they are next used).
//!
//! A grant the old primary never replicated is covered by no floor: confirmation by the
//! replicas (`WAIT`) is what tells a client its grant, and so its token, survives a failover.
//! Each server keeps its own floor, so in a Cluster each shard does: it names no key.

use crate::api::{bytes, context_flags, guarded, Ctx, RStr, OK};
use crate::clock::observe_token;
use crate::families::contract::stored_token;
use crate::store::LockKey;
use crate::subscriptions::subscribe_once;
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::sync::atomic::AtomicBool;

static SUBSCRIBED: AtomicBool = AtomicBool::new(false);

/// Subscribes to hash events where tokens must be learnt: on a replica and on a server that
/// replays an AOF. A primary without an AOF never pays for it; Redis 7.0 cannot unsubscribe,
/// so a promoted replica keeps paying a cheap exit per hash write.
pub fn learn_when_needed(ctx: Ctx) -> bool {
    let needed = raw::REDISMODULE_CTX_FLAGS_SLAVE | raw::REDISMODULE_CTX_FLAGS_AOF;
    context_flags(ctx) & needed == 0
        || subscribe_once(
            ctx,
            &SUBSCRIBED,
            raw::REDISMODULE_NOTIFY_HASH,
            on_hash_event,
        )
}

extern "C" fn on_hash_event(ctx: Ctx, _class: c_int, event: *const c_char, key: RStr) -> c_int {
    guarded("a hash event", OK, || {
        // Only writes this server did not make itself: its primary's or its AOF's.
        let learning = raw::REDISMODULE_CTX_FLAGS_SLAVE | raw::REDISMODULE_CTX_FLAGS_LOADING;
        // SAFETY: Redis passes the event's name as a live C string.
        if context_flags(ctx) & learning == 0 || unsafe { CStr::from_ptr(event) } != c"hset" {
            return OK;
        }
        if let Ok(hash) = LockKey::open(ctx, key, false) {
            observe_token(stored_token(bytes(key), &hash));
        }
        OK
    })
}
