//! The few helpers over the raw Redis module API that the rest of the module shares:
//! checked access to API entry points, string views, time, logging and the panic guard.

use redis_module::raw;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub type Ctx = *mut raw::RedisModuleCtx;
pub type RStr = *mut raw::RedisModuleString;

pub const OK: c_int = raw::REDISMODULE_OK as c_int;
pub const ERR: c_int = raw::REDISMODULE_ERR as c_int;

/// Resolves a Redis module API entry point. Every name used through this macro is listed in
/// `REQUIRED`, and the module refuses to load when one is missing, so the `None` arm is never
/// taken; it aborts rather than invoke undefined behaviour if that promise is ever broken.
macro_rules! api {
    ($name:ident) => {{
        // Reading the entry-point table Redis filled in at load time; it never changes after.
        #[allow(unused_unsafe)]
        let entry = match unsafe { redis_module::raw::$name } {
            Some(f) => f,
            None => $crate::api::missing(stringify!($name)),
        };
        entry
    }};
}
pub(crate) use api;

/// Names of every entry point used through `api!`, checked once at load time.
macro_rules! required_api {
    ($($name:ident),* $(,)?) => {
        /// The first required API entry point this server lacks, if any.
        pub fn first_missing() -> Option<&'static str> {
            // SAFETY: reads of the entry-point table, filled in before OnLoad runs.
            $( if unsafe { redis_module::raw::$name }.is_none() { return Some(stringify!($name)); } )*
            None
        }
    };
}

required_api!(
    RedisModule_OpenKey,
    RedisModule_CloseKey,
    RedisModule_KeyType,
    RedisModule_ValueLength,
    RedisModule_ListGet,
    RedisModule_ZsetScore,
    RedisModule_HashGet,
    RedisModule_HashSet,
    RedisModule_StringSet,
    RedisModule_DeleteKey,
    RedisModule_GetAbsExpire,
    RedisModule_SetAbsExpire,
    RedisModule_ScanKey,
    RedisModule_ScanCursorCreate,
    RedisModule_ScanCursorDestroy,
    RedisModule_Replicate,
    RedisModule_PublishMessage,
    RedisModule_NotifyKeyspaceEvent,
    RedisModule_GetNotifyKeyspaceEvents,
    RedisModule_CreateString,
    RedisModule_CreateStringFromLongLong,
    RedisModule_HoldString,
    RedisModule_FreeString,
    RedisModule_StringPtrLen,
    RedisModule_StringToLongLong,
    RedisModule_ReplyWithNull,
    RedisModule_ReplyWithLongLong,
    RedisModule_ReplyWithError,
    RedisModule_ReplyWithMap,
    RedisModule_ReplyWithArray,
    RedisModule_ReplyWithStringBuffer,
    RedisModule_ReplyWithSimpleString,
    RedisModule_GetClientInfoById,
    RedisModule_GetDetachedThreadSafeContext,
    RedisModule_GetMyClusterID,
    RedisModule_WrongArity,
    RedisModule_GetContextFlags,
    RedisModule_GetSelectedDb,
    RedisModule_SelectDb,
    RedisModule_Milliseconds,
    RedisModule_BlockClient,
    RedisModule_UnblockClient,
    RedisModule_SetDisconnectCallback,
    RedisModule_GetBlockedClientPrivateData,
    RedisModule_GetBlockedClientHandle,
    RedisModule_CreateTimer,
    RedisModule_StopTimer,
    RedisModule_AvoidReplicaTraffic,
    RedisModule_GetClientId,
    RedisModule_EventLoopAddOneShot,
    RedisModule_RegisterCommandFilter,
    RedisModule_CommandFilterArgsCount,
    RedisModule_CommandFilterArgGet,
    RedisModule_Call,
    RedisModule_CallReplyType,
    RedisModule_CallReplyStringPtr,
    RedisModule_CallReplyArrayElement,
    RedisModule_CallReplyLength,
    RedisModule_FreeCallReply,
    RedisModule_ReplyWithCallReply,
    RedisModule_KeyAtPos,
    RedisModule_IsKeysPositionRequest,
    RedisModule_GetCommandKeys,
    RedisModule_Free,
    RedisModule_CallReplyInteger,
    RedisModule_CreateCommand,
    RedisModule_GetCommand,
    RedisModule_SetCommandInfo,
    RedisModule_SubscribeToKeyspaceEvents,
    RedisModule_SubscribeToServerEvent,
    RedisModule_RegisterInfoFunc,
    RedisModule_InfoAddSection,
    RedisModule_InfoAddFieldLongLong,
    RedisModule_InfoAddFieldCString,
    RedisModule_GetCurrentUserName,
    RedisModule_GetModuleUserFromUserName,
    RedisModule_FreeModuleUser,
    RedisModule_ACLCheckKeyPermissions,
    RedisModule_ACLCheckChannelPermissions,
);

