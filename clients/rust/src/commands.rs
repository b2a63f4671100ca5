//! The commands this crate sends (`RLOCK.*`, `RWLOCK.*`, `RSEM.*`, `RLATCH.*`), and the ids
//! it puts in them.

pub(crate) use crate::family::Family;
use redis::Cmd;
use std::time::Duration;

/// How long an acquire may block in the server's FIFO queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// One attempt: nil at once when another owner holds the lock.
    No,
    /// `WAIT ms`.
    Up(Duration),
    /// `WAIT 0`: until granted.
    Forever,
}

impl Wait {
    /// How much longer than an ordinary reply the reply may take; `None`: unbounded.
    pub(crate) fn extra_time(self) -> Option<Duration> {
        match self {
            Wait::No => Some(Duration::ZERO),
            Wait::Up(limit) => Some(limit),
            Wait::Forever => None,
        }
    }
}

/// Everything an `RLOCK.ACQUIRE` says besides key, owner and id.
#[derive(Clone, Debug)]
pub(crate) struct AcquireOptions {
    pub lease: Duration,
    pub wait: Wait,
    pub watchdog: bool,
    pub max_hold: Option<Duration>,
    /// `LOCKDELAY ms` (the plain lock only).
    pub lock_delay: Option<Duration>,
}

impl AcquireOptions {
    /// A lease and a wait, nothing else: no watchdog, cap or delay.
    pub(crate) fn unwatched(lease: Duration, wait: Wait) -> AcquireOptions {
        AcquireOptions {
            lease,
            wait,
            watchdog: false,
            max_hold: None,
            lock_delay: None,
        }
    }
}

/// Whole milliseconds, at least 1: the server refuses `PX 0` and `MAXHOLD 0`.
pub(crate) fn millis(duration: Duration) -> u64 {
    (duration.as_millis() as u64).max(1)
}

/// `<P>.ACQUIRE key owner [READ|WRITE|PERMITS n] PX ms [WAIT ms [NOTIFY]] [WATCHDOG] ID id
/// [MAXHOLD ms] [LOCKDELAY ms]`. With `notify` (only for a `wait`: `NOTIFY` needs `WAIT`) it waits without
/// blocking the connection, and the grant comes as a message on the caller's `__rlock__`
/// channel (docs/notify.md). For a latch: `RLATCH.AWAIT key [WAIT ms [NOTIFY]]`.
pub(crate) fn acquire(
    kind: Family,
    key: &str,
    owner: &str,
    options: &AcquireOptions,
    id: &RequestId,
    notify: bool,
) -> Cmd {
    if kind == Family::Latch {
        let mut cmd = kind.command("AWAIT", 4, key.len() + 32);
        cmd.arg(key);
        add_wait(&mut cmd, options.wait, notify);
        return cmd;
    }
    // At most 17 arguments follow the name: key owner [PERMITS n] PX ms WAIT ms NOTIFY
    // WATCHDOG ID id MAXHOLD ms LOCKDELAY ms.
    let mut cmd = kind.command("ACQUIRE", 17, key.len() + owner.len() + ID_MAX_LEN + 128);
    cmd.arg(key).arg(owner);
    kind.add_mode(&mut cmd);
    add_acquire_options(&mut cmd, kind, options, id, notify);
    cmd
}

/// `RLOCK.ACQUIREALL numkeys key [key ...] owner PX ms [WAIT ms [NOTIFY]] [WATCHDOG] ID id
/// [MAXHOLD ms] [LOCKDELAY ms]`: every key or none; the tokens in the keys' order, or nil.
/// Waiting with `notify`, the outcome comes as one message per key, in the keys' order.
pub(crate) fn acquire_all(
    keys: &[String],
    owner: &str,
    options: &AcquireOptions,
    id: &RequestId,
    notify: bool,
) -> Cmd {
    let mut cmd = redis::cmd("RLOCK.ACQUIREALL");
    cmd.arg(keys.len()).arg(keys).arg(owner);
    add_acquire_options(&mut cmd, Family::Lock, options, id, notify);
    cmd
}

