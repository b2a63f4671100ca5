//! Module configuration: `rlock.default-lease-ms` and `rlock.redisson-publish`, settable as
//! module arguments, in redis.conf, on the command line and with CONFIG SET.

use crate::args::MAX_MS;
use redis_module::configuration::{
    register_bool_configuration, register_i64_configuration, ConfigurationFlags,
};
use redis_module::{Context, RedisString};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

static DEFAULT_LEASE_MS: AtomicI64 = AtomicI64::new(30_000);
static REDISSON_PUBLISH: AtomicBool = AtomicBool::new(true);

pub fn default_lease_ms() -> i64 {
    DEFAULT_LEASE_MS.load(Ordering::Relaxed)
}

pub fn redisson_publish() -> bool {
    REDISSON_PUBLISH.load(Ordering::Relaxed)
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct LoadArgs {
    pub default_lease_ms: Option<i64>,
    pub redisson_publish: Option<bool>,
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
        match name.trim_start_matches("rlock.") {
            "default-lease-ms" => {
                let ms = value
                    .parse::<i64>()
                    .ok()
                    .filter(|ms| (1..=MAX_MS).contains(ms))
                    .ok_or_else(|| format!("default-lease-ms must be 1..{MAX_MS}, not {value}"))?;
                parsed.default_lease_ms = Some(ms);
            }
            "redisson-publish" => {
                parsed.redisson_publish = Some(match value.as_str() {
                    "yes" => true,
                    "no" => false,
                    _ => return Err(format!("redisson-publish must be yes or no, not {value}")),
                });
            }
            _ => return Err(format!("unknown module argument {name}")),
        }
    }
    Ok(parsed)
}

/// Registers the configs, with module arguments as their defaults, then applies redis.conf.
pub fn register(ctx: &Context, args: &[RedisString]) -> Result<(), String> {
    let raw: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    let load = parse_load_args(&raw)?;
    register_i64_configuration(
        ctx,
        "default-lease-ms",
        &DEFAULT_LEASE_MS,
        load.default_lease_ms.unwrap_or(30_000),
        1,
        MAX_MS,
        ConfigurationFlags::DEFAULT,
        None,
    );
    register_bool_configuration(
        ctx,
        "redisson-publish",
        &REDISSON_PUBLISH,
        load.redisson_publish.unwrap_or(true),
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
        ];
        assert_eq!(
            parse_load_args(&args),
            Ok(LoadArgs {
                default_lease_ms: Some(500),
                redisson_publish: Some(false)
            })
        );
    }

    #[test]
    fn load_args_refuse_nonsense() {
        for bad in [
            vec![&b"default-lease-ms"[..]],
            vec![&b"default-lease-ms"[..], b"0"],
            vec![&b"redisson-publish"[..], b"maybe"],
            vec![&b"colour"[..], b"red"],
        ] {
            assert!(parse_load_args(&bad).is_err(), "{bad:?}");
        }
    }
}
