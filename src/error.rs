//! Every error rlock replies with, and its text, in one place.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    WrongArity,
    WrongType,
    NotAnInteger {
        option: &'static str,
    },
    OutOfRange {
        option: &'static str,
        min: i64,
        max: i64,
    },
    /// Like `OutOfRange`, for a count rather than milliseconds.
    CountOutOfRange {
        option: &'static str,
        min: i64,
        max: i64,
    },
    MissingValue {
        option: &'static str,
    },
    RepeatedOption {
        option: &'static str,
    },
    UnknownOption(String),
    EmptyOwner,
    ReservedOwner,
    BadRequestId,
    /// `RLOCK.SCAN`'s cursor is not an unsigned integer.
    InvalidCursor,
    /// `WATCHDOG` from a Lua script: there is no connection to bind to.
    WatchdogInScript,
    /// The hash at the key has a hold count that is not an integer: not a lock we understand.
    CorruptHolds,
    HoldsOverflow,
    /// In Redis Cluster, a read-write lock or semaphore whose side keys would land in another slot.
    SideKeysSlot,
    /// `RWLOCK.ACQUIRE ... WRITE` by an owner that holds read: it would wait for itself.
    Upgrade,
    /// An owner with `MAX_READ_HOLDS` read holds asked for one more.
    TooManyReadHolds {
        max: i64,
    },
    /// `READ` or `WRITE` expected.
    BadMode,
    /// An owner id that would collide with the read-write lock's layout.
    LayoutOwner,
    /// A hash with a `mode` field that is neither `read` nor `write`.
    CorruptMode,
    /// The string at a semaphore's or latch's key is not an integer.
    CorruptCounter,
    /// A latch count or a number of permits below its minimum.
    TooSmall {
        what: &'static str,
        min: i64,
    },
    /// Adding permits would take a semaphore's count past a 64-bit integer's range.
    PermitsOverflow,
    /// A semaphore holder released more permits than it holds.
    TooManyPermits {
        held: i64,
    },
    /// The server turned replica under a `NOTIFY` waiter (its `failed` message).
    TurnedReplica,
    /// `NOTIFY` without `WAIT`: there is no wait to be told about.
    NotifyWithoutWait,
    /// `NOTIFY` without a client id from a Lua script: a script has no connection to tell.
    NotifyInScript,
    /// `NOTIFY` names a connection that is gone or not subscribed to its grant channel.
    NotSubscribed {
        client: u64,
        channel: String,
    },
    /// `NOTIFY` names a connection of another user whose channel the caller may not publish to.
    NotifyNotPermitted {
        client: u64,
        channel: String,
    },
    /// `RLOCK.CANCEL` of an owner's waits by a user that may read the key but not write it.
    CancelNotPermitted,
    /// `RLOCK.GUARD`: the owner does not hold the lock with that token (any more).
    NotOwner,
    /// `RLOCK.GUARD`'s inner command is not a write, or may block.
    NotGuardable {
        command: String,
    },
    /// `RLOCK.GUARD`'s inner command was refused by `RedisModule_Call`: `why` is Redis's reason.
    GuardRefused {
        code: &'static str,
        why: &'static str,
    },
    /// Waiters of a key whose slot moved: `MOVED slot host:port` or `ASK slot host:port`.
    Redirect(String),
    /// A wait that would close a cycle of owners: the cycle, worded.
    Deadlock(String),
    /// A request for several keys names one twice.
    RepeatedKey,
    /// `RSEM.ACQUIRE ... EACH`: one of the owners it would grant (`<owner>:<i>`) holds already.
    EachHeld(String),
    /// `RSEM.RELEASEMANY ... ALL`: the first listed owner that holds nothing (or is repeated).
    NotHeld(String),
    BadReleaseMode,
    /// A blocked wait whose queue entry a retry of the same call (same owner, key(s) and
    /// request id) took over: the retry gets the answer.
    Retried,
    Internal,
}

pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::WrongArity => write!(f, "ERR wrong number of arguments"),
            Error::WrongType => {
                write!(
                    f,
                    "WRONGTYPE Operation against a key holding the wrong kind of value"
                )
            }
            Error::NotAnInteger { option } => write!(f, "ERR {option} must be an integer"),
            Error::OutOfRange { option, min, max } => {
                write!(
                    f,
                    "ERR {option} must be between {min} and {max} milliseconds"
                )
            }
            Error::CountOutOfRange { option, min, max } => {
                write!(f, "ERR {option} must be between {min} and {max}")
            }
            Error::MissingValue { option } => write!(f, "ERR {option} needs a value"),
            Error::RepeatedOption { option } => write!(f, "ERR {option} given more than once"),
            Error::UnknownOption(name) => write!(f, "ERR unknown option '{name}'"),
            Error::EmptyOwner => write!(f, "ERR owner must not be empty"),
            Error::ReservedOwner => {
                write!(f, "ERR owners starting with 'rlock:' are reserved by rlock")
            }
            Error::BadRequestId => write!(f, "ERR ID must be 1 to 64 bytes"),
            Error::InvalidCursor => write!(f, "ERR invalid cursor"),
            Error::WatchdogInScript => write!(
                f,
                "ERR WATCHDOG is not allowed in scripts: a script has no connection to bind to"
            ),
            Error::CorruptHolds => {
                write!(
                    f,
                    "ERR the hash at this key is not a lock: a hold count is not an integer"
                )
            }
            Error::HoldsOverflow => write!(f, "ERR hold count would overflow"),
            Error::SideKeysSlot => write!(
                f,
                "ERR in Redis Cluster this key's side keys would land in another slot (a brace without a hash tag): give the name a hash tag, e.g. {{name}}"
            ),
            Error::Upgrade => write!(
                f,
                "ERR this owner holds the read lock: release it before asking for the write lock (an upgrade would wait for itself)"
            ),
            Error::TooManyReadHolds { max } => write!(
                f,
                "ERR an owner may hold a read lock at most {max} times"
            ),
            Error::BadMode => write!(f, "ERR mode must be READ or WRITE"),
            Error::LayoutOwner => write!(
                f,
                "ERR owner 'mode' and owners ending in ':write' are reserved by the read-write lock layout"
            ),
            Error::CorruptMode => write!(
                f,
                "ERR the hash at this key is not a read-write lock: its mode is neither read nor write"
            ),
            Error::CorruptCounter => write!(
                f,
                "ERR the value at this key is not a semaphore or latch count (not an integer)"
            ),
            Error::TooSmall { what, min } => {
                write!(f, "ERR {what} must be an integer of at least {min}")
            }
            Error::PermitsOverflow => write!(
                f,
                "ERR the available permits would overflow a 64-bit integer: nothing was changed"
            ),
            Error::TooManyPermits { held } => {
                write!(f, "ERR this owner holds only {held} permits")
            }
            Error::TurnedReplica => write!(
                f,
                "READONLY this server turned replica: wait again on the new master"
            ),
            Error::NotifyWithoutWait => write!(f, "ERR NOTIFY needs WAIT timeout-ms"),
            Error::NotifyInScript => write!(
                f,
                "ERR NOTIFY in a script needs the client-id of the connection to tell"
            ),
            Error::NotSubscribed { client, channel } => write!(
                f,
                "ERR NOTIFY: connection {client} is not subscribed to {channel}"
            ),
            Error::NotifyNotPermitted { client, channel } => write!(
                f,
                "NOPERM NOTIFY: connection {client} is not this user's, and this user may not publish to {channel}"
            ),
            Error::CancelNotPermitted => write!(
                f,
                "NOPERM RLOCK.CANCEL of an owner's waits needs write access to the key (\"\" cancels this connection's own latch waits)"
            ),
            Error::NotOwner => write!(
                f,
                "NOTOWNER the owner does not hold the lock with this token: nothing was run"
            ),
            Error::NotGuardable { command } => write!(
                f,
                "ERR RLOCK.GUARD runs one write command that does not block; '{command}' is not one"
            ),
            Error::GuardRefused { code, why } => write!(f, "{code} {why}"),
            Error::Redirect(to) => write!(f, "{to}"),
            Error::Deadlock(cycle) => write!(f, "DEADLOCK this wait would close a cycle: {cycle}"),
            Error::RepeatedKey => write!(f, "ERR a key is named more than once"),
            Error::EachHeld(owner) => write!(
                f,
                "ERR EACH: {owner} holds permits already (no re-entry): nothing was changed"
            ),
            Error::NotHeld(owner) => write!(f, "ERR not held: {owner}"),
            Error::BadReleaseMode => write!(f, "ERR mode must be ALL or ANY"),
            Error::Retried => write!(f, "RETRIED this request was taken over by a retry"),
            Error::Internal => write!(f, "ERR rlock internal error (see the server log)"),
        }
    }
}

impl Error {
    /// The error's code, its first word (`ERR`, `WRONGTYPE`): what a `failed` message carries.
    pub fn code(&self) -> String {
        let text = self.to_string();
        text.split(' ').next().unwrap_or("ERR").to_string()
    }

    /// The reply text as a C string; error texts never contain NUL bytes except through a
    /// user-supplied option name, which is cut at the first NUL.
    pub fn to_cstring(&self) -> std::ffi::CString {
        let mut text = self.to_string().into_bytes();
        text.retain(|&b| b != 0 && b != b'\r' && b != b'\n');
        std::ffi::CString::new(text).unwrap_or_default()
    }
}
