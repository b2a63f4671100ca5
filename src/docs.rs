//! What `COMMAND DOCS` and `COMMAND INFO` show for each command (RedisModule_SetCommandInfo):
//! summary, since, arity, the key at argv[1], and the arguments, for redis-cli hints and
//! client generators. Redis copies everything it is given.

use crate::api::{api, Ctx, OK};
use redis_module::raw;
use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr::null_mut;

const VERSION: raw::RedisModuleCommandInfoVersion = raw::RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
    sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
};

#[derive(Clone, Copy)]
enum Arg {
    Key,
    /// `key [key ...]`, after a `numkeys` count.
    Keys,
    Owner,
    Cursor,
    /// An optional `TOKEN integer` pair.
    Option(&'static CStr, &'static CStr),
    /// An optional `TOKEN string` pair.
    Text(&'static CStr, &'static CStr),
    /// An optional bare token.
    Flag(&'static CStr),
    /// `READ|WRITE`.
    Mode,
    /// A required integer, named.
    Number(&'static CStr),
    /// An optional integer without a token (`NOTIFY`'s client id).
    Maybe(&'static CStr),
    /// A required string, named (`RLOCK.GUARD`'s inner command).
    Word(&'static CStr),
    /// Any number of strings, named (the inner command's arguments).
    Rest(&'static CStr),
}

struct Doc {
    name: &'static CStr,
    summary: &'static CStr,
    complexity: &'static CStr,
    arity: c_int,
    writes: bool,
    args: &'static [Arg],
}

/// What every acquire takes after its own arguments.
const ACQUIRE_OPTIONS: &[Arg] = &[
    Arg::Option(c"PX", c"lease-ms"),
    Arg::Option(c"WAIT", c"timeout-ms"),
    Arg::Flag(c"NOTIFY"),
    Arg::Maybe(c"client-id"),
    Arg::Flag(c"WATCHDOG"),
    Arg::Text(c"ID", c"request-id"),
    Arg::Option(c"MAXHOLD", c"max-hold-ms"),
];
const RLOCK_ACQUIRE: [Arg; 10] = join(&[
    &[Arg::Key, Arg::Owner],
    ACQUIRE_OPTIONS,
    &[Arg::Option(c"LOCKDELAY", c"lock-delay-ms")],
]);
const RLOCK_ACQUIREALL: [Arg; 11] = join(&[
    &[Arg::Number(c"numkeys"), Arg::Keys, Arg::Owner],
    ACQUIRE_OPTIONS,
    &[Arg::Option(c"LOCKDELAY", c"lock-delay-ms")],
]);
const RWLOCK_ACQUIRE: [Arg; 10] = join(&[&[Arg::Key, Arg::Owner, Arg::Mode], ACQUIRE_OPTIONS]);
const RSEM_ACQUIRE: [Arg; 10] = join(&[
    &[Arg::Key, Arg::Owner, Arg::Option(c"PERMITS", c"permits")],
    ACQUIRE_OPTIONS,
]);

/// The parts, one after another (checked at compile time to fill exactly `N`).
const fn join<const N: usize>(parts: &[&[Arg]]) -> [Arg; N] {
    let mut out = [Arg::Key; N];
    let (mut n, mut p) = (0, 0);
    while p < parts.len() {
        let mut i = 0;
        while i < parts[p].len() {
            out[n] = parts[p][i];
            n += 1;
            i += 1;
        }
        p += 1;
    }
    assert!(n == N, "the parts must fill the array exactly");
    out
}

const DOCS: [Doc; 27] = [
    Doc {
        name: c"rlock.acquire",
        summary: c"Takes or re-enters a lock; replies a fencing token, or nil when held elsewhere. WAIT blocks in a FIFO queue.",
        complexity: c"O(1)",
        arity: -3,
        writes: true,
        args: &RLOCK_ACQUIRE,
    },
    Doc {
        name: c"rlock.acquireall",
        summary: c"Takes every key or none (each an ordinary lock with its own token); replies the tokens in key order, or nil. WAIT queues once in every key's queue.",
        complexity: c"O(N), N the keys",
        arity: -4,
        writes: true,
        args: &RLOCK_ACQUIREALL,
    },
    Doc {
        name: c"rlock.releaseall",
        summary: c"Drops one hold of each key; replies, in key order, the holds left (0: released), or nil where not the holder.",
        complexity: c"O(N), N the keys",
        arity: -4,
        writes: true,
        args: &[
            Arg::Number(c"numkeys"),
            Arg::Keys,
            Arg::Owner,
            Arg::Text(c"ID", c"request-id"),
        ],
    },
    Doc {
        name: c"rlock.release",
        summary: c"Drops one hold; replies the holds left (0: released or handed to the next waiter), nil if not the holder.",
        complexity: c"O(1)",
        arity: -3,
        writes: true,
        args: &[Arg::Key, Arg::Owner, Arg::Text(c"ID", c"request-id")],
    },
    Doc {
        name: c"rlock.renew",
        summary: c"Resets the holder's lease (WATCHDOG: binds it to this connection); replies 1, or 0 when the owner does not hold the lock.",
        complexity: c"O(1)",
        arity: -3,
        writes: true,
        args: &[Arg::Key, Arg::Owner, Arg::Option(c"PX", c"lease-ms"), Arg::Flag(c"WATCHDOG")],
    },
    Doc {
        name: c"rlock.forcerelease",
        summary: c"Removes the lock whoever holds it (TOKEN: only that holding); replies 1 if a lock was removed, else 0.",
        complexity: c"O(1)",
        arity: -2,
        writes: true,
        args: &[Arg::Key, Arg::Option(c"TOKEN", c"token")],
    },
    Doc {
        name: c"rlock.info",
        summary: c"Replies the lock's owner, holds, ttl, token, waiters, held time and watchdog client, or nil when not locked.",
        complexity: c"O(1)",
        arity: 2,
        writes: false,
        args: &[Arg::Key],
    },
    Doc {
        name: c"rlock.leader",
        summary: c"Replies the holder's owner, token (a leader's term) and ttl, or nil when not locked.",
        complexity: c"O(N) in the lock's hash fields (a handful)",
        arity: 2,
        writes: false,
        args: &[Arg::Key],
    },
    Doc {
        name: c"rlock.guard",
        summary: c"Runs one write command only if owner holds the lock with exactly token; replies its reply, or NOTOWNER and runs nothing.",
        complexity: c"O(1) plus the inner command's",
        arity: -5,
        writes: true,
        args: &[
            Arg::Key,
            Arg::Owner,
            Arg::Number(c"token"),
            Arg::Word(c"command"),
            Arg::Rest(c"arg"),
        ],
    },
    Doc {
        name: c"rlock.scan",
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
    Doc {
        name: c"rlock.cancel",
        summary: c"Takes the owner's entries out of the key's wait queue (any lock type; \"\" for this connection's latch waits); replies how many.",
        complexity: c"O(N), N the waiters of the key",
        arity: 3,
        writes: false,
        args: &[Arg::Key, Arg::Owner],
    },
    Doc {
        name: c"rlock.channel",
        summary: c"Replies the channel that NOTIFY messages for this connection (or client-id) are published on.",
        complexity: c"O(1)",
        arity: -1,
        writes: false,
        args: &[Arg::Maybe(c"client-id")],
    },
    Doc {
        name: c"rwlock.acquire",
        summary: c"Takes or re-enters a read or write hold of a read-write lock; replies a fencing token, or nil when not granted. WAIT blocks in a FIFO queue.",
        complexity: c"O(1) for a new reader, O(N) for a re-entry, N the reader holds",
        arity: -4,
        writes: true,
        args: &RWLOCK_ACQUIRE,
    },
    Doc {
        name: c"rwlock.release",
        summary: c"Drops one read or write hold; replies the owner's holds of that mode left, nil if it held none.",
        complexity: c"O(N), N the reader holds",
        arity: -4,
        writes: true,
        args: &[Arg::Key, Arg::Owner, Arg::Mode, Arg::Text(c"ID", c"request-id")],
    },
    Doc {
        name: c"rwlock.renew",
        summary: c"Resets the lease of every holding of the owner (WATCHDOG: binds them to this connection); replies 1, or 0 when it holds nothing.",
        complexity: c"O(N), N the reader holds",
        arity: -3,
        writes: true,
        args: &[Arg::Key, Arg::Owner, Arg::Option(c"PX", c"lease-ms"), Arg::Flag(c"WATCHDOG")],
    },
    Doc {
        name: c"rwlock.forcerelease",
        summary: c"Removes the read-write lock whoever holds it; replies 1 if a lock was removed, else 0.",
        complexity: c"O(N), N the reader holds",
        arity: 2,
        writes: true,
        args: &[Arg::Key],
    },
    Doc {
        name: c"rwlock.info",
        summary: c"Replies the mode, ttl, holdings (owner, mode, holds, token, ttl) and waiters by mode, or nil when free.",
        complexity: c"O(N), N the reader holds and waiters",
        arity: 2,
        writes: false,
        args: &[Arg::Key],
    },
    Doc {
        name: c"rlatch.set",
        summary: c"Sets a count-down latch when it is not set; replies 1, else 0.",
        complexity: c"O(1)",
        arity: 3,
        writes: true,
        args: &[Arg::Key, Arg::Number(c"count")],
    },
    Doc {
        name: c"rlatch.countdown",
        summary: c"Counts the latch down by one; replies the remaining count. At 0 every waiter is answered.",
        complexity: c"O(1), O(N) for N waiters when it opens",
        arity: -2,
        writes: true,
        args: &[Arg::Key, Arg::Text(c"ID", c"request-id")],
    },
    Doc {
        name: c"rlatch.await",
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
    Doc {
        name: c"rlatch.count",
        summary: c"Replies the latch's remaining count (0 when unset or open).",
        complexity: c"O(1)",
        arity: 2,
        writes: false,
        args: &[Arg::Key],
    },
    Doc {
        name: c"rsem.acquire",
        summary: c"Takes permits of a semaphore for an owner; replies a fencing token, or nil when not granted. WAIT blocks in a FIFO queue.",
        complexity: c"O(H), H the holders",
        arity: -3,
        writes: true,
        args: &RSEM_ACQUIRE,
    },
    Doc {
        name: c"rsem.release",
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
    Doc {
        name: c"rsem.renew",
        summary: c"Resets the lease of the owner's permits (WATCHDOG: binds them to this connection); replies 1, or 0.",
        complexity: c"O(H), H the holders",
        arity: -3,
        writes: true,
        args: &[Arg::Key, Arg::Owner, Arg::Option(c"PX", c"lease-ms"), Arg::Flag(c"WATCHDOG")],
    },
    Doc {
        name: c"rsem.setpermits",
        summary: c"Sets the available permits when the semaphore does not exist yet; replies 1, else 0.",
        complexity: c"O(H), H the holders",
        arity: 3,
        writes: true,
        args: &[Arg::Key, Arg::Number(c"permits")],
    },
    Doc {
        name: c"rsem.addpermits",
        summary: c"Adds (or, negative, removes) available permits and serves the queue; replies the new count.",
        complexity: c"O(H), H the holders",
        arity: 3,
        writes: true,
        args: &[Arg::Key, Arg::Number(c"permits")],
    },
    Doc {
        name: c"rsem.info",
        summary: c"Replies the available permits, the holders (owner, permits, ttl, token, watchdog) and the waiters' requests, or nil.",
        complexity: c"O(H + W), H the holders, W the waiters",
        arity: 2,
        writes: false,
        args: &[Arg::Key],
    },
];

/// The two choices of `Arg::Mode`, as pure tokens.
fn mode_choices() -> [raw::RedisModuleCommandArg; 3] {
    // SAFETY: an all-zero RedisModuleCommandArg is valid; the third terminates the list.
    let mut choices: [raw::RedisModuleCommandArg; 3] = unsafe { std::mem::zeroed() };
    for (choice, name) in choices.iter_mut().zip([c"READ", c"WRITE"]) {
        choice.name = name.as_ptr();
        choice.token = name.as_ptr();
        choice.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN;
        choice.key_spec_index = -1;
    }
    choices
}

/// `choices` must outlive the use of the returned argument (for `Arg::Mode`).
fn raw_arg(arg: Arg, choices: &mut [raw::RedisModuleCommandArg; 3]) -> raw::RedisModuleCommandArg {
    // SAFETY: an all-zero RedisModuleCommandArg is valid (null pointers, zero numbers).
    let mut out: raw::RedisModuleCommandArg = unsafe { std::mem::zeroed() };
    out.key_spec_index = -1;
    match arg {
        Arg::Key => {
            out.name = c"key".as_ptr();
            out.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY;
            out.key_spec_index = 0;
        }
        Arg::Keys => {
            out.name = c"key".as_ptr();
            out.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY;
            out.key_spec_index = 0;
            out.flags = raw::REDISMODULE_CMD_ARG_MULTIPLE as c_int;
        }
        Arg::Owner => {
            out.name = c"owner".as_ptr();
            out.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING;
        }
        Arg::Cursor => {
            out.name = c"cursor".as_ptr();
            out.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER;
        }
        Arg::Number(name) => {
            out.name = name.as_ptr();
            out.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER;
        }
        Arg::Maybe(name) => {
            out.name = name.as_ptr();
            out.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER;
            out.flags = raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int;
        }
        Arg::Option(token, name) => {
            out.name = name.as_ptr();
            out.token = token.as_ptr();
            out.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER;
            out.flags = raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int;
        }
        Arg::Text(token, name) => {
            out.name = name.as_ptr();
            out.token = token.as_ptr();
            out.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING;
            out.flags = raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int;
        }
        Arg::Flag(token) => {
            out.name = token.as_ptr();
            out.token = token.as_ptr();
            out.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN;
            out.flags = raw::REDISMODULE_CMD_ARG_OPTIONAL as c_int;
        }
        Arg::Word(name) => {
            out.name = name.as_ptr();
            out.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING;
        }
        Arg::Rest(name) => {
            out.name = name.as_ptr();
            out.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING;
            out.flags =
                (raw::REDISMODULE_CMD_ARG_OPTIONAL | raw::REDISMODULE_CMD_ARG_MULTIPLE) as c_int;
        }
        Arg::Mode => {
            out.name = c"mode".as_ptr();
            out.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF;
            out.subargs = choices.as_mut_ptr();
        }
    }
    out
}

/// One key spec: the key at argv[1], or (`numkeys`) argv[1] keys from argv[2].
fn key_specs(writes: bool, numkeys: bool) -> [raw::RedisModuleCommandKeySpec; 2] {
    // SAFETY: all-zero key specs are valid; the second one terminates the list.
    let mut specs: [raw::RedisModuleCommandKeySpec; 2] = unsafe { std::mem::zeroed() };
    let spec = &mut specs[0];
    spec.flags = if writes {
        (raw::REDISMODULE_CMD_KEY_RW
            | raw::REDISMODULE_CMD_KEY_ACCESS
            | raw::REDISMODULE_CMD_KEY_UPDATE) as u64
    } else {
        (raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS) as u64
    };
    spec.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    spec.bs.index.pos = 1;
    spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
    if numkeys {
        spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM;
        spec.fk.keynum.keynumidx = 0;
        spec.fk.keynum.firstkey = 1;
        spec.fk.keynum.keystep = 1;
        return specs;
    }
    spec.fk.range.lastkey = 0;
    spec.fk.range.keystep = 1;
    spec.fk.range.limit = 0;
    specs
}

pub fn register(ctx: Ctx) -> Result<(), String> {
    for doc in &DOCS {
        // SAFETY: the command was created just before; GetCommand returns its handle.
        let command = unsafe { api!(RedisModule_GetCommand)(ctx, doc.name.as_ptr()) };
        if command.is_null() {
            return Err(format!("no command {:?} to document", doc.name));
        }
        let mut choices = mode_choices();
        let mut args: Vec<raw::RedisModuleCommandArg> =
            doc.args.iter().map(|a| raw_arg(*a, &mut choices)).collect();
        // SAFETY: the zeroed entry terminates the argument list.
        args.push(unsafe { std::mem::zeroed() });
        let numkeys = doc.args.iter().any(|a| matches!(a, Arg::Keys));
        let mut specs = key_specs(doc.writes, numkeys);
        // RLOCK.GUARD's keys include its inner command's: Redis must ask the module
        // (getkeys-api), which it does only for a command without key specs of its own.
        let has_key =
            (numkeys || matches!(doc.args.first(), Some(Arg::Key))) && doc.name != c"rlock.guard";
        let info = raw::RedisModuleCommandInfo {
            version: &VERSION,
            summary: doc.summary.as_ptr(),
            complexity: doc.complexity.as_ptr(),
            since: c"0.1.0".as_ptr(),
            history: null_mut(),
            tips: std::ptr::null(),
            arity: doc.arity,
            key_specs: if has_key {
                specs.as_mut_ptr()
            } else {
                null_mut()
            },
            args: args.as_mut_ptr(),
        };
        // SAFETY: every pointer in `info` is valid for the call; Redis copies what it keeps.
        if unsafe { api!(RedisModule_SetCommandInfo)(command, &info) } != OK {
            return Err(format!("could not document {:?}", doc.name));
        }
        set_acl_categories(command, doc);
    }
    Ok(())
}

/// Redis 7.2+ can put module commands in ACL categories (`@write`, `@read`); 7.0 cannot, and
/// there the recipes in docs/security.md name the commands instead. Only O(1) commands are `@fast`.
fn set_acl_categories(command: *mut raw::RedisModuleCommand, doc: &Doc) {
    // SAFETY: a read of the entry-point table; absent (None) on Redis 7.0.
    if let Some(set_categories) = unsafe { raw::RedisModule_SetCommandACLCategories } {
        let categories = match (doc.writes, doc.complexity == c"O(1)") {
            (true, _) => c"write",
            (false, true) => c"read fast",
            (false, false) => c"read",
        };
        // SAFETY: `command` is this module's command handle; Redis copies the string.
        unsafe { set_categories(command, categories.as_ptr()) };
    }
}
