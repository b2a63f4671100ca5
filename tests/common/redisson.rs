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

/// Redisson's RReadWriteLock scripts, copied from RedissonReadLock.java and
/// RedissonWriteLock.java (tryLockInnerAsync, unlockInnerAsync), unchanged.
pub mod rw {
    use super::{Conn, Value};

    pub const READ_ACQUIRE: &str = "\
local mode = redis.call('hget', KEYS[1], 'mode'); \
if (mode == false) then \
  redis.call('hset', KEYS[1], 'mode', 'read'); \
  redis.call('hset', KEYS[1], ARGV[2], 1); \
  redis.call('set', KEYS[2] .. ':1', 1); \
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]); \
  redis.call('pexpire', KEYS[1], ARGV[1]); \
  return nil; \
end; \
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then \
  local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); \
  local key = KEYS[2] .. ':' .. ind;\
  redis.call('set', key, 1); \
  redis.call('pexpire', key, ARGV[1]); \
  local remainTime = redis.call('pttl', KEYS[1]); \
  redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1])); \
  return nil; \
end;\
return redis.call('pttl', KEYS[1]);";

    pub const READ_RELEASE: &str = "\
local val = redis.call('get', KEYS[5]); \
if val ~= false then \
    return tonumber(val);\
end; \
local mode = redis.call('hget', KEYS[1], 'mode'); \
if (mode == false) then \
    redis.call(ARGV[3], KEYS[2], ARGV[1]); \
    redis.call('set', KEYS[5], 1, 'px', ARGV[4]); \
    return nil; \
end; \
local lockExists = redis.call('hexists', KEYS[1], ARGV[2]); \
if (lockExists == 0) then \
    return nil;\
end; \
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); \
if (counter == 0) then \
    redis.call('hdel', KEYS[1], ARGV[2]); \
end;\
redis.call('del', KEYS[3] .. ':' .. (counter+1)); \
if (redis.call('hlen', KEYS[1]) > 1) then \
    local maxRemainTime = -3; \
    local keys = redis.call('hkeys', KEYS[1]); \
    for n, key in ipairs(keys) do \
        counter = tonumber(redis.call('hget', KEYS[1], key)); \
        if type(counter) == 'number' then \
            for i=counter, 1, -1 do \
                local remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i); \
                maxRemainTime = math.max(remainTime, maxRemainTime);\
            end; \
        end; \
    end; \
    if maxRemainTime > 0 then \
        redis.call('pexpire', KEYS[1], maxRemainTime); \
        redis.call('set', KEYS[5], 0, 'px', ARGV[4]); \
        return 0; \
    end;\
    if mode == 'write' then \
        redis.call('set', KEYS[5], 0, 'px', ARGV[4]); \
        return 0;\
    end; \
end; \
redis.call('del', KEYS[1]); \
redis.call(ARGV[3], KEYS[2], ARGV[1]); \
redis.call('set', KEYS[5], 1, 'px', ARGV[4]); \
return 1; ";

    pub const WRITE_ACQUIRE: &str = "\
local mode = redis.call('hget', KEYS[1], 'mode'); \
if (mode == false) then \
      redis.call('hset', KEYS[1], 'mode', 'write'); \
      redis.call('hset', KEYS[1], ARGV[2], 1); \
      redis.call('pexpire', KEYS[1], ARGV[1]); \
      return nil; \
  end; \
  if (mode == 'write') then \
      if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then \
          redis.call('hincrby', KEYS[1], ARGV[2], 1); \
          local currentExpire = redis.call('pttl', KEYS[1]); \
          redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]); \
          return nil; \
      end; \
    end;\
    return redis.call('pttl', KEYS[1]);";

    pub const WRITE_RELEASE: &str = "\
local val = redis.call('get', KEYS[3]); \
if val ~= false then \
    return tonumber(val);\
end; \
local mode = redis.call('hget', KEYS[1], 'mode'); \
if (mode == false) then \
    redis.call(ARGV[4], KEYS[2], ARGV[1]); \
    redis.call('set', KEYS[3], 1, 'px', ARGV[5]); \
    return nil; \
end;\
if (mode == 'write') then \
    local lockExists = redis.call('hexists', KEYS[1], ARGV[3]); \
    if (lockExists == 0) then \
        return nil;\
    else \
        local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); \
        if (counter > 0) then \
            redis.call('pexpire', KEYS[1], ARGV[2]); \
            redis.call('set', KEYS[3], 0, 'px', ARGV[5]); \
            return 0; \
        else \
            redis.call('hdel', KEYS[1], ARGV[3]); \
            if (redis.call('hlen', KEYS[1]) == 1) then \
                redis.call('del', KEYS[1]); \
                redis.call(ARGV[4], KEYS[2], ARGV[1]); \
            else \
                redis.call('hset', KEYS[1], 'mode', 'read'); \
            end; \
            redis.call('set', KEYS[3], 1, 'px', ARGV[5]); \
            return 1; \
        end; \
    end; \
end; \
return nil;";

    /// `redisson_rwlock:{key}`, where Redisson's read and write lock waiters listen.
    pub fn channel(key: &str) -> String {
        format!("redisson_rwlock:{{{key}}}")
    }

