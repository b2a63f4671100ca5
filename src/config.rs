//! Module configuration (`rlock.*`), settable as module arguments, in redis.conf, on the
//! command line and with CONFIG SET.

use crate::args::MAX_MS;
use redis_module::configuration::{
    register_bool_configuration, register_i64_configuration, ConfigurationFlags,
};
use redis_module::{Context, RedisString};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

static DEFAULT_LEASE_MS: AtomicI64 = AtomicI64::new(30_000);
static REDISSON_PUBLISH: AtomicBool = AtomicBool::new(true);
static DEADLOCK_DETECTION: AtomicBool = AtomicBool::new(true);
static WATCHDOG_IDLE_MS: AtomicI64 = AtomicI64::new(30_000);
static RETRY_WINDOW_MS: AtomicI64 = AtomicI64::new(60_000);
static MAX_HOLD_MS: AtomicI64 = AtomicI64::new(0);
static WATCHDOG_GRACE_MS: AtomicI64 = AtomicI64::new(0);
static LOCK_DELAY_MS: AtomicI64 = AtomicI64::new(0);

/// The millisecond settings: (name, value, default, min).
const MS_SETTINGS: [(&str, &AtomicI64, i64, i64); 6] = [
    ("default-lease-ms", &DEFAULT_LEASE_MS, 30_000, 1),
    ("watchdog-idle-ms", &WATCHDOG_IDLE_MS, 30_000, 0),
    ("retry-window-ms", &RETRY_WINDOW_MS, 60_000, 1),
    ("max-hold-ms", &MAX_HOLD_MS, 0, 0),
    ("watchdog-grace-ms", &WATCHDOG_GRACE_MS, 0, 0),
    ("lock-delay-ms", &LOCK_DELAY_MS, 0, 0),
];

pub fn default_lease_ms() -> i64 {
    DEFAULT_LEASE_MS.load(Ordering::Relaxed)
}

/// A watchdog lock whose connection sent nothing for this long is no longer renewed (0: no
/// bound).
pub fn watchdog_idle_ms() -> i64 {
    WATCHDOG_IDLE_MS.load(Ordering::Relaxed)
}

/// How long a call with a request id is remembered.
pub fn retry_window_ms() -> i64 {
    RETRY_WINDOW_MS.load(Ordering::Relaxed)
}

/// How long a watchdog holding outlives its connection, for its owner to re-bind it from a new
/// one (`RENEW ... WATCHDOG`); 0: it ends when the connection closes.
pub fn watchdog_grace_ms() -> Option<i64> {
    Some(WATCHDOG_GRACE_MS.load(Ordering::Relaxed)).filter(|&ms| ms > 0)
}

/// The lock-delay of RLOCK holdings whose acquire gave no `LOCKDELAY` (0: none).
pub fn lock_delay_ms() -> Option<i64> {
    Some(LOCK_DELAY_MS.load(Ordering::Relaxed)).filter(|&ms| ms > 0)
}

/// The hold cap for holdings whose acquire gave no `MAXHOLD` (0: none).
pub fn max_hold_ms() -> Option<i64> {
    Some(MAX_HOLD_MS.load(Ordering::Relaxed)).filter(|&ms| ms > 0)
}

/// Whether a wait that would close a cycle of owners is refused (`DEADLOCK`).
pub fn deadlock_detection() -> bool {
    DEADLOCK_DETECTION.load(Ordering::Relaxed)
}

