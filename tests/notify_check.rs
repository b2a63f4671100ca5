//! The check of a `NOTIFY` connection (docs/notify.md): made once per connection and
//! remembered (issue 46), it must refuse exactly as before whenever the connection may have
//! stopped listening since: after `UNSUBSCRIBE` (also one queued in `MULTI`), `RESET`, its
//! close, or the close of the other connection that was its channel's subscriber.

mod common;
use common::{Conn, Server, Value};

/// A RESP3 connection subscribed to its own channel: (connection, id, channel).
fn listener(server: &Server) -> (Conn, i64, String) {
    let mut c = server.conn();
    c.q("HELLO 3");
    let id = c.q("CLIENT ID").int();
    let channel = c.q("RLOCK.CHANNEL").text();
    c.cmd(&["SUBSCRIBE", &channel]);
    (c, id, channel)
}

/// One acquire of `key` with `NOTIFY id` from `c`: the token, released again at once; or the
/// error, with the key checked untouched.
fn acquire(c: &mut Conn, key: &str, id: i64) -> Result<i64, String> {
    let reply = c.cmd(&[
        "RLOCK.ACQUIRE",
        key,
        "o",
        "WAIT",
        "0",
        "NOTIFY",
        &id.to_string(),
    ]);
    if let Value::Error(e) = reply {
        assert_eq!(
            c.cmd(&["EXISTS", key]).int(),
            0,
            "a refused acquire changed {key}"
        );
        return Err(e);
    }
    let token = reply.int();
    assert_eq!(c.cmd(&["RLOCK.RELEASE", key, "o"]).int(), 0);
    Ok(token)
}

/// The refusal, word for word as before the check was remembered.
fn refusal(id: i64, channel: &str) -> Result<i64, String> {
    Err(format!(
        "ERR NOTIFY: connection {id} is not subscribed to {channel}"
    ))
}

/// Calls of `PUBSUB NUMSUB` so far (the module's check makes them through RedisModule_Call,
/// which Redis counts in `INFO commandstats`).
fn numsub_calls(c: &mut Conn) -> i64 {
    let stats = c.q("INFO commandstats").text();
    stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_pubsub|numsub:calls="))
        .map_or(0, |rest| {
            rest.split(',').next().unwrap_or("").parse().expect("calls")
        })
}

#[test]
fn a_repeated_acquire_does_not_ask_the_server_again() {
    let server = Server::start();
    let (mut a, id, channel) = listener(&server);
    let mut b = server.conn();
    assert!(acquire(&mut a, "k", id).is_ok());
    b.q("CONFIG RESETSTAT");
    for _ in 0..10 {
        assert!(acquire(&mut a, "k", id).is_ok());
        assert!(acquire(&mut b, "k", id).is_ok());
    }
    assert_eq!(numsub_calls(&mut b), 0, "the check was made again");
    // Forgotten after an UNSUBSCRIBE: checked once more, then remembered again.
    a.cmd(&["UNSUBSCRIBE", &channel]);
    a.cmd(&["SUBSCRIBE", &channel]);
    for _ in 0..3 {
        assert!(acquire(&mut b, "k", id).is_ok());
    }
    assert_eq!(numsub_calls(&mut b), 1);
}

#[test]
fn a_connection_that_stopped_listening_is_refused_at_once() {
    let server = Server::start();
    let mut b = server.conn();

    // UNSUBSCRIBE, by the connection itself (RESP3) and for another's NOTIFY.
    let (mut a, id, channel) = listener(&server);
    assert!(acquire(&mut a, "k", id).is_ok());
    assert!(acquire(&mut b, "k", id).is_ok());
    a.cmd(&["UNSUBSCRIBE", &channel]);
    assert_eq!(acquire(&mut a, "k", id), refusal(id, &channel));
    assert_eq!(acquire(&mut b, "k", id), refusal(id, &channel));
    a.cmd(&["SUBSCRIBE", &channel]);
    assert!(acquire(&mut b, "k", id).is_ok(), "subscribed again");

    // A PUNSUBSCRIBE leaves the channel subscribed.
    a.q("PUNSUBSCRIBE");
    assert!(acquire(&mut b, "k", id).is_ok());

    // RESET.
    a.q("RESET");
    assert_eq!(acquire(&mut b, "k", id), refusal(id, &channel));

    // An UNSUBSCRIBE queued in MULTI, while another connection's check remembers it anew.
    let (mut a, id, channel) = listener(&server);
    assert!(acquire(&mut b, "k", id).is_ok());
    a.q("MULTI");
    a.cmd(&["UNSUBSCRIBE", &channel]);
    assert!(
        acquire(&mut b, "k", id).is_ok(),
        "still subscribed until EXEC"
    );
    a.q("EXEC");
    assert_eq!(acquire(&mut b, "k", id), refusal(id, &channel));

    // An acquire in the same EXEC before the UNSUBSCRIBE.
    let (mut a, id, channel) = listener(&server);
    a.q("MULTI");
    a.cmd(&["RLOCK.ACQUIRE", "m", "o", "WAIT", "0", "NOTIFY"]);
    a.cmd(&["RLOCK.RELEASE", "m", "o"]);
    a.cmd(&["UNSUBSCRIBE", &channel]);
    let replies = a.q("EXEC").items();
    assert!(
        matches!(replies[0], Value::Int(_)),
        "granted in EXEC: {replies:?}"
    );
    assert_eq!(acquire(&mut b, "k", id), refusal(id, &channel));

    // The connection closed.
    let (mut a, id, channel) = listener(&server);
    assert!(acquire(&mut a, "k", id).is_ok());
    b.cmd(&["CLIENT", "KILL", "ID", &id.to_string()]);
    assert_eq!(acquire(&mut b, "k", id), refusal(id, &channel));
}

/// The check counts any subscriber of the channel (`PUBSUB NUMSUB`): when that subscriber is
/// another connection and closes, the connection named is no longer listening.
#[test]
fn the_close_of_the_channels_other_subscriber_is_seen() {
    let server = Server::start();
    let mut b = server.conn();
    let mut a = server.conn();
    let id = a.q("CLIENT ID").int();
    let channel = a.q("RLOCK.CHANNEL").text();
    a.cmd(&["SUBSCRIBE", "elsewhere"]);
    let mut other = server.conn();
    let other_id = other.q("CLIENT ID").int();
    other.cmd(&["SUBSCRIBE", &channel]);
    assert!(acquire(&mut b, "k", id).is_ok());
    b.cmd(&["CLIENT", "KILL", "ID", &other_id.to_string()]);
    assert_eq!(acquire(&mut b, "k", id), refusal(id, &channel));
}