#[cold]
pub fn missing(name: &str) -> ! {
    log_warning(&format!("Redis module API {name} is missing; aborting"));
    std::process::abort()
}

/// Borrows the bytes of a Redis string; valid while Redis keeps the string alive.
pub fn bytes<'a>(s: RStr) -> &'a [u8] {
    let mut len = 0usize;
    // SAFETY: `s` is a live RedisModuleString handed to us by Redis or created by us;
    // StringPtrLen returns a pointer to its `len` bytes, valid as long as the string is.
    unsafe {
        let ptr = api!(RedisModule_StringPtrLen)(s, &mut len);
        if ptr.is_null() {
            return &[];
        }
        std::slice::from_raw_parts(ptr.cast::<u8>(), len)
    }
}

/// A Redis string this module created and must free.
pub struct OwnedStr(pub RStr);

impl OwnedStr {
    pub fn new(bytes: &[u8]) -> Self {
        // SAFETY: a NULL context creates a string outside automatic memory management,
        // which `Drop` frees.
        OwnedStr(unsafe {
            api!(RedisModule_CreateString)(std::ptr::null_mut(), bytes.as_ptr().cast(), bytes.len())
        })
    }

    /// `parts` joined into one string, on the stack when short (a key's channel or side key's
    /// name): no heap copy made first, only to be copied again and freed.
    pub fn joined(parts: &[&[u8]]) -> Self {
        let mut buf = [0u8; 128];
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > buf.len() {
            return OwnedStr::new(&parts.concat());
        }
        let mut at = 0;
        for part in parts {
            buf[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        OwnedStr::new(&buf[..len])
    }

    pub fn from_i64(n: i64) -> Self {
        // SAFETY: as in `new`.
        OwnedStr(unsafe { api!(RedisModule_CreateStringFromLongLong)(std::ptr::null_mut(), n) })
    }

    /// Keeps a string Redis handed us (an argv entry) alive beyond the command.
    pub fn hold(s: RStr) -> Self {
        // SAFETY: HoldString returns a string (possibly a copy) the caller owns and must free.
        OwnedStr(unsafe { api!(RedisModule_HoldString)(std::ptr::null_mut(), s) })
    }
}

impl Drop for OwnedStr {
    fn drop(&mut self) {
        // SAFETY: the string was created or held with a NULL context and is freed once, here.
        unsafe { api!(RedisModule_FreeString)(std::ptr::null_mut(), self.0) }
    }
}

pub fn now_ms() -> i64 {
    // SAFETY: a plain clock read.
    unsafe { api!(RedisModule_Milliseconds)() }
}

/// Wall-clock microseconds (RedisModule_Microseconds only exists from Redis 7.2).
pub fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

pub fn context_flags(ctx: Ctx) -> u32 {
    // SAFETY: `ctx` is the live context of the current callback.
    unsafe { api!(RedisModule_GetContextFlags)(ctx) as u32 }
}

/// True where this server may change data on its own: a master that is not loading.
pub fn is_writable_master(ctx: Ctx) -> bool {
    let flags = context_flags(ctx);
    flags & raw::REDISMODULE_CTX_FLAGS_MASTER != 0
        && flags & raw::REDISMODULE_CTX_FLAGS_LOADING == 0
}

pub fn log_warning(message: &str) {
    redis_module::logging::log_warning(message);
}

/// Runs a callback that Redis invoked, turning a panic into a log line and `fallback`:
/// a panic must never unwind into Redis, which would abort the whole server.
pub fn guarded<R>(what: &str, fallback: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            log_warning(&format!("rlock: bug caught in {what}: {detail}"));
            fallback
        }
    }
}

/// True while Redis pauses writes (`CLIENT PAUSE ... WRITE`, `FAILOVER`, a manual cluster
/// failover): expired keys are then reported missing but not deleted, and nothing may be
/// propagated, so the module must not write on its own.
pub fn writes_paused() -> bool {
    // SAFETY: a plain read of server state, valid in any callback on the main thread.
    unsafe { api!(RedisModule_AvoidReplicaTraffic)() != 0 }
}

pub type TimerId = raw::RedisModuleTimerID;

/// A module timer firing at `fire_at` (ms, Redis's clock), or at once if that has passed.
/// The furthest a module timer is armed ahead: a year.
const MAX_TIMER_PERIOD_MS: i64 = 365 * 24 * 3600 * 1000;

