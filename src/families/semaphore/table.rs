//! The RSEM commands as Redis learns them: name, handler, flags and key positions, and what
//! `COMMAND DOCS` shows (summary, complexity, arity, arguments).

use crate::command::{join, Arg, Command, ACQUIRE_OPTIONS, KEY_1};

const RSEM_ACQUIRE: [Arg; 11] = join(&[
    &[
        Arg::Key,
        Arg::Owner,
        Arg::Option(c"PERMITS", c"permits"),
        Arg::Flag(c"EACH"),
    ],
    ACQUIRE_OPTIONS,
]);

pub const COMMANDS: &[Command] = &[
    Command {
        name: c"rsem.acquire",
        handler: Some(super::commands::acquire_command),
        flags: c"write deny-oom",
        keys: KEY_1,
        summary: c"Takes permits of a semaphore for an owner (EACH: as holdings of one permit, owner:1 .. owner:n); replies a fencing token, or nil when not granted. WAIT blocks in a FIFO queue.",
        complexity: c"O(H), H the holders",
        arity: -3,
        writes: true,
        args: &RSEM_ACQUIRE,
    },
    Command {
        name: c"rsem.release",
        handler: Some(super::commands::release_command),
        flags: c"write",
        keys: KEY_1,
        summary: c"Gives back permits of the owner; replies the permits it still holds, nil if it held none.",
        complexity: c"O(H), H the holders",
        arity: -3,
        writes: true,
        args: &[
            Arg::Key,
            Arg::Owner,
            Arg::Option(c"PERMITS", c"permits"),
            Arg::Text(c"ID", c"request-id"),
        ],
    },
    Command {
        name: c"rsem.releasemany",
        handler: Some(super::commands::release_many_command),
        flags: c"write",
        keys: KEY_1,
        summary: c"Gives back every permit of the listed owners (ALL: every one must hold, else nothing changes; ANY: those that hold); replies how many owners released. ID (before the mode): a retry releases nothing and replies the same.",
        complexity: c"O(H + N), H the holders, N the owners listed",
        arity: -4,
        writes: true,
        args: &[
            Arg::Key,
            Arg::Text(c"ID", c"request-id"),
            Arg::Choice(c"mode", [c"ALL", c"ANY"]),
            Arg::Owners,
        ],
    },
    Command {
        name: c"rsem.renew",
        handler: Some(super::commands::renew_command),
        flags: c"write",
        keys: KEY_1,
        summary: c"Resets the lease of the owner's permits (WATCHDOG: binds them to this connection); replies 1, or 0.",
        complexity: c"O(H), H the holders",
        arity: -3,
        writes: true,
        args: &[Arg::Key, Arg::Owner, Arg::Option(c"PX", c"lease-ms"), Arg::Flag(c"WATCHDOG")],
    },
    Command {
        name: c"rsem.setpermits",
        handler: Some(super::commands::set_permits_command),
        flags: c"write deny-oom",
        keys: KEY_1,
        summary: c"Sets the available permits when the semaphore does not exist yet; replies 1, else 0.",
        complexity: c"O(H), H the holders",
        arity: -3,
        writes: true,
        args: &[Arg::Key, Arg::Number(c"permits"), Arg::Text(c"ID", c"request-id")],
    },
    Command {
        name: c"rsem.addpermits",
        handler: Some(super::commands::add_permits_command),
        flags: c"write deny-oom",
        keys: KEY_1,
        summary: c"Adds (or, negative, removes) available permits and serves the queue; replies the new count.",
        complexity: c"O(H), H the holders",
        arity: -3,
        writes: true,
        args: &[Arg::Key, Arg::Number(c"permits"), Arg::Text(c"ID", c"request-id")],
    },
    Command {
        name: c"rsem.info",
        handler: Some(super::commands::info_command),
        flags: c"readonly",
        keys: KEY_1,
        summary: c"Replies the available permits, the holders (owner, permits, ttl, token, watchdog) and the waiters' requests, or nil.",
        complexity: c"O(H + W), H the holders, W the waiters",
        arity: 2,
        writes: false,
        args: &[Arg::Key],
    },
];
