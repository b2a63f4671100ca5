//! W11: what election and guarded writes cost. The server time of a fresh RLOCK.ACQUIRE with
//! keyspace events of the module class off and on (`notify-keyspace-events Kd`, nobody
//! subscribed: the event is built and published to no one), and of a guarded `SET`
//! (`RLOCK.GUARD`) against a plain `SET` and against the Lua script users write today to make
//! the same check. Five interleaved rounds.

use crate::common::{Conn, Server};
use crate::driver::{
    commandstats, encode, fresh_acquire_usec, no_options, pipelined, reset, strings, Impl, Rounds,
    Shas, Table, PIPELINE, ROUNDS,
};

const WORKLOAD: &str = "W11 election and guarded writes";
const LOCK: &str = "w11:lock";
const OWNER: &str = "owner-1";

/// The check a guarded write makes, as a Lua script over the lock hash: the owner holds it
/// with that token, then the write.
const SCRIPT: &str = "if redis.call('hexists', KEYS[1], ARGV[1]) == 1 \
    and redis.call('hget', KEYS[1], 'rlock:token') == ARGV[2] \
    then return redis.call('set', KEYS[2], ARGV[3]) \
    else return redis.error_reply('NOTOWNER') end";

pub fn run(server: &Server, shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    let mut rounds = Rounds::new("w11");
    for _ in 0..ROUNDS {
        for (side, events) in [("events_off", ""), ("events_on", "Kd")] {
            c.cmd(&["CONFIG", "SET", "notify-keyspace-events", events]);
            let us = fresh_acquire_usec(server, &mut c, shas, Impl::Rlock, "w11", no_options);
            rounds.push(side, &[("acquire_usec", us)]);
        }
        c.cmd(&["CONFIG", "SET", "notify-keyspace-events", ""]);
        // The acquires above start from an empty server: script and lock are set up afresh.
        let sha = c.cmd(&["SCRIPT", "LOAD", SCRIPT]).text();
        let token = c
            .q(&format!("RLOCK.ACQUIRE {LOCK} {OWNER} PX 600000"))
            .int()
            .to_string();
        let writes: [(&str, &str, Vec<String>); 3] = [
            ("set", "set", strings(&["SET", "w11:data", "v"])),
            (
                "guard",
                "rlock.guard",
                strings(&["RLOCK.GUARD", LOCK, OWNER, &token, "SET", "w11:data", "v"]),
            ),
            (
                "script",
                "evalsha",
                strings(&["EVALSHA", &sha, "2", LOCK, "w11:data", OWNER, &token, "v"]),
            ),
        ];
        for (side, command, args) in &writes {
            let us = write_usec(server, &mut c, command, args);
            rounds.push(side, &[("write_usec", us)]);
        }
    }
    table.add(
        WORKLOAD,
        "server µs per fresh RLOCK.ACQUIRE: module events on ÷ off",
        rounds.ratio("acquire_usec", "events_on", "events_off"),
        format!(
            "off {}; on {}",
            rounds.show("events_off", "acquire_usec", 2),
            rounds.show("events_on", "acquire_usec", 2)
        ),
    );
    table.add(
        WORKLOAD,
        "server µs per guarded SET: RLOCK.GUARD ÷ SET",
        rounds.ratio("write_usec", "guard", "set"),
        format!(
            "SET {}; RLOCK.GUARD {}; Lua check + SET {}",
            rounds.show("set", "write_usec", 2),
            rounds.show("guard", "write_usec", 2),
            rounds.show("script", "write_usec", 2)
        ),
    );
    table.add(
        WORKLOAD,
        "server µs per guarded SET: RLOCK.GUARD ÷ the Lua script",
        rounds.ratio("write_usec", "guard", "script"),
        String::new(),
    );
    rounds.finish(table);
    reset(&mut c);
}

/// Server µs per call of `command`, pipelined from every connection.
fn write_usec(server: &Server, c: &mut Conn, command: &str, args: &[String]) -> f64 {
    crate::driver::reset_stats(c);
    pipelined(server, |_, buf| {
        for _ in 0..PIPELINE {
            encode(buf, args);
        }
        (PIPELINE, PIPELINE as u64)
    });
    commandstats(c).get(command).map_or(f64::NAN, |s| s.1)
}
