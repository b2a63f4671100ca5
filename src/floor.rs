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
use crate::families::lock::rules::TOKEN_FIELD;
use crate::families::rwlock::layout::{decode_token, READ_TOKEN_PREFIX, WRITE_TOKEN_PREFIX};
use crate::families::semaphore::rules::Holding;
use crate::kinds::MODE_FIELD;
use crate::store::LockKey;
use crate::subscriptions::subscribe_once;
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::sync::atomic::AtomicBool;

/// The suffix of a semaphore's holders hash (`semaphore::rules::holders_key`).
const HOLDERS_SUFFIX: &[u8] = b":rlock:holders";

/// The highest fencing token stored in the hash `key` with these fields, if it is one of
/// rlock's: a lock's `rlock:token`, a read-write lock's `rlock:read:*` / `rlock:write:*`
/// (`t<token>`), a semaphore holders hash's `<permits>,<token>,...` values.
pub fn highest_token(key: &[u8], fields: &[(Vec<u8>, Vec<u8>)]) -> Option<i64> {
    let holders = key.ends_with(HOLDERS_SUFFIX);
    let token = |(field, value): &(Vec<u8>, Vec<u8>)| -> Option<i64> {
        if field.as_slice() == TOKEN_FIELD {
            std::str::from_utf8(value).ok()?.parse().ok()
        } else if field.starts_with(READ_TOKEN_PREFIX) || field.starts_with(WRITE_TOKEN_PREFIX) {
            decode_token(value)
        } else if holders {
            Holding::parse(value).map(|h| h.token)
        } else {
            None
        }
    };
    fields.iter().filter_map(token).max()
}

/// The highest token in the hash, looked up without reading a hash that is not rlock's: a
/// lock's token is one field; only a read-write lock (its `mode` field) and a semaphore's
/// holders hash (its name) are scanned.
fn token_in(key: &[u8], hash: &LockKey) -> Option<i64> {
    if let Some(token) = hash.get(TOKEN_FIELD) {
        return highest_token(key, &[(TOKEN_FIELD.to_vec(), token)]);
    }
    let rwlock = matches!(hash.get(MODE_FIELD).as_deref(), Some(b"read" | b"write"));
    (rwlock || key.ends_with(HOLDERS_SUFFIX)).then(|| highest_token(key, &hash.fields()))?
}

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
            observe_token(token_in(bytes(key), &hash));
        }
        OK
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        pairs
            .iter()
            .map(|(f, v)| (f.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn tokens_are_read_from_each_familys_layout() {
        let lock = fields(&[("owner-1", "1"), ("rlock:token", "1795000000000123")]);
        assert_eq!(highest_token(b"orders", &lock), Some(1_795_000_000_000_123));
        let rw = fields(&[
            ("mode", "read"),
            ("a", "1"),
            ("rlock:read:a", "t500"),
            ("rlock:write:b", "t900"),
        ]);
        assert_eq!(highest_token(b"rw", &rw), Some(900));
        let holders = fields(&[
            ("a", "2,700,1000,0"),
            ("rlock:ids:a", "x"),
            ("b", "1,650,9,0"),
        ]);
        assert_eq!(highest_token(b"{sem}:rlock:holders", &holders), Some(700));
    }

    #[test]
    fn other_hashes_hold_no_token() {
        let user = fields(&[("name", "ann"), ("age", "40"), ("token", "77")]);
        assert_eq!(highest_token(b"user:1", &user), None);
        let looks_like_a_holding = fields(&[("a", "2,700,1000,0")]);
        assert_eq!(highest_token(b"user:2", &looks_like_a_holding), None);
        let bad = fields(&[("rlock:token", "not-a-number"), ("rlock:read:a", "500")]);
        assert_eq!(highest_token(b"k", &bad), None);
    }
}
