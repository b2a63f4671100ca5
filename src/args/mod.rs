//! argv to typed requests. Pure: works on byte slices, so it is tested without Redis.

use crate::error::{Error, Result};
use crate::kinds::{Access, MODE_FIELD, RESERVED_PREFIX};
use crate::lifetime::retries::MAX_ID_LEN;

/// A writer's hold count is kept under `<owner>:write` (Redisson's read-write layout): owner ids
/// may not end so.
const WRITE_SUFFIX: &[u8] = b":write";

/// Waits, hold caps and lock delays are capped at one year: anything longer is a unit mistake.
/// Leases are not: they take what `SET ... PX` takes (`lease_within`).
pub const MAX_MS: i64 = 365 * 24 * 3600 * 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// `WAIT 0`: until granted, the client disconnects or is unblocked.
    Forever,
    Ms(i64),
}

/// Every option an RLOCK command may take; each command accepts a subset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options<'a> {
    pub lease_ms: Option<i64>,
    pub wait: Option<Wait>,
    /// `WATCHDOG`: the server renews the holding while this connection lives.
    pub watchdog: bool,
    /// `ID request-id`: a retry of the same call answers as the first did.
    pub id: Option<&'a [u8]>,
    pub max_hold_ms: Option<i64>,
    /// `LOCKDELAY ms` (RLOCK): after a lease end, nobody gets the lock for this long.
    pub lock_delay_ms: Option<i64>,
    /// `TOKEN t` (FORCERELEASE): only the holding with this token.
    pub token: Option<i64>,
    /// `PERMITS n` (semaphores): how many permits.
    pub permits: Option<i64>,
    /// `NOTIFY [client-id]`: wait as a queue entry, told by a message (docs/notify.md).
    pub notify: Option<Notify>,
    /// `EACH` (RSEM.ACQUIRE): the permits as holdings of one permit each, `<owner>:<i>`.
    pub each: bool,
}

/// Which connection a `NOTIFY` waiter's messages go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notify {
    /// The calling connection.
    Caller,
    /// Another connection of this server (a RESP2 client's subscriber).
    Client(u64),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Opt {
    Px,
    Wait,
    Watchdog,
    Id,
    MaxHold,
    LockDelay,
    Token,
    Permits,
    Notify,
    Each,
}

const OPTIONS: [(&str, Opt); 10] = [
    ("PX", Opt::Px),
    ("WAIT", Opt::Wait),
    ("WATCHDOG", Opt::Watchdog),
    ("ID", Opt::Id),
    ("MAXHOLD", Opt::MaxHold),
    ("LOCKDELAY", Opt::LockDelay),
    ("TOKEN", Opt::Token),
    ("PERMITS", Opt::Permits),
    ("NOTIFY", Opt::Notify),
    ("EACH", Opt::Each),
];

pub fn owner(owner: &[u8]) -> Result<&[u8]> {
    if owner.is_empty() {
        Err(Error::EmptyOwner)
    } else if owner.starts_with(RESERVED_PREFIX) {
        Err(Error::ReservedOwner)
    } else {
        Ok(owner)
    }
}

/// An owner of a read-write lock: also not `mode`, nor ending in `:write` (its hash fields).
pub fn rw_owner(owner: &[u8]) -> Result<&[u8]> {
    let owner = self::owner(owner)?;
    if owner == MODE_FIELD || owner.ends_with(WRITE_SUFFIX) {
        Err(Error::LayoutOwner)
    } else {
        Ok(owner)
    }
}

/// `READ|WRITE`
pub fn mode(word: &[u8]) -> Result<Access> {
    if word.eq_ignore_ascii_case(b"READ") {
        Ok(Access::Shared)
    } else if word.eq_ignore_ascii_case(b"WRITE") {
        Ok(Access::Exclusive)
    } else {
        Err(Error::BadMode)
    }
}

/// What every acquire takes: `[PX lease-ms] [WAIT timeout-ms [NOTIFY [client-id]]] [WATCHDOG]
/// [ID request-id] [MAXHOLD ms]`.
const ACQUIRE: [Opt; 6] = [
    Opt::Px,
    Opt::Wait,
    Opt::Notify,
    Opt::Watchdog,
    Opt::Id,
    Opt::MaxHold,
];

/// Every acquire's options and a family's own (checked at compile time to fill exactly `N`).
const fn acquire_and<const N: usize>(own: &[Opt]) -> [Opt; N] {
    assert!(
        N == ACQUIRE.len() + own.len(),
        "the options must fill the array exactly"
    );
    let mut all = [Opt::Px; N];
    let mut i = 0;
    while i < N {
        all[i] = if i < ACQUIRE.len() {
            ACQUIRE[i]
        } else {
            own[i - ACQUIRE.len()]
        };
        i += 1;
    }
    all
}