pub fn create_timer(
    ctx: Ctx,
    fire_at: i64,
    callback: raw::RedisModuleTimerProc,
    data: *mut std::ffi::c_void,
) -> TimerId {
    // Redis turns the period into microseconds from now (`period * 1000`), which overflows for
    // a lease that ends near the end of time: a later timer fires at the cap, finds nothing
    // due and is armed again.
    let period = fire_at
        .saturating_sub(now_ms())
        .clamp(0, MAX_TIMER_PERIOD_MS);
    // SAFETY: `ctx` is live; `data` is released by the callback or by whoever stops it.
    unsafe { api!(RedisModule_CreateTimer)(ctx, period, callback, data) }
}

/// Stops a timer, returning its data if it had not fired yet.
pub fn stop_timer(ctx: Ctx, timer: TimerId) -> Option<*mut std::ffi::c_void> {
    let mut data: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: the timer belongs to this module.
    (unsafe { api!(RedisModule_StopTimer)(ctx, timer, &mut data) } == OK).then_some(data)
}

/// Runs a three-word command plus one argument through `RedisModule_Call` (e.g. `CLIENT LIST
/// ID 7`) and returns its reply if it is a string.
pub fn call_text(ctx: Ctx, words: &[&std::ffi::CStr; 3], arg: &str) -> Option<String> {
    let arg = std::ffi::CString::new(arg).ok()?;
    // SAFETY: every string is NUL-terminated and lives across the call; the format names
    // exactly the three C strings after the command name; the reply is freed below.
    unsafe {
        let reply = api!(RedisModule_Call)(
            ctx,
            words[0].as_ptr(),
            c"ccc".as_ptr(),
            words[1].as_ptr(),
            words[2].as_ptr(),
            arg.as_ptr(),
        );
        if reply.is_null() {
            return None;
        }
        let text = reply_bytes(reply).map(|b| String::from_utf8_lossy(b).into_owned());
        api!(RedisModule_FreeCallReply)(reply);
        text
    }
}

pub type CallReply = *mut raw::RedisModuleCallReply;

/// The bytes of a `RedisModule_Call` reply (or array element) if it is a string.
///
/// # Safety
/// `reply` is NULL or a live call reply; the bytes are valid until the reply is freed.
pub unsafe fn reply_bytes<'a>(reply: CallReply) -> Option<&'a [u8]> {
    // SAFETY: `reply` is live (checked for NULL); StringPtr returns its `len` bytes.
    unsafe {
        if reply.is_null()
            || api!(RedisModule_CallReplyType)(reply) != raw::REDISMODULE_REPLY_STRING as c_int
        {
            return None;
        }
        let mut len = 0usize;
        let ptr = api!(RedisModule_CallReplyStringPtr)(reply, &mut len);
        if ptr.is_null() {
            return Some(&[]);
        }
        Some(std::slice::from_raw_parts(ptr.cast::<u8>(), len))
    }
}

/// The elements of a `RedisModule_Call` array reply (owned by it: never freed on their own),
/// or None if it is not an array.
///
/// # Safety
/// `reply` is NULL or a live call reply; the elements are valid until the reply is freed.
pub unsafe fn reply_elements(reply: CallReply) -> Option<impl Iterator<Item = CallReply>> {
    // SAFETY: `reply` is live (checked for NULL); ArrayElement is in range.
    unsafe {
        if reply.is_null()
            || api!(RedisModule_CallReplyType)(reply) != raw::REDISMODULE_REPLY_ARRAY as c_int
        {
            return None;
        }
        let len = api!(RedisModule_CallReplyLength)(reply);
        Some((0..len).map(move |i| api!(RedisModule_CallReplyArrayElement)(reply, i)))
    }
}

/// Makes the event loop turn at once. A timer created in `beforeSleep` (where Redis frees a
/// client closed by QUIT or a write error) would otherwise wait for the poll timeout computed
/// before it, up to the next `serverCron` (100 ms at hz 10).
pub fn wake_event_loop() {
    extern "C" fn nothing(_data: *mut std::ffi::c_void) {}
    // SAFETY: a callback that does nothing, with no data.
    unsafe { api!(RedisModule_EventLoopAddOneShot)(Some(nothing), std::ptr::null_mut()) };
}

/// The db the command (or the timer's client) is pointed at.
pub fn selected_db(ctx: Ctx) -> i32 {
    // SAFETY: `ctx` is the live context of the current callback.
    unsafe { api!(RedisModule_GetSelectedDb)(ctx) }
}

/// Points a timer's client at `db` and names `key` there.
pub fn select(ctx: Ctx, db: i32, key: &[u8]) -> OwnedStr {
    // SAFETY: `ctx` is a timer context, whose client we may point at any db.
    unsafe { api!(RedisModule_SelectDb)(ctx, db) };
    OwnedStr::new(key)
}
