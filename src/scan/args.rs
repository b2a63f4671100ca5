//! `RLOCK.SCAN`'s arguments to a typed request. Pure, like `args`: tested without Redis.

use crate::args::MAX_MS;
use crate::error::{Error, Result};

/// `COUNT` when not given: SCAN's own default.
pub const DEFAULT_COUNT: i64 = 10;
pub const MAX_COUNT: i64 = 100_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan<'a> {
    pub cursor: u64,
    /// `MATCH pattern`, passed through to SCAN.
    pub pattern: Option<&'a [u8]>,
    /// `COUNT n`, passed through to SCAN: how many keys it looks at, not how many locks come back.
    pub count: i64,
    /// `MINHELD ms`: only locks held at least this long (0: all).
    pub min_held_ms: i64,
}

#[derive(Clone, Copy)]
enum Opt {
    Match,
    Count,
    MinHeld,
}

const OPTIONS: [(&str, Opt); 3] = [
    ("MATCH", Opt::Match),
    ("COUNT", Opt::Count),
    ("MINHELD", Opt::MinHeld),
];

/// `cursor [MATCH pattern] [COUNT n] [MINHELD ms]`: argv after the command name.
pub fn scan<'a>(args: &[&'a [u8]]) -> Result<Scan<'a>> {
    let [cursor, options @ ..] = args else {
        return Err(Error::WrongArity);
    };
    let mut s = Scan {
        cursor: number(cursor).ok_or(Error::InvalidCursor)?,
        pattern: None,
        count: DEFAULT_COUNT,
        min_held_ms: 0,
    };
    let mut seen = [false; OPTIONS.len()];
    let mut rest = options;
    while let [name, tail @ ..] = rest {
        let (option, opt) = OPTIONS
            .into_iter()
            .find(|(n, _)| name.eq_ignore_ascii_case(n.as_bytes()))
            .ok_or_else(|| Error::UnknownOption(String::from_utf8_lossy(name).into_owned()))?;
        if std::mem::replace(&mut seen[opt as usize], true) {
            return Err(Error::RepeatedOption { option });
        }
        let [value, tail @ ..] = tail else {
            return Err(Error::MissingValue { option });
        };
        match opt {
            Opt::Match => s.pattern = Some(value),
            Opt::Count => {
                let range = |option, min, max| Error::CountOutOfRange { option, min, max };
                s.count = in_range(option, value, 1, MAX_COUNT, range)?;
            }
            Opt::MinHeld => {
                let range = |option, min, max| Error::OutOfRange { option, min, max };
                s.min_held_ms = in_range(option, value, 0, MAX_MS, range)?;
            }
        }
        rest = tail;
    }
    Ok(s)
}

/// `value` as an integer from `min` to `max`; `range` words the error for one outside.
fn in_range(
    option: &'static str,
    value: &[u8],
    min: i64,
    max: i64,
    range: fn(&'static str, i64, i64) -> Error,
) -> Result<i64> {
    let n = number(value).ok_or(Error::NotAnInteger { option })?;
    if (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(range(option, min, max))
    }
}

fn number<T: std::str::FromStr>(value: &[u8]) -> Option<T> {
    std::str::from_utf8(value).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Vec<&[u8]> {
        s.split_whitespace().map(str::as_bytes).collect()
    }

    #[test]
    fn scan_arguments_follow_the_table() {
        let plain = |cursor| Scan {
            cursor,
            pattern: None,
            count: DEFAULT_COUNT,
            min_held_ms: 0,
        };
        let ok = [
            ("0", plain(0)),
            ("18446744073709551615", plain(u64::MAX)),
            (
                "7 match lock:* count 1000 minheld 5000",
                Scan {
                    pattern: Some(b"lock:*"),
                    count: 1000,
                    min_held_ms: 5000,
                    ..plain(7)
                },
            ),
            (
                "0 MINHELD 0 COUNT 1 MATCH *",
                Scan {
                    pattern: Some(b"*"),
                    count: 1,
                    ..plain(0)
                },
            ),
            (
                "0 COUNT 100000",
                Scan {
                    count: MAX_COUNT,
                    ..plain(0)
                },
            ),
        ];
        for (input, expected) in ok {
            assert_eq!(scan(&split(input)), Ok(expected), "{input}");
        }
        let count_range = Error::CountOutOfRange {
            option: "COUNT",
            min: 1,
            max: MAX_COUNT,
        };
        let held_range = Error::OutOfRange {
            option: "MINHELD",
            min: 0,
            max: MAX_MS,
        };
        let bad = [
            ("", Error::WrongArity),
            ("-1", Error::InvalidCursor),
            ("abc", Error::InvalidCursor),
            ("1.5", Error::InvalidCursor),
            ("18446744073709551616", Error::InvalidCursor),
            ("0 COUNT", Error::MissingValue { option: "COUNT" }),
            ("0 MATCH", Error::MissingValue { option: "MATCH" }),
            ("0 MINHELD", Error::MissingValue { option: "MINHELD" }),
            ("0 COUNT x", Error::NotAnInteger { option: "COUNT" }),
            ("0 MINHELD 1.5", Error::NotAnInteger { option: "MINHELD" }),
            ("0 COUNT 0", count_range.clone()),
            ("0 COUNT 100001", count_range.clone()),
            ("0 COUNT -5", count_range),
            ("0 MINHELD -1", held_range.clone()),
            ("0 MINHELD 99999999999999", held_range),
            (
                "0 COUNT 5 count 6",
                Error::RepeatedOption { option: "COUNT" },
            ),
            (
                "0 MATCH a MATCH b",
                Error::RepeatedOption { option: "MATCH" },
            ),
            (
                "0 MINHELD 1 MINHELD",
                Error::RepeatedOption { option: "MINHELD" },
            ),
            ("0 TYPE hash", Error::UnknownOption("TYPE".into())),
            ("0 PX 5", Error::UnknownOption("PX".into())),
        ];
        for (input, expected) in bad {
            assert_eq!(scan(&split(input)), Err(expected), "{input}");
        }
    }

    #[test]
    fn a_pattern_is_taken_as_given() {
        let args: [&[u8]; 3] = [b"0", b"MATCH", b"a b\0*"];
        assert_eq!(scan(&args).map(|s| s.pattern), Ok(Some(&b"a b\0*"[..])));
        let empty: [&[u8]; 3] = [b"0", b"match", b""];
        assert_eq!(scan(&empty).map(|s| s.pattern), Ok(Some(&b""[..])));
    }
}
