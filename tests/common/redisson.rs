//! Redisson's RLock protocol, as its Lua scripts run it (RedissonLock.tryLockInnerAsync and
//! unlockInnerAsync), written from the protocol's description for tests and the benchmark.

use super::resp::{Conn, Value};

pub const ACQUIRE: &str = "\
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then \
  redis.call('hincrby', KEYS[1], ARGV[2], 1); \
  redis.call('pexpire', KEYS[1], ARGV[1]); \
  return nil; \
end; \
return redis.call('pttl', KEYS[1]);";

pub const RELEASE: &str = "\
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; \
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); \
if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; \
else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; \
return nil;";

pub fn channel(key: &str) -> String {
    format!("redisson_lock__channel:{{{key}}}")
}

/// Redisson's tryAcquire: `None` when acquired, else the holder's remaining lease (PTTL).
pub fn try_acquire(c: &mut Conn, key: &str, owner: &str, lease_ms: u64) -> Option<i64> {
    match c.cmd(&["EVAL", ACQUIRE, "1", key, &lease_ms.to_string(), owner]) {
        Value::Nil => None,
        ttl => Some(ttl.int()),
    }
}

/// Redisson's unlock: `None` when `owner` did not hold it, `Some(true)` when it is now free.
pub fn release(c: &mut Conn, key: &str, owner: &str, lease_ms: u64) -> Option<bool> {
    let reply = c.cmd(&[
        "EVAL",
        RELEASE,
        "2",
        key,
        &channel(key),
        "0",
        &lease_ms.to_string(),
        owner,
    ]);
    match reply {
        Value::Nil => None,
        n => Some(n.int() == 1),
    }
}