/// A semaphore's acquire also takes `[PERMITS n] [EACH]`.
const SEM_ACQUIRE: [Opt; 8] = acquire_and(&[Opt::Permits, Opt::Each]);

pub fn acquire_options<'a>(args: &[&'a [u8]]) -> Result<Options<'a>> {
    parse(args, &ACQUIRE)
}

/// The plain lock's acquire also takes `[LOCKDELAY ms]`.
const LOCK_ACQUIRE: [Opt; 7] = acquire_and(&[Opt::LockDelay]);

pub fn lock_acquire_options<'a>(args: &[&'a [u8]]) -> Result<Options<'a>> {
    parse(args, &LOCK_ACQUIRE)
}

/// `[PX lease-ms] [WATCHDOG]`
pub fn renew_options<'a>(args: &[&'a [u8]]) -> Result<Options<'a>> {
    parse(args, &[Opt::Px, Opt::Watchdog])
}

/// `[ID request-id]`
pub fn release_options<'a>(args: &[&'a [u8]]) -> Result<Options<'a>> {
    parse(args, &[Opt::Id])
}

/// `[TOKEN token]`
pub fn force_release_options<'a>(args: &[&'a [u8]]) -> Result<Options<'a>> {
    parse(args, &[Opt::Token])
}

/// Options in any order, each at most once, only those in `allowed`.
fn parse<'a>(args: &[&'a [u8]], allowed: &[Opt]) -> Result<Options<'a>> {
    let mut o = Options::default();
    let mut rest = args;
    while let [name, tail @ ..] = rest {
        let (option, opt) = option_named(name, allowed)
            .ok_or_else(|| Error::UnknownOption(String::from_utf8_lossy(name).into_owned()))?;
        if o.has(opt) {
            return Err(Error::RepeatedOption { option });
        }
        let value = tail.first().copied().ok_or(Error::MissingValue { option });
        let mut takes_value = true;
        match opt {
            Opt::Px => o.lease_ms = Some(millis_up_to(option, value?, 1, i64::MAX)?),
            Opt::MaxHold => o.max_hold_ms = Some(millis(option, value?, 1)?),
            Opt::LockDelay => o.lock_delay_ms = Some(millis(option, value?, 1)?),
            Opt::Wait => {
                o.wait = Some(match millis(option, value?, 0)? {
                    0 => Wait::Forever,
                    ms => Wait::Ms(ms),
                });
            }
            Opt::Watchdog => {
                o.watchdog = true;
                takes_value = false;
            }
            Opt::Each => {
                o.each = true;
                takes_value = false;
            }
            Opt::Id => {
                let id = value?;
                if id.is_empty() || id.len() > MAX_ID_LEN {
                    return Err(Error::BadRequestId);
                }
                o.id = Some(id);
            }
            Opt::Permits => o.permits = Some(at_least(option, value?, 1)?),
            Opt::Notify => {
                // The client id is optional: an option name is never a number.
                let client = value.ok().and_then(client_id);
                takes_value = client.is_some();
                o.notify = Some(client.map_or(Notify::Caller, Notify::Client));
            }
            Opt::Token => o.token = Some(integer(option, value?)?),
        }
        rest = if takes_value { &tail[1..] } else { tail };
    }
    if o.notify.is_some() && o.wait.is_none() {
        return Err(Error::NotifyWithoutWait);
    }
    Ok(o)
}

/// The option `name` names in any case, if `allowed` has it. Names are told apart by length
/// and first letter before they are compared (an acquire's options were a tenth of its own
/// work).
fn option_named(name: &[u8], allowed: &[Opt]) -> Option<(&'static str, Opt)> {
    let first = name.first()?.to_ascii_uppercase();
    OPTIONS
        .iter()
        .find(|(n, _)| {
            let n = n.as_bytes();
            n.len() == name.len() && n[0] == first && n.eq_ignore_ascii_case(name)
        })
        .filter(|(_, opt)| allowed.contains(opt))
        .copied()
}

impl Options<'_> {
    /// Whether `opt` was given already.
    fn has(&self, opt: Opt) -> bool {
        match opt {
            Opt::Px => self.lease_ms.is_some(),
            Opt::Wait => self.wait.is_some(),
            Opt::Watchdog => self.watchdog,
            Opt::Id => self.id.is_some(),
            Opt::MaxHold => self.max_hold_ms.is_some(),
            Opt::LockDelay => self.lock_delay_ms.is_some(),
            Opt::Token => self.token.is_some(),
            Opt::Permits => self.permits.is_some(),
            Opt::Notify => self.notify.is_some(),
            Opt::Each => self.each,
        }
    }
}

