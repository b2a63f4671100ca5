//! A command as Redis learns it, one row of a table (each family's `table.rs`, and `common.rs`
//! for the commands of no one family): its name, handler, flags and key positions
//! (RedisModule_CreateCommand), and what `COMMAND DOCS` and `COMMAND INFO` show
//! (RedisModule_SetCommandInfo): summary, since, arity, the key at argv[1], and the arguments,
//! for redis-cli hints and client generators. Redis copies everything it is given.

pub mod common;

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
pub enum Arg {
    Key,
    /// `key [key ...]`, after a `numkeys` count.
    Keys,
    Owner,
    /// `owner [owner ...]`.
    Owners,
    Cursor,
    /// An optional `TOKEN integer` pair.
    Option(&'static CStr, &'static CStr),
    /// An optional `TOKEN string` pair.
    Text(&'static CStr, &'static CStr),
    /// An optional bare token.
    Flag(&'static CStr),
    /// `READ|WRITE`.
    Mode,
    /// One of two tokens, named (`ALL|ANY`); a command has at most one such argument.
    Choice(&'static CStr, [&'static CStr; 2]),
    /// A required integer, named.
    Number(&'static CStr),
    /// An optional integer without a token (`NOTIFY`'s client id).
    Maybe(&'static CStr),
    /// A required string, named (`RLOCK.GUARD`'s inner command).
    Word(&'static CStr),
    /// Any number of strings, named (the inner command's arguments).
    Rest(&'static CStr),
}

/// firstkey, lastkey, keystep: the one key at argv[1], or none.
pub type Keys = (c_int, c_int, c_int);
pub const KEY_1: Keys = (1, 1, 1);
pub const NO_KEY: Keys = (0, 0, 0);

pub struct Command {
    pub name: &'static CStr,
    pub handler: raw::RedisModuleCmdFunc,
    pub flags: &'static CStr,
    pub keys: Keys,
    pub summary: &'static CStr,
    pub complexity: &'static CStr,
    pub arity: c_int,
    pub writes: bool,
    pub args: &'static [Arg],
}

/// What every acquire takes after its own arguments.
pub const ACQUIRE_OPTIONS: &[Arg] = &[
    Arg::Option(c"PX", c"lease-ms"),
    Arg::Option(c"WAIT", c"timeout-ms"),
    Arg::Flag(c"NOTIFY"),
    Arg::Maybe(c"client-id"),
    Arg::Flag(c"WATCHDOG"),
    Arg::Text(c"ID", c"request-id"),
    Arg::Option(c"MAXHOLD", c"max-hold-ms"),
];
/// The parts, one after another (checked at compile time to fill exactly `N`).
pub const fn join<const N: usize>(parts: &[&[Arg]]) -> [Arg; N] {
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

/// The two tokens of a choice (`Arg::Mode`, `Arg::Choice`), as pure tokens.
fn two_choices(names: [&'static CStr; 2]) -> [raw::RedisModuleCommandArg; 3] {
    // SAFETY: an all-zero RedisModuleCommandArg is valid; the third terminates the list.
    let mut choices: [raw::RedisModuleCommandArg; 3] = unsafe { std::mem::zeroed() };
    for (choice, name) in choices.iter_mut().zip(names) {
        choice.name = name.as_ptr();
        choice.token = name.as_ptr();
        choice.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN;
        choice.key_spec_index = -1;
    }
    choices
}

/// `choices` must outlive the use of the returned argument (for `Arg::Mode`, `Arg::Choice`).
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
        Arg::Owners => {
            out.name = c"owner".as_ptr();
            out.type_ = raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING;
            out.flags = raw::REDISMODULE_CMD_ARG_MULTIPLE as c_int;
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
        Arg::Mode => return raw_arg(Arg::Choice(c"mode", [c"READ", c"WRITE"]), choices),
        Arg::Choice(name, tokens) => {
            *choices = two_choices(tokens);
            out.name = name.as_ptr();
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

/// Creates every command of `tables` (called from OnLoad).
pub fn create(ctx: Ctx, tables: &[&[Command]]) -> Result<(), String> {
    for command in tables.iter().copied().flatten() {
        let (first, last, step) = command.keys;
        // SAFETY: called from OnLoad; Redis copies the name and flags.
        let status = unsafe {
            api!(RedisModule_CreateCommand)(
                ctx,
                command.name.as_ptr(),
                command.handler,
                command.flags.as_ptr(),
                first,
                last,
                step,
            )
        };
        if status != OK {
            return Err(format!("could not create command {:?}", command.name));
        }
    }
    Ok(())
}

/// Documents every command of `tables`, created before.
pub fn document(ctx: Ctx, tables: &[&[Command]]) -> Result<(), String> {
    for doc in tables.iter().copied().flatten() {
        // SAFETY: the command was created just before; GetCommand returns its handle.
        let command = unsafe { api!(RedisModule_GetCommand)(ctx, doc.name.as_ptr()) };
        if command.is_null() {
            return Err(format!("no command {:?} to document", doc.name));
        }
        // SAFETY: all-zero arguments are valid; `raw_arg` fills them for a choice.
        let mut choices: [raw::RedisModuleCommandArg; 3] = unsafe { std::mem::zeroed() };
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
fn set_acl_categories(command: *mut raw::RedisModuleCommand, doc: &Command) {
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
