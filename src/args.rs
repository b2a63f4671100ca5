//! argv to typed requests. Pure: works on byte slices, so it is tested without Redis.

use crate::error::{Error, Result};
use crate::lock::TOKEN_FIELD;

/// Leases and waits are capped at one year: anything longer is a unit mistake.
pub const MAX_MS: i64 = 365 * 24 * 3600 * 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// `WAIT 0`: until granted, the client disconnects or is unblocked.
    Forever,
    Ms(i64),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AcquireOptions {
    pub lease_ms: Option<i64>,
    pub wait: Option<Wait>,
}

pub fn owner(owner: &[u8]) -> Result<&[u8]> {
    if owner.is_empty() {
        Err(Error::EmptyOwner)
    } else if owner == TOKEN_FIELD {
        Err(Error::ReservedOwner)
    } else {
        Ok(owner)
    }
}

/// `[PX lease-ms] [WAIT timeout-ms]`, in any order, each at most once.
pub fn acquire_options(args: &[&[u8]]) -> Result<AcquireOptions> {
    let mut options = AcquireOptions::default();
    let mut rest = args;
    while let [name, tail @ ..] = rest {
        if name.eq_ignore_ascii_case(b"PX") {
            options.lease_ms = Some(once("PX", options.lease_ms, tail, 1)?);
        } else if name.eq_ignore_ascii_case(b"WAIT") {
            let previous = options.wait.map(|_| 0);
            options.wait = Some(match once("WAIT", previous, tail, 0)? {
                0 => Wait::Forever,
                ms => Wait::Ms(ms),
            });
        } else {
            return Err(Error::UnknownOption(
                String::from_utf8_lossy(name).into_owned(),
            ));
        }
        rest = &tail[1..];
    }
    Ok(options)
}

/// `[PX lease-ms]`.
pub fn renew_options(args: &[&[u8]]) -> Result<Option<i64>> {
    let mut lease = None;
    let mut rest = args;
    while let [name, tail @ ..] = rest {
        if !name.eq_ignore_ascii_case(b"PX") {
            return Err(Error::UnknownOption(
                String::from_utf8_lossy(name).into_owned(),
            ));
        }
        lease = Some(once("PX", lease, tail, 1)?);
        rest = &tail[1..];
    }
    Ok(lease)
}

/// The value after an option that may appear once, in milliseconds from `min` to `MAX_MS`.
fn once(option: &'static str, previous: Option<i64>, tail: &[&[u8]], min: i64) -> Result<i64> {
    if previous.is_some() {
        return Err(Error::RepeatedOption { option });
    }
    let value = tail.first().ok_or(Error::MissingValue { option })?;
    let ms = std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or(Error::NotAnInteger { option })?;
    if !(min..=MAX_MS).contains(&ms) {
        return Err(Error::OutOfRange {
            option,
            min,
            max: MAX_MS,
        });
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Vec<&[u8]> {
        s.split_whitespace().map(str::as_bytes).collect()
    }

    #[test]
    fn acquire_options_follow_the_table() {
        let ok = [
            ("", AcquireOptions::default()),
            (
                "PX 100",
                AcquireOptions {
                    lease_ms: Some(100),
                    wait: None,
                },
            ),
            (
                "wait 0",
                AcquireOptions {
                    lease_ms: None,
                    wait: Some(Wait::Forever),
                },
            ),
            (
                "WAIT 5 px 7",
                AcquireOptions {
                    lease_ms: Some(7),
                    wait: Some(Wait::Ms(5)),
                },
            ),
        ];
        for (input, expected) in ok {
            assert_eq!(acquire_options(&split(input)), Ok(expected), "{input}");
        }
        let range = |option, min| Error::OutOfRange {
            option,
            min,
            max: MAX_MS,
        };
        let bad = [
            ("PX", Error::MissingValue { option: "PX" }),
            ("PX abc", Error::NotAnInteger { option: "PX" }),
            ("PX 1.5", Error::NotAnInteger { option: "PX" }),
            ("PX 0", range("PX", 1)),
            ("PX -5", range("PX", 1)),
            ("PX 99999999999999", range("PX", 1)),
            (
                "PX 99999999999999999999999",
                Error::NotAnInteger { option: "PX" },
            ),
            ("WAIT -1", range("WAIT", 0)),
            ("WAIT x", Error::NotAnInteger { option: "WAIT" }),
            ("PX 1 PX 2", Error::RepeatedOption { option: "PX" }),
            ("WAIT 0 WAIT 0", Error::RepeatedOption { option: "WAIT" }),
            ("NX", Error::UnknownOption("NX".into())),
        ];
        for (input, expected) in bad {
            assert_eq!(acquire_options(&split(input)), Err(expected), "{input}");
        }
    }

    #[test]
    fn renew_takes_only_px() {
        assert_eq!(renew_options(&split("")), Ok(None));
        assert_eq!(renew_options(&split("px 9")), Ok(Some(9)));
        assert_eq!(
            renew_options(&split("WAIT 9")),
            Err(Error::UnknownOption("WAIT".into()))
        );
        assert_eq!(
            renew_options(&split("PX 1 PX 1")),
            Err(Error::RepeatedOption { option: "PX" })
        );
    }

    #[test]
    fn owners_must_be_non_empty_and_not_reserved() {
        assert_eq!(owner(b"a:1"), Ok(&b"a:1"[..]));
        assert_eq!(owner(b""), Err(Error::EmptyOwner));
        assert_eq!(owner(b"rlock:token"), Err(Error::ReservedOwner));
    }
}
