//! `RLOCK.GUARD key owner token command [arg ...]`: one write command, run atomically only if
//! `owner` holds the plain lock at `key` now with exactly `token`. The inner command is checked
//! against the caller's ACL and the OOM rule as if the caller had sent it, and replicated (and
//! written to the AOF) as itself, so replicas need no module. Its keys are reported through
//! the module's key extraction (`getkeys-api`), so Cluster routes the call and refuses keys
//! outside the lock key's slot (`CROSSSLOT`) before it runs.

use crate::api::{api, bytes, Ctx, RStr};
use crate::args;
use crate::error::{Error, Result};
use crate::kinds::LockType;
use crate::reply::{run, Reply};
use crate::store::LockKey;
use redis_module::raw;
use std::cell::RefCell;
use std::collections::HashMap;
use std::os::raw::c_int;

use super::rules::View;

/// Where the inner command starts in `RLOCK.GUARD key owner token command ...`.
const INNER: usize = 4;

thread_local! {
    /// Whether each command name seen so far may be guarded (a write that does not block):
    /// `COMMAND INFO` is asked once per name.
    static GUARDABLE: RefCell<HashMap<Vec<u8>, bool>> = RefCell::default();
}

fn guard(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, token, command, ..] = argv else {
        return Err(Error::WrongArity);
    };
    args::owner(bytes(*owner))?;
    let token = args::integer("token", bytes(*token))?;
    let name = bytes(*command).to_ascii_lowercase();
    if !guardable(ctx, &name) {
        return Err(Error::NotGuardable {
            command: String::from_utf8_lossy(&name).into_owned(),
        });
    }
    {
        let lock = LockKey::open_as(ctx, *key, false, LockType::Plain)?;
        match lock.view(*owner)? {
            View::Mine {
                token: Some(held), ..
            } if held == token => {}
            _ => return Err(Error::NotOwner),
        }
    } // The lock key is closed before the inner command opens its own keys.
    let inner = &argv[INNER..];
    let mut inner_args: Vec<RStr> = inner[1..].to_vec();
    // SAFETY: the strings are the command's arguments, live for the call; `!` replicates the
    // inner command, `C` checks the caller's ACL, `M` refuses it under OOM, `0` replies in the
    // caller's protocol; the reply is freed after it is forwarded.
    let reply = unsafe {
        api!(RedisModule_Call)(
            ctx,
            bytes_cstr(&name).as_ptr(),
            c"!CM0v".as_ptr(),
            inner_args.as_mut_ptr(),
            inner_args.len(),
        )
    };
    if reply.is_null() {
        return Err(refused());
    }
    Ok(Reply::With(Box::new(move |ctx| {
        // SAFETY: `reply` is the live reply of the call above, forwarded and freed once here.
        unsafe {
            let written = api!(RedisModule_ReplyWithCallReply)(ctx, reply);
            api!(RedisModule_FreeCallReply)(reply);
            written
        }
    })))
}

fn bytes_cstr(name: &[u8]) -> std::ffi::CString {
    std::ffi::CString::new(name.to_vec()).unwrap_or_default()
}

/// Why `RedisModule_Call` refused, from `errno` (as Redis documents for it).
fn refused() -> Error {
    let (code, why) = match std::io::Error::last_os_error().raw_os_error() {
        Some(libc_enoent) if libc_enoent == 2 => ("ERR", "unknown command"),
        Some(22) => ("ERR", "wrong number of arguments for the inner command"),
        Some(13) => (
            "NOPERM",
            "this user has no permissions to run the inner command or its keys",
        ),
        Some(28) => ("OOM", "command not allowed when used memory > 'maxmemory'"),
        Some(29) => (
            "CROSSSLOT",
            "keys of the inner command are not in the lock's slot",
        ),
        Some(1) => ("READONLY", "writes are not allowed here"),
        _ => ("ERR", "the inner command could not be run"),
    };
    Error::GuardRefused { code, why }
}

/// Whether `name` is a write command that never blocks, as `COMMAND INFO` says.
fn guardable(ctx: Ctx, name: &[u8]) -> bool {
    if let Some(known) = GUARDABLE.with(|g| g.borrow().get(name).copied()) {
        return known;
    }
    let flags = command_flags(ctx, name);
    let known = flags.as_ref().is_some_and(|f| {
        f.iter().any(|f| f == b"write")
            && !f.iter().any(|f| f == b"blocking" || f == b"noscript")
            && !name.starts_with(b"rlock.")
    });
    // Unknown names are not remembered: a module may add the command later.
    if flags.is_some() {
        GUARDABLE.with(|g| g.borrow_mut().insert(name.to_vec(), known));
    }
    known
}

/// The flags `COMMAND INFO name` lists, None for an unknown command.
fn command_flags(ctx: Ctx, name: &[u8]) -> Option<Vec<Vec<u8>>> {
    let name = crate::api::OwnedStr::new(name);
    // SAFETY: the strings live across the call; the reply is read, then freed once.
    unsafe {
        let reply = api!(RedisModule_Call)(
            ctx,
            c"COMMAND".as_ptr(),
            c"cs".as_ptr(),
            c"INFO".as_ptr(),
            name.0,
        );
        if reply.is_null() {
            return None;
        }
        let info = api!(RedisModule_CallReplyArrayElement)(reply, 0);
        let flags = (!info.is_null()
            && api!(RedisModule_CallReplyType)(info) == raw::REDISMODULE_REPLY_ARRAY as c_int)
            .then(|| api!(RedisModule_CallReplyArrayElement)(info, 2))
            .filter(|f| !f.is_null())
            .map(|flags| {
                (0..api!(RedisModule_CallReplyLength)(flags))
                    .filter_map(|i| {
                        let flag = api!(RedisModule_CallReplyArrayElement)(flags, i);
                        crate::api::reply_bytes(flag).map(<[u8]>::to_vec)
                    })
                    .collect()
            });
        api!(RedisModule_FreeCallReply)(reply);
        flags
    }
}

/// Cluster and `COMMAND GETKEYS` ask for the keys: the lock key and the inner command's.
fn report_keys(ctx: Ctx, argv: &[RStr]) {
    // SAFETY: a keys-position request's context; positions are within `argv`.
    unsafe {
        api!(RedisModule_KeyAtPos)(ctx, 1);
        if argv.len() <= INNER {
            return;
        }
        let mut inner: Vec<RStr> = argv[INNER..].to_vec();
        let mut count: c_int = 0;
        let positions = api!(RedisModule_GetCommandKeys)(
            ctx,
            inner.as_mut_ptr(),
            inner.len() as c_int,
            &mut count,
        );
        if positions.is_null() {
            return;
        }
        for i in 0..count.max(0) as usize {
            api!(RedisModule_KeyAtPos)(ctx, INNER as c_int + *positions.add(i));
        }
        api!(RedisModule_Free)(positions.cast());
    }
}

pub extern "C" fn guard_command(ctx: Ctx, argv: *mut RStr, argc: c_int) -> c_int {
    // SAFETY: `ctx` is the command's context.
    if unsafe { api!(RedisModule_IsKeysPositionRequest)(ctx) } != 0 {
        crate::api::guarded("RLOCK.GUARD's keys", (), || {
            // SAFETY: Redis passes `argc` live strings in `argv`.
            let args = unsafe { std::slice::from_raw_parts(argv, argc.max(0) as usize) };
            report_keys(ctx, args);
        });
        return crate::api::OK;
    }
    run(ctx, argv, argc, guard)
}