/// What follows key, owner and mode in an acquire.
fn add_acquire_options(
    cmd: &mut Cmd,
    kind: Family,
    options: &AcquireOptions,
    id: &RequestId,
    notify: bool,
) {
    cmd.arg("PX").arg(millis(options.lease));
    add_wait(cmd, options.wait, notify);
    if options.watchdog {
        cmd.arg("WATCHDOG");
    }
    cmd.arg("ID").arg(id);
    if let Some(cap) = options.max_hold {
        cmd.arg("MAXHOLD").arg(millis(cap));
    }
    if let (Family::Lock, Some(delay)) = (kind, options.lock_delay) {
        cmd.arg("LOCKDELAY").arg(delay.as_millis() as u64);
    }
}

/// `WAIT ms`, and `NOTIFY` (which needs a `WAIT`) with `notify`.
fn add_wait(cmd: &mut Cmd, wait: Wait, notify: bool) {
    debug_assert!(!notify || wait != Wait::No, "NOTIFY needs WAIT");
    match wait {
        Wait::No => {}
        // WAIT takes whole ms and 0 means "for ever", so a sub-millisecond wait rounds up.
        Wait::Up(limit) => {
            cmd.arg("WAIT").arg(millis(limit));
        }
        Wait::Forever => {
            cmd.arg("WAIT").arg(0);
        }
    }
    if notify {
        cmd.arg("NOTIFY");
    }
}

/// `<P>.RELEASE key owner [READ|WRITE|PERMITS n] ID id`: the owner's remaining holds (or
/// permits), nil when it held none.
pub(crate) fn release(
    kind: Family,
    key: impl AsRef<[u8]>,
    owner: impl AsRef<[u8]>,
    id: &RequestId,
) -> Cmd {
    let (key, owner) = (key.as_ref(), owner.as_ref());
    let mut cmd = kind.command("RELEASE", 6, key.len() + owner.len() + ID_MAX_LEN + 32);
    cmd.arg(key).arg(owner);
    kind.add_mode(&mut cmd);
    cmd.arg("ID").arg(id);
    cmd
}

/// `RLOCK.RELEASEALL numkeys key [key ...] owner ID id`: per key, in order, the owner's
/// remaining holds, nil where it held none.
pub(crate) fn release_all(keys: &[&str], owner: &str, id: &RequestId) -> Cmd {
    let mut cmd = redis::cmd("RLOCK.RELEASEALL");
    cmd.arg(keys.len()).arg(keys).arg(owner).arg("ID").arg(id);
    cmd
}

/// `RLOCK.CANCEL key owner`: takes every queue entry of `owner` at `key` out of the queue (of
/// any lock type; for a latch, owner `""`: the latch waits told to this connection).
pub(crate) fn cancel(key: impl AsRef<[u8]>, owner: impl AsRef<[u8]>) -> Cmd {
    let mut cmd = redis::cmd("RLOCK.CANCEL");
    cmd.arg(key.as_ref()).arg(owner.as_ref());
    cmd
}

/// `RLOCK.CHANNEL`: the channel on which the calling connection is told of its grants.
pub(crate) fn channel() -> Cmd {
    redis::cmd("RLOCK.CHANNEL")
}

/// `<P>.RENEW key owner PX ms`: renews the owner's lease (a write of the expiry, which the
/// replicas confirm for a grant that another connection wrote).
pub(crate) fn renew(
    kind: Family,
    key: impl AsRef<[u8]>,
    owner: impl AsRef<[u8]>,
    lease: Duration,
) -> Cmd {
    let (key, owner) = (key.as_ref(), owner.as_ref());
    // `rebind` adds WATCHDOG.
    let mut cmd = kind.command("RENEW", 6, key.len() + owner.len() + 48);
    cmd.arg(key).arg(owner).arg("PX").arg(millis(lease));
    cmd
}

/// `<P>.RENEW key owner PX ms WATCHDOG`: moves the watchdog binding of the owner's holding to
/// the connection that sends it. `PX` keeps the lease we asked for (without it the server
/// would fall back to `rlock.default-lease-ms`).
pub(crate) fn rebind(
    kind: Family,
    key: impl AsRef<[u8]>,
    owner: impl AsRef<[u8]>,
    lease: Duration,
) -> Cmd {
    let mut cmd = renew(kind, key, owner, lease);
    cmd.arg("WATCHDOG");
    cmd
}

/// `RLOCK.GUARD key owner token command [arg ...]`: runs `inner` (a write) only while `owner`
/// holds the lock at `key` with `token`; `NOTOWNER` otherwise, and nothing runs.
pub(crate) fn guard(key: &str, owner: &str, token: u64, inner: &Cmd) -> Cmd {
    let mut cmd = redis::cmd("RLOCK.GUARD");
    cmd.arg(key).arg(owner).arg(token);
    for arg in inner.args_iter() {
        if let redis::Arg::Simple(bytes) = arg {
            cmd.arg(bytes);
        }
    }
    cmd
}

