//! The RLATCH commands as Redis learns them: name, handler, flags and key positions, and what
//! `COMMAND DOCS` shows (summary, complexity, arity, arguments).

use crate::command::{Arg, Command, KEY_1};

pub const COMMANDS: &[Command] = &[
    Command {
        name: c"rlatch.set",
        handler: Some(super::commands::set_command),
        flags: c"write deny-oom",
        keys: KEY_1,
        summary: c"Sets a count-down latch when it is not set; replies 1, else 0.",
        complexity: c"O(1)",
        arity: -3,
        writes: true,
        args: &[Arg::Key, Arg::Number(c"count"), Arg::Text(c"ID", c"request-id")],
    },
    Command {
        name: c"rlatch.countdown",
        handler: Some(super::commands::countdown_command),
        flags: c"write",
        keys: KEY_1,
        summary: c"Counts the latch down by one; replies the remaining count. At 0 every waiter is answered.",
        complexity: c"O(1), O(N) for N waiters when it opens",
        arity: -2,
        writes: true,
        args: &[Arg::Key, Arg::Text(c"ID", c"request-id")],
    },
    Command {
        name: c"rlatch.await",
        handler: Some(super::commands::await_command),
        flags: c"readonly",
        keys: KEY_1,
        summary: c"Replies 1 when the latch is open; else nil, or with WAIT blocks until it opens (1) or times out (nil).",
        complexity: c"O(1)",
        arity: -2,
        writes: false,
        args: &[
            Arg::Key,
            Arg::Option(c"WAIT", c"timeout-ms"),
            Arg::Flag(c"NOTIFY"),
            Arg::Maybe(c"client-id"),
        ],
    },
    Command {
        name: c"rlatch.count",
        handler: Some(super::commands::count_command),
        flags: c"readonly fast",
        keys: KEY_1,
        summary: c"Replies the latch's remaining count (0 when unset or open).",
        complexity: c"O(1)",
        arity: 2,
        writes: false,
        args: &[Arg::Key],
    },
];