pub fn redisson_publish() -> bool {
    REDISSON_PUBLISH.load(Ordering::Relaxed)
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct LoadArgs {
    /// Values for `MS_SETTINGS`, by name.
    pub ms: Vec<(&'static str, i64)>,
    pub redisson_publish: Option<bool>,
    pub deadlock_detection: Option<bool>,
}

/// Module arguments come in name/value pairs, with or without the `rlock.` prefix:
/// `loadmodule librlock.so default-lease-ms 10000 redisson-publish no`.
pub fn parse_load_args(args: &[&[u8]]) -> Result<LoadArgs, String> {
    let mut parsed = LoadArgs::default();
    for pair in args.chunks(2) {
        let name = String::from_utf8_lossy(pair[0]).to_ascii_lowercase();
        let value = pair
            .get(1)
            .map(|v| String::from_utf8_lossy(v).to_ascii_lowercase())
            .ok_or_else(|| format!("module argument {name} needs a value"))?;
        let name = name.trim_start_matches("rlock.");
        if let Some((setting, _, _, min)) = MS_SETTINGS.iter().find(|(n, ..)| *n == name) {
            let ms = value
                .parse::<i64>()
                .ok()
                .filter(|ms| (*min..=MAX_MS).contains(ms))
                .ok_or_else(|| format!("{setting} must be {min}..{MAX_MS}, not {value}"))?;
            parsed.ms.push((setting, ms));
            continue;
        }
        let yes_no = |setting: &str| match value.as_str() {
            "yes" => Ok(true),
            "no" => Ok(false),
            _ => Err(format!("{setting} must be yes or no, not {value}")),
        };
        match name {
            "redisson-publish" => parsed.redisson_publish = Some(yes_no(name)?),
            "deadlock-detection" => parsed.deadlock_detection = Some(yes_no(name)?),
            _ => return Err(format!("unknown module argument {name}")),
        }
    }
    Ok(parsed)
}

/// Registers the configs, with module arguments as their defaults, then applies redis.conf.
pub fn register(ctx: &Context, args: &[RedisString]) -> Result<(), String> {
    let raw: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    let load = parse_load_args(&raw)?;
    for (name, value, default, min) in MS_SETTINGS {
        let given = load
            .ms
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v);
        register_i64_configuration(
            ctx,
            name,
            value,
            given.unwrap_or(default),
            min,
            MAX_MS,
            ConfigurationFlags::DEFAULT,
            None,
        );
    }
    register_bool_configuration(
        ctx,
        "redisson-publish",
        &REDISSON_PUBLISH,
        load.redisson_publish.unwrap_or(true),
        ConfigurationFlags::DEFAULT,
        None,
    );
    register_bool_configuration(
        ctx,
        "deadlock-detection",
        &DEADLOCK_DETECTION,
        load.deadlock_detection.unwrap_or(true),
        ConfigurationFlags::DEFAULT,
        None,
    );
    // SAFETY: a read of the entry-point table, filled in before OnLoad runs.
    match unsafe { redis_module::raw::RedisModule_LoadConfigs } {
        // SAFETY: called once, from OnLoad, with the module's load context.
        Some(load_configs) => match unsafe { load_configs(ctx.ctx) } {
            crate::api::OK => Ok(()),
            _ => Err("redis.conf has an invalid rlock.* setting".into()),
        },
        None => Ok(()),
    }
}

/// Lock keys carry a TTL, so under a `volatile-*` policy (or `allkeys-*`) held locks are
/// evicted first: say so in the log at load time.
pub fn warn_unless_noeviction(ctx: &Context) {
    use redis_module::RedisValue;
    let policy = match ctx.call("CONFIG", &["GET", "maxmemory-policy"]) {
        Ok(RedisValue::Array(values)) => match values.get(1) {
            Some(RedisValue::SimpleString(s) | RedisValue::BulkString(s)) => Some(s.clone()),
            Some(RedisValue::BulkRedisString(s)) => Some(s.to_string_lossy()),
            _ => None,
        },
        _ => None,
    };
    if let Some(policy) = policy.filter(|p| !p.contains("noeviction")) {
        ctx.log_warning(&format!(
            "rlock: maxmemory-policy is {policy}, not noeviction: held locks (keys with a TTL) \
             may be evicted under memory pressure, which frees them for the next waiter"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_args_accept_both_spellings() {
        let args: Vec<&[u8]> = vec![
            b"rlock.default-lease-ms",
            b"500",
            b"REDISSON-PUBLISH",
            b"no",
            b"deadlock-detection",
            b"yes",
        ];
        assert_eq!(
            parse_load_args(&args),
            Ok(LoadArgs {
                ms: vec![("default-lease-ms", 500)],
                redisson_publish: Some(false),
                deadlock_detection: Some(true),
            })
        );
    }

    #[test]
    fn load_args_refuse_nonsense() {
        for bad in [
            vec![&b"default-lease-ms"[..]],
            vec![&b"default-lease-ms"[..], b"0"],
            vec![&b"redisson-publish"[..], b"maybe"],
            vec![&b"deadlock-detection"[..], b"sometimes"],
            vec![&b"colour"[..], b"red"],
            vec![&b"watchdog-idle-ms"[..], b"-1"],
            vec![&b"retry-window-ms"[..], b"0"],
        ] {
            assert!(parse_load_args(&bad).is_err(), "{bad:?}");
        }
    }
}
