//! The RWLOCK commands as Redis learns them: name, handler, flags and key positions, and what
//! `COMMAND DOCS` shows (summary, complexity, arity, arguments).

use crate::command::{join, Arg, Command, ACQUIRE_OPTIONS, KEY_1};

const RWLOCK_ACQUIRE: [Arg; 10] = join(&[&[Arg::Key, Arg::Owner, Arg::Mode], ACQUIRE_OPTIONS]);

pub const COMMANDS: &[Command] = &[
    Command {
        name: c"rwlock.acquire",
        handler: Some(super::commands::acquire_command),
        flags: c"write deny-oom",
        keys: KEY_1,
        summary: c"Takes or re-enters a read or write hold of a read-write lock; replies a fencing token, or nil when not granted. WAIT blocks in a FIFO queue.",
        complexity: c"O(1) for a new reader, O(N) for a re-entry, N the reader holds",
        arity: -4,
        writes: true,
        args: &RWLOCK_ACQUIRE,
    },
    Command {
        name: c"rwlock.release",
        handler: Some(super::commands::release_command),
        flags: c"write",
        keys: KEY_1,
        summary: c"Drops one read or write hold; replies the owner's holds of that mode left, nil if it held none.",
        complexity: c"O(N), N the reader holds",
        arity: -4,
        writes: true,
        args: &[Arg::Key, Arg::Owner, Arg::Mode, Arg::Text(c"ID", c"request-id")],
    },
    Command {
        name: c"rwlock.renew",
        handler: Some(super::commands::renew_command),
        flags: c"write",
        keys: KEY_1,
        summary: c"Resets the lease of every holding of the owner (WATCHDOG: binds them to this connection); replies 1, or 0 when it holds nothing.",
        complexity: c"O(N), N the reader holds",
        arity: -3,
        writes: true,
        args: &[Arg::Key, Arg::Owner, Arg::Option(c"PX", c"lease-ms"), Arg::Flag(c"WATCHDOG")],
    },
    Command {
        name: c"rwlock.forcerelease",
        handler: Some(super::commands::force_release_command),
        flags: c"write",
        keys: KEY_1,
        summary: c"Removes the read-write lock whoever holds it; replies 1 if a lock was removed, else 0.",
        complexity: c"O(N), N the reader holds",
        arity: 2,
        writes: true,
        args: &[Arg::Key],
    },
    Command {
        name: c"rwlock.info",
        handler: Some(super::commands::info_command),
        flags: c"readonly",
        keys: KEY_1,
        summary: c"Replies the mode, ttl, holdings (owner, mode, holds, token, ttl) and waiters by mode, or nil when free.",
        complexity: c"O(N), N the reader holds and waiters",
        arity: 2,
        writes: false,
        args: &[Arg::Key],
    },
];
