//! The commands of no one family as Redis learns them: waiting (`RLOCK.CANCEL`,
//! `RLOCK.CHANNEL`) and looking over every lock (`RLOCK.SCAN`).

use crate::command::{Arg, Command, KEY_1, NO_KEY};

pub const COMMANDS: &[Command] = &[
    Command {
        name: c"rlock.scan",
        handler: Some(crate::scan::scan_command),
        flags: c"readonly",
        keys: NO_KEY,
        summary: c"Lists the locks among the keys one SCAN step returns that the caller may read, longest held first: [next-cursor, [[key, owner, holds, held, ttl, waiters], ...]].",
        complexity: c"O(1) per call, O(N) for a full iteration, N the number of keys",
        arity: -2,
        writes: false,
        args: &[
            Arg::Cursor,
            Arg::Text(c"MATCH", c"pattern"),
            Arg::Option(c"COUNT", c"count"),
            Arg::Option(c"MINHELD", c"min-held-ms"),
        ],
    },
    Command {
        name: c"rlock.cancel",
        handler: Some(crate::queue::commands::cancel_command),
        flags: c"fast",
        keys: KEY_1,
        summary: c"Takes the owner's entries out of the key's wait queue (any lock type; \"\" for this connection's latch waits); replies how many.",
        complexity: c"O(N), N the waiters of the key",
        arity: 3,
        writes: false,
        args: &[Arg::Key, Arg::Owner],
    },
    Command {
        name: c"rlock.channel",
        handler: Some(crate::queue::commands::channel_command),
        flags: c"fast",
        keys: NO_KEY,
        summary: c"Replies the channel that NOTIFY messages for this connection (or client-id) are published on.",
        complexity: c"O(1)",
        arity: -1,
        writes: false,
        args: &[Arg::Maybe(c"client-id")],
    },
];