/// A fresh id for one logical call, reused unchanged by its retry: a random prefix drawn once
/// per process and a counter, unique as a uuid4 per call was, without a `getrandom` system
/// call per call (two a pair, a tenth of the uncontended pair's system calls). Written into
/// a buffer of its own, not a `String`: no allocation and no formatting machinery per call.
pub(crate) fn request_id() -> RequestId {
    static PREFIX: std::sync::OnceLock<[u8; PREFIX_LEN]> = std::sync::OnceLock::new();
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let prefix = PREFIX.get_or_init(|| {
        let mut prefix = [0; PREFIX_LEN];
        uuid::Uuid::new_v4().simple().encode_lower(&mut prefix);
        prefix
    });
    id_of(
        prefix,
        COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
    )
}

/// `<prefix>-<n in hex>`.
fn id_of(prefix: &[u8; PREFIX_LEN], n: u64) -> RequestId {
    let mut bytes = [0; ID_MAX_LEN];
    bytes[..PREFIX_LEN].copy_from_slice(prefix);
    bytes[PREFIX_LEN] = b'-';
    // `{n:x}`: lowercase hex, no leading zeros (one digit for 0).
    let digits = (u64::BITS - (n | 1).leading_zeros()).div_ceil(4) as usize;
    for (i, digit) in bytes[PREFIX_LEN + 1..][..digits].iter_mut().enumerate() {
        let nibble = (n >> (4 * (digits - 1 - i))) & 0xf;
        *digit = b"0123456789abcdef"[nibble as usize];
    }
    RequestId {
        bytes,
        len: (PREFIX_LEN + 1 + digits) as u8,
    }
}

/// A uuid's 32 hex digits.
const PREFIX_LEN: usize = 32;
/// `<prefix>-<up to 16 hex digits>`.
const ID_MAX_LEN: usize = PREFIX_LEN + 1 + 16;

/// A request id (see [`request_id`]), an argument of a command.
#[derive(Clone, Copy)]
pub(crate) struct RequestId {
    bytes: [u8; ID_MAX_LEN],
    len: u8,
}

impl RequestId {
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl redis::ToRedisArgs for RequestId {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        out.write_arg(self.as_bytes());
    }
}

/// `<uuid>:<task-or-thread id>`, Redisson's owner shape: the uuid makes it unique per lock
/// handle, the suffix says in `RLOCK.INFO` which task or thread took the lock.
pub(crate) fn owner_id() -> String {
    let uuid = uuid::Uuid::new_v4();
    match tokio::task::try_id() {
        Some(task) => format!("{uuid}:task-{task}"),
        None => {
            // ThreadId has no stable numeric accessor; its Debug form is `ThreadId(7)`.
            let thread = format!("{:?}", std::thread::current().id());
            let number: String = thread.chars().filter(char::is_ascii_digit).collect();
            format!("{uuid}:thread-{number}")
        }
    }
}

/// A random fraction in [0, 1), from the OS randomness uuid already draws on (no `rand`).
/// The low 53 bits of a v4 uuid are all random (its version and variant bits are higher up).
pub(crate) fn random_fraction() -> f64 {
    const BITS: u32 = 53;
    let random = uuid::Uuid::new_v4().as_u128() & ((1u128 << BITS) - 1);
    random as f64 / (1u64 << BITS) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_id_is_the_prefix_and_the_counter_in_hex() {
        let prefix = *b"0123456789abcdef0123456789abcdef";
        for n in [
            0,
            1,
            9,
            10,
            15,
            16,
            255,
            256,
            0xabc_def,
            u64::MAX >> 4,
            u64::MAX,
        ] {
            let id = id_of(&prefix, n);
            let expected = format!("0123456789abcdef0123456789abcdef-{n:x}");
            assert_eq!(id.as_bytes(), expected.as_bytes());
            let mut cmd = redis::cmd("X");
            cmd.arg(id);
            assert_eq!(
                cmd.get_packed_command(),
                redis::cmd("X").arg(&expected).get_packed_command()
            );
        }
    }

    #[test]
    fn request_ids_differ() {
        let (a, b) = (request_id(), request_id());
        assert_ne!(a.as_bytes(), b.as_bytes());
    }
}