/// A connection id: a whole number, digits only.
pub fn client_id(value: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(value).ok()?;
    text.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| text.parse().ok())
        .flatten()
}

/// `[WAIT timeout-ms [NOTIFY [client-id]]]` (RLATCH.AWAIT)
pub fn await_options<'a>(args: &[&'a [u8]]) -> Result<Options<'a>> {
    parse(args, &[Opt::Wait, Opt::Notify])
}

/// `[ID request-id]` (RLATCH.COUNTDOWN)
pub fn countdown_options<'a>(args: &[&'a [u8]]) -> Result<Options<'a>> {
    parse(args, &[Opt::Id])
}

/// `[ID request-id]` (calls that count without an owner: `ADDPERMITS`, `SETPERMITS`, `DRAIN`,
/// `RLATCH.SET`)
pub fn request_id_options<'a>(args: &[&'a [u8]]) -> Result<Options<'a>> {
    parse(args, &[Opt::Id])
}

/// `[PERMITS n]` and every acquire option.
pub fn sem_acquire_options<'a>(args: &[&'a [u8]]) -> Result<Options<'a>> {
    parse(args, &SEM_ACQUIRE)
}

/// `[PERMITS n] [WAIT timeout-ms [NOTIFY [client-id]]] [ID request-id]` (RCSEM.ACQUIRE: no
/// lease, no watchdog, nothing held to cap)
pub fn counting_acquire_options<'a>(args: &[&'a [u8]]) -> Result<Options<'a>> {
    parse(args, &[Opt::Permits, Opt::Wait, Opt::Notify, Opt::Id])
}

/// `[PERMITS n] [ID request-id]`
pub fn sem_release_options<'a>(args: &[&'a [u8]]) -> Result<Options<'a>> {
    parse(args, &[Opt::Permits, Opt::Id])
}

/// A whole number of at least `min` (a count, a number of permits).
pub fn at_least(what: &'static str, value: &[u8], min: i64) -> Result<i64> {
    let n = std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or(Error::TooSmall { what, min })?;
    if n < min {
        return Err(Error::TooSmall { what, min });
    }
    Ok(n)
}

/// How many keys one request may name at most.
pub const MAX_KEYS: i64 = 1000;

/// `numkeys key [key ...] owner ...`: how many keys, given how many arguments follow numkeys
/// (the keys and at least an owner).
pub fn numkeys(value: &[u8], following: usize) -> Result<usize> {
    let n = integer("numkeys", value)?;
    if !(1..=MAX_KEYS).contains(&n) {
        return Err(Error::CountOutOfRange {
            option: "numkeys",
            min: 1,
            max: MAX_KEYS,
        });
    }
    match n as usize {
        n if n < following => Ok(n),
        _ => Err(Error::WrongArity),
    }
}

/// Refuses a list of keys that names one twice.
pub fn distinct(keys: &[&[u8]]) -> Result<()> {
    let mut seen = std::collections::HashSet::with_capacity(keys.len());
    match keys.iter().all(|k| seen.insert(*k)) {
        true => Ok(()),
        false => Err(Error::RepeatedKey),
    }
}

pub fn integer(option: &'static str, value: &[u8]) -> Result<i64> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or(Error::NotAnInteger { option })
}

/// An option's value in milliseconds, from `min` to `MAX_MS`.
fn millis(option: &'static str, value: &[u8], min: i64) -> Result<i64> {
    millis_up_to(option, value, min, MAX_MS)
}

fn millis_up_to(option: &'static str, value: &[u8], min: i64, max: i64) -> Result<i64> {
    let ms = integer(option, value)?;
    if !(min..=max).contains(&ms) {
        return Err(Error::OutOfRange { option, min, max });
    }
    Ok(ms)
}

/// A lease of `lease_ms` asked for at `now_ms`, as `SET ... PX` takes it: its end, `now + ms`,
/// must fit a 64-bit integer (Redis refuses the same with "invalid expire time"). Redlock and
/// `SET PX` users hold for years; a year's cap here refused them with nothing gained.
pub fn lease_within(lease_ms: i64, now_ms: i64) -> Result<i64> {
    let max = i64::MAX - now_ms.max(0);
    if !(1..=max).contains(&lease_ms) {
        return Err(Error::OutOfRange {
            option: "PX",
            min: 1,
            max,
        });
    }
    Ok(lease_ms)
}

#[cfg(test)]
mod tests;
