//! Replies, for every command: the shapes a handler returns (`Reply`), the wrapper that runs a
//! handler under the panic guard and writes its reply, and a writer for maps and arrays.

use crate::api::{api, bytes, guarded, Ctx, RStr};
use crate::error::{Error, Result};
use crate::notify;
use std::os::raw::{c_int, c_long};

pub enum Reply {
    Int(i64),
    Null,
    /// A reply of a shape of its own, written by the closure.
    With(Box<dyn FnOnce(Ctx) -> c_int>),
    /// The client is blocked; its reply comes later, from `waiters`.
    Blocked,
    /// Queued with `NOTIFY`: the outcome comes later, as a message.
    Waiting,
}

pub type Handler = fn(Ctx, &[RStr]) -> Result<Reply>;

/// Runs a command handler under the panic guard and writes its reply.
pub fn run(ctx: Ctx, argv: *mut RStr, argc: c_int, handler: Handler) -> c_int {
    // SAFETY: Redis passes `argc` live strings in `argv` for the duration of the command.
    let args = unsafe { std::slice::from_raw_parts(argv, argc.max(0) as usize) };
    notify::set_command(Some(ctx));
    let result = guarded("a command", Err(Error::Internal), || handler(ctx, args));
    notify::set_command(None);
    // SAFETY: replies go to the context of the command being executed.
    unsafe {
        match result {
            Ok(Reply::Int(n)) => api!(RedisModule_ReplyWithLongLong)(ctx, n),
            Ok(Reply::Null) => api!(RedisModule_ReplyWithNull)(ctx),
            Ok(Reply::With(write)) => write(ctx),
            Ok(Reply::Blocked) => crate::api::OK,
            Ok(Reply::Waiting) => api!(RedisModule_ReplyWithSimpleString)(ctx, c"WAITING".as_ptr()),
            Err(Error::WrongArity) => api!(RedisModule_WrongArity)(ctx),
            Err(e) => api!(RedisModule_ReplyWithError)(ctx, e.to_cstring().as_ptr()),
        }
    }
}

/// A reply written piece by piece: maps are maps in RESP3, flat field/value arrays in RESP2.
pub struct Out(Ctx);

impl Out {
    /// # Safety
    /// `ctx` is the context of the command being replied to, live while `Out` is used.
    pub unsafe fn new(ctx: Ctx) -> Out {
        Out(ctx)
    }

    pub fn text(&self, text: &[u8]) {
        // SAFETY: `new`'s promise.
        unsafe { reply_text(self.0, text) };
    }

    pub fn int(&self, n: i64) {
        // SAFETY: `new`'s promise.
        unsafe { api!(RedisModule_ReplyWithLongLong)(self.0, n) };
    }

    pub fn int_or_nil(&self, n: Option<i64>) {
        // SAFETY: `new`'s promise.
        unsafe { reply_int_or_nil(self.0, n) };
    }

    /// A map field with a string value.
    pub fn text_field(&self, name: &[u8], value: &[u8]) {
        self.text(name);
        self.text(value);
    }

    /// A map field with an integer value.
    pub fn int_field(&self, name: &[u8], n: i64) {
        self.text(name);
        self.int(n);
    }

    /// A map field with an integer value, or nil.
    pub fn int_or_nil_field(&self, name: &[u8], n: Option<i64>) {
        self.text(name);
        self.int_or_nil(n);
    }

    /// A map of `pairs` field/value pairs follows.
    pub fn map(&self, pairs: usize) {
        // SAFETY: `new`'s promise.
        unsafe { api!(RedisModule_ReplyWithMap)(self.0, pairs as c_long) };
    }

    /// An array of `len` elements follows.
    pub fn array(&self, len: usize) {
        // SAFETY: `new`'s promise.
        unsafe { api!(RedisModule_ReplyWithArray)(self.0, len as c_long) };
    }
}

/// Parses the options with their bytes on the stack for the usual short argument lists.
pub fn with_bytes<'a, R>(args: &[RStr], parse: impl FnOnce(&[&'a [u8]]) -> R) -> R {
    let mut buf: [&[u8]; 10] = [&[]; 10];
    if args.len() <= buf.len() {
        for (slot, arg) in buf.iter_mut().zip(args) {
            *slot = bytes(*arg);
        }
        parse(&buf[..args.len()])
    } else {
        parse(&args.iter().map(|a| bytes(*a)).collect::<Vec<_>>())
    }
}

/// Replies a string.
///
/// # Safety
/// `ctx` is the context of the command being replied to.
pub unsafe fn reply_text(ctx: Ctx, text: &[u8]) {
    // SAFETY: as the caller promises.
    unsafe { api!(RedisModule_ReplyWithStringBuffer)(ctx, text.as_ptr().cast(), text.len()) };
}

/// Replies an integer, or nil.
///
/// # Safety
/// `ctx` is the context of the command being replied to.
pub unsafe fn reply_int_or_nil(ctx: Ctx, n: Option<i64>) -> c_int {
    // SAFETY: as the caller promises.
    unsafe {
        match n {
            Some(n) => api!(RedisModule_ReplyWithLongLong)(ctx, n),
            None => api!(RedisModule_ReplyWithNull)(ctx),
        }
    }
}

macro_rules! entry_points {
    ($($entry:ident => $handler:ident),* $(,)?) => {
        $(pub extern "C" fn $entry(ctx: Ctx, argv: *mut RStr, argc: c_int) -> c_int {
            run(ctx, argv, argc, $handler)
        })*
    };
}
pub(crate) use entry_points;
