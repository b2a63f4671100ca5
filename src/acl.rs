//! The caller's ACL, asked where a command reaches beyond its key arguments (docs/security.md):
//! the locks `RLOCK.SCAN` lists, the connection a `NOTIFY` names, the other owners'
//! waits `RLOCK.CANCEL` removes, the keys a `DEADLOCK` reply names. Redis itself checks the key
//! arguments before the command runs; these checks are for everything else.
//!
//! A user handle is looked up once per command that needs one, never on the hot path of an
//! acquire or a release.

use crate::api::{api, bytes, context_flags, Ctx, OwnedStr, OK};
use crate::error::{Error, Result};
use redis_module::raw;
use std::os::raw::c_int;

/// What a key is asked for: reading it, or changing the state of the lock there.
#[derive(Clone, Copy)]
pub enum Access {
    Read,
    Write,
}

/// What a refusal was about, for `ACL LOG`.
pub enum Refused<'a> {
    Key(&'a [u8]),
    Channel(&'a [u8]),
}

/// Who runs the command: an ACL user, or the server itself (the master link, AOF loading),
/// which has no user and may do everything.
pub enum Caller {
    Server,
    User(User),
}

/// An ACL user handle, freed on drop.
pub struct User {
    handle: *mut raw::RedisModuleUser,
    name: OwnedStr,
}

impl Caller {
    /// The user running the command at `ctx`. A user that cannot be found (deleted while its
    /// command runs) is an error: every check fails closed.
    pub fn of(ctx: Ctx) -> Result<Caller> {
        let trusted = raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING;
        if context_flags(ctx) & trusted != 0 {
            return Ok(Caller::Server);
        }
        // SAFETY: `ctx` is the live context of a client's command, which has a user (the
        // server's own clients, which have none, were answered above). The name is a copy.
        let name = unsafe { api!(RedisModule_GetCurrentUserName)(ctx) };
        if name.is_null() {
            return Err(Error::Internal);
        }
        let name = OwnedStr(name);
        // SAFETY: `name` is a live string; the handle is freed on drop.
        let handle = unsafe { api!(RedisModule_GetModuleUserFromUserName)(name.0) };
        if handle.is_null() {
            return Err(Error::Internal);
        }
        Ok(Caller::User(User { handle, name }))
    }

    /// Whether the caller may read `key`, or change the lock there (`UPDATE`, as a write
    /// command's key spec asks).
    pub fn may(&self, access: Access, key: &[u8]) -> bool {
        let Caller::User(user) = self else {
            return true;
        };
        let flags = match access {
            Access::Read => raw::REDISMODULE_CMD_KEY_ACCESS,
            Access::Write => raw::REDISMODULE_CMD_KEY_UPDATE,
        };
        let key = OwnedStr::new(key);
        // SAFETY: a live handle and string.
        unsafe {
            api!(RedisModule_ACLCheckKeyPermissions)(user.handle, key.0, flags as c_int) == OK
        }
    }

    /// Whether the caller may `PUBLISH` to `channel` (Redis does not tell it from subscribing).
    pub fn may_publish(&self, channel: &[u8]) -> bool {
        let Caller::User(user) = self else {
            return true;
        };
        let channel = OwnedStr::new(channel);
        let publish = raw::REDISMODULE_CMD_CHANNEL_PUBLISH as c_int;
        // SAFETY: a live handle and string.
        unsafe {
            api!(RedisModule_ACLCheckChannelPermissions)(user.handle, channel.0, publish) == OK
        }
    }

    /// Whether connection `client` is authenticated as this same user. False when it cannot be
    /// told: the connection is gone, or the server predates `GetClientUserNameById` (7.0.3).
    pub fn owns_connection(&self, ctx: Ctx, client: u64) -> bool {
        let Caller::User(user) = self else {
            return true;
        };
        user_of(ctx, client).is_some_and(|name| bytes(name.0) == bytes(user.name.0))
    }

    /// Records a refusal in `ACL LOG`, as Redis does for its own (where the server can).
    pub fn log_refusal(&self, ctx: Ctx, object: Refused) {
        let Caller::User(user) = self else {
            return;
        };
        // SAFETY: a read of the entry-point table.
        let Some(add) = (unsafe { raw::RedisModule_ACLAddLogEntry }) else {
            return;
        };
        let (reason, object) = match object {
            Refused::Key(key) => (
                raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_KEY,
                key,
            ),
            Refused::Channel(channel) => (
                raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_CHANNEL,
                channel,
            ),
        };
        let object = OwnedStr::new(object);
        // SAFETY: the command's context, a live handle and string; Redis copies the object.
        unsafe { add(ctx, user.handle, object.0, reason) };
    }
}

/// The user connection `client` is authenticated as; None when it cannot be told: the
/// connection is gone or has no user, or the server predates `GetClientUserNameById` (7.0.3).
fn user_of(ctx: Ctx, client: u64) -> Option<OwnedStr> {
    // SAFETY: a read of the entry-point table; None on a server without it.
    let user_of = unsafe { raw::RedisModule_GetClientUserNameById }?;
    // SAFETY: NULL when the connection is gone or has no user; else a string we free.
    let name = unsafe { user_of(ctx, client) };
    (!name.is_null()).then(|| OwnedStr(name))
}

/// Whether the command at `ctx` runs as an ACL user and connection `client` is authenticated
/// as that same user (`Caller::owns_connection` without making a user handle). False for the
/// server's own callers, and when it cannot be told.
pub fn same_user(ctx: Ctx, client: u64) -> bool {
    let trusted = raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING;
    if context_flags(ctx) & trusted != 0 {
        return false;
    }
    // SAFETY: `ctx` is the live context of a client's command; NULL for a client without a
    // user, else a copy we free.
    let name = unsafe { api!(RedisModule_GetCurrentUserName)(ctx) };
    if name.is_null() {
        return false;
    }
    let name = OwnedStr(name);
    user_of(ctx, client).is_some_and(|other| bytes(other.0) == bytes(name.0))
}

impl Drop for User {
    fn drop(&mut self) {
        // SAFETY: the handle came from GetModuleUserFromUserName and is freed once, here.
        unsafe { api!(RedisModule_FreeModuleUser)(self.handle) };
    }
}
