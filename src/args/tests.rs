//! The option parser's table of cases.

use super::*;

fn split(s: &str) -> Vec<&[u8]> {
    s.split_whitespace().map(str::as_bytes).collect()
}

#[test]
fn acquire_options_follow_the_table() {
    let ok = [
        ("", Options::default()),
        (
            "PX 100",
            Options {
                lease_ms: Some(100),
                ..Options::default()
            },
        ),
        (
            "wait 0",
            Options {
                wait: Some(Wait::Forever),
                ..Options::default()
            },
        ),
        (
            "WAIT 5 px 7",
            Options {
                lease_ms: Some(7),
                wait: Some(Wait::Ms(5)),
                ..Options::default()
            },
        ),
        (
            "watchdog ID req-1 maxhold 60000",
            Options {
                watchdog: true,
                id: Some(b"req-1"),
                max_hold_ms: Some(60_000),
                ..Options::default()
            },
        ),
        (
            "WAIT 0 NOTIFY WATCHDOG",
            Options {
                wait: Some(Wait::Forever),
                notify: Some(Notify::Caller),
                watchdog: true,
                ..Options::default()
            },
        ),
        (
            "notify 42 wait 10",
            Options {
                wait: Some(Wait::Ms(10)),
                notify: Some(Notify::Client(42)),
                ..Options::default()
            },
        ),
    ];
    for (input, expected) in ok {
        assert_eq!(acquire_options(&split(input)), Ok(expected), "{input}");
    }
    assert_eq!(
        acquire_options(&split("NOTIFY 42")),
        Err(Error::NotifyWithoutWait)
    );
    assert_eq!(
        acquire_options(&split("WAIT 0 NOTIFY -1")),
        Err(Error::UnknownOption("-1".into())),
        "a client id is a whole number"
    );
    let range = |option, min| Error::OutOfRange {
        option,
        min,
        max: if option == "PX" { i64::MAX } else { MAX_MS },
    };
    let bad = [
        ("PX", Error::MissingValue { option: "PX" }),
        ("PX abc", Error::NotAnInteger { option: "PX" }),
        ("PX 1.5", Error::NotAnInteger { option: "PX" }),
        ("PX 0", range("PX", 1)),
        ("PX -5", range("PX", 1)),
        ("WAIT 99999999999999", range("WAIT", 0)),
        (
            "PX 99999999999999999999999",
            Error::NotAnInteger { option: "PX" },
        ),
        ("WAIT -1", range("WAIT", 0)),
        ("WAIT x", Error::NotAnInteger { option: "WAIT" }),
        ("PX 1 PX 2", Error::RepeatedOption { option: "PX" }),
        ("WAIT 0 WAIT 0", Error::RepeatedOption { option: "WAIT" }),
        ("NX", Error::UnknownOption("NX".into())),
        ("TOKEN 5", Error::UnknownOption("TOKEN".into())),
        (
            "WATCHDOG WATCHDOG",
            Error::RepeatedOption { option: "WATCHDOG" },
        ),
        ("ID", Error::MissingValue { option: "ID" }),
        ("ID a ID b", Error::RepeatedOption { option: "ID" }),
        ("MAXHOLD 0", range("MAXHOLD", 1)),
        ("MAXHOLD", Error::MissingValue { option: "MAXHOLD" }),
    ];
    for (input, expected) in bad {
        assert_eq!(acquire_options(&split(input)), Err(expected), "{input}");
    }
    let long_id = format!("ID {}", "x".repeat(65));
    assert_eq!(acquire_options(&split(&long_id)), Err(Error::BadRequestId));
}

#[test]
fn renew_release_and_force_release_take_their_own_options() {
    assert_eq!(renew_options(&split("")), Ok(Options::default()));
    assert_eq!(
        renew_options(&split("px 9")).map(|o| o.lease_ms),
        Ok(Some(9))
    );
    assert_eq!(
        renew_options(&split("WATCHDOG")).map(|o| o.watchdog),
        Ok(true)
    );
    assert_eq!(
        release_options(&split("ID r")).map(|o| o.id),
        Ok(Some(&b"r"[..]))
    );
    assert_eq!(
        release_options(&split("PX 5")),
        Err(Error::UnknownOption("PX".into()))
    );
    assert_eq!(
        force_release_options(&split("token 42")).map(|o| o.token),
        Ok(Some(42))
    );
    assert_eq!(
        force_release_options(&split("TOKEN x")),
        Err(Error::NotAnInteger { option: "TOKEN" })
    );
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
    assert_eq!(owner(b"rlock:ids"), Err(Error::ReservedOwner));
    assert_eq!(owner(b"rlockx"), Ok(&b"rlockx"[..]));
}

#[test]
fn read_write_lock_input_is_checked() {
    assert_eq!(rw_owner(b"u:1"), Ok(&b"u:1"[..]));
    assert_eq!(rw_owner(b"mode"), Err(Error::LayoutOwner));
    assert_eq!(rw_owner(b"u:1:write"), Err(Error::LayoutOwner));
    assert_eq!(rw_owner(b"rlock:x"), Err(Error::ReservedOwner));
    assert_eq!(mode(b"read"), Ok(Access::Shared));
    assert_eq!(mode(b"WRITE"), Ok(Access::Exclusive));
    assert_eq!(mode(b"both"), Err(Error::BadMode));
}

#[test]
fn leases_take_what_set_px_takes() {
    let now = 1_795_000_000_000;
    let refused = |max| {
        Err(Error::OutOfRange {
            option: "PX",
            min: 1,
            max,
        })
    };
    let cases = [
        // (lease ms, now, outcome)
        (1, now, Ok(1)),
        (MAX_MS + 1, now, Ok(MAX_MS + 1)),
        (i64::MAX - now, now, Ok(i64::MAX - now)),
        (i64::MAX - now + 1, now, refused(i64::MAX - now)),
        (i64::MAX, now, refused(i64::MAX - now)),
        (0, now, refused(i64::MAX - now)),
        (i64::MAX, 0, Ok(i64::MAX)),
    ];
    for (lease_ms, now_ms, expected) in cases {
        assert_eq!(
            lease_within(lease_ms, now_ms),
            expected,
            "{lease_ms} at {now_ms}"
        );
    }
    let years = acquire_options(&split("PX 99999999999999")).map(|o| o.lease_ms);
    assert_eq!(
        years,
        Ok(Some(99_999_999_999_999)),
        "~3,000 years, as SET PX"
    );
}