    fn nil_or_int(v: Value) -> Option<i64> {
        match v {
            Value::Nil => None,
            v => Some(v.int()),
        }
    }

    /// Redisson's read tryAcquire: `None` when acquired, else the PTTL it waits on.
    pub fn read_acquire(c: &mut Conn, key: &str, owner: &str, lease_ms: u64) -> Option<i64> {
        let prefix = format!("{{{key}}}:{owner}:rwlock_timeout");
        let write = format!("{owner}:write");
        nil_or_int(c.cmd(&[
            "EVAL",
            READ_ACQUIRE,
            "2",
            key,
            &prefix,
            &lease_ms.to_string(),
            owner,
            &write,
        ]))
    }

    /// Redisson's read unlock (`request` names its unlock latch): Some(1) when the lock is now
    /// free, Some(0) when still held, None when `owner` held no read lock.
    pub fn read_release(c: &mut Conn, key: &str, owner: &str, request: &str) -> Option<i64> {
        let prefix = format!("{{{key}}}:{owner}:rwlock_timeout");
        let latch = format!("redisson_unlock_latch:{{{key}}}:{request}");
        let (tag, channel) = (format!("{{{key}}}"), channel(key));
        nil_or_int(c.cmd(&[
            "EVAL",
            READ_RELEASE,
            "5",
            key,
            &channel,
            &prefix,
            &tag,
            &latch,
            "0",
            owner,
            "publish",
            "30000",
        ]))
    }

    /// Redisson's write tryAcquire: `None` when acquired, else the PTTL.
    pub fn write_acquire(c: &mut Conn, key: &str, owner: &str, lease_ms: u64) -> Option<i64> {
        let write = format!("{owner}:write");
        nil_or_int(c.cmd(&[
            "EVAL",
            WRITE_ACQUIRE,
            "1",
            key,
            &lease_ms.to_string(),
            &write,
        ]))
    }

    /// Redisson's write unlock: Some(1) released, Some(0) still held, None not the holder.
    pub fn write_release(c: &mut Conn, key: &str, owner: &str, request: &str) -> Option<i64> {
        let latch = format!("redisson_unlock_latch:{{{key}}}:{request}");
        let write = format!("{owner}:write");
        nil_or_int(c.cmd(&[
            "EVAL",
            WRITE_RELEASE,
            "3",
            key,
            &channel(key),
            &latch,
            "1",
            "30000",
            &write,
            "publish",
            "30000",
        ]))
    }
}

/// Redisson's `RCountDownLatch` scripts (RedissonCountDownLatch.trySetCountAsync and
/// countDownAsync), as Redisson sends them.
pub mod latch {
    use super::super::resp::Conn;

    pub const TRY_SET_COUNT: &str = "\
if redis.call('exists', KEYS[1]) == 0 then \
redis.call('set', KEYS[1], ARGV[2]); \
redis.call(ARGV[3], KEYS[2], ARGV[1]); \
return 1 \
else \
return 0 \
end";

    pub const COUNT_DOWN: &str = "\
local v = redis.call('decr', KEYS[1]);\
if v <= 0 then redis.call('del', KEYS[1]) end;\
if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;";

    pub fn channel(key: &str) -> String {
        format!("redisson_countdownlatch__channel__{{{key}}}")
    }

    pub fn try_set_count(c: &mut Conn, key: &str, count: i64) -> bool {
        let (channel, count) = (channel(key), count.to_string());
        let args = [
            "EVAL",
            TRY_SET_COUNT,
            "2",
            key,
            &channel,
            "1",
            &count,
            "publish",
        ];
        c.cmd(&args).int() == 1
    }

    pub fn count_down(c: &mut Conn, key: &str) {
        let channel = channel(key);
        c.cmd(&["EVAL", COUNT_DOWN, "2", key, &channel, "0", "publish"]);
    }
}

/// Redisson's `RSemaphore` scripts (RedissonSemaphore.tryAcquireAsync and releaseAsync), as
/// Redisson sends them.
pub mod semaphore {
    use super::super::resp::Conn;

    pub const TRY_ACQUIRE: &str = "\
local value = redis.call('get', KEYS[1]); \
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then \
local val = redis.call('decrby', KEYS[1], ARGV[1]); \
return 1; \
end; \
return 0;";

    pub const RELEASE: &str = "\
local value = redis.call('incrby', KEYS[1], ARGV[1]); \
redis.call(ARGV[2], KEYS[2], value); ";

    pub fn channel(key: &str) -> String {
        format!("redisson_sc:{{{key}}}")
    }

    pub fn try_acquire(c: &mut Conn, key: &str, permits: i64) -> bool {
        c.cmd(&["EVAL", TRY_ACQUIRE, "1", key, &permits.to_string()])
            .int()
            == 1
    }

    pub fn release(c: &mut Conn, key: &str, permits: i64) {
        let channel = channel(key);
        c.cmd(&[
            "EVAL",
            RELEASE,
            "2",
            key,
            &channel,
            &permits.to_string(),
            "publish",
        ]);
    }
}
