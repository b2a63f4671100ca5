//! The lock as Redis stores it: a hash `owner -> hold count` plus `rlock:token -> token` (and,
//! only when used, `rlock:ids -> request-id memory` and `rlock:maxhold -> cap time`), with
//! an absolute expiry. Every write is applied through the low-level key API and replicated as
//! the plain command that reproduces it exactly (HSET, PEXPIREAT, DEL), so replicas and the AOF
//! need no module.

use crate::api::{api, bytes, Ctx, OwnedStr, RStr};
use crate::error::{Error, Result};
use crate::lifetime::retries::{Memory, IDS_FIELD};
use crate::lock::{View, CAP_FIELD, RESERVED_PREFIX, TOKEN_FIELD};
use crate::rwlock::MODE_FIELD;
use redis_module::raw;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

static TOKEN_FIELD_STR: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());
static IDS_FIELD_STR: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());
static CAP_FIELD_STR: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());
static MODE_FIELD_STR: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());
pub(crate) static ONE: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());

/// Creates the strings every grant writes once, at load time, so no command allocates them.
pub fn init() {
    for (slot, value) in [
        (&TOKEN_FIELD_STR, OwnedStr::new(TOKEN_FIELD)),
        (&IDS_FIELD_STR, OwnedStr::new(IDS_FIELD)),
        (&CAP_FIELD_STR, OwnedStr::new(CAP_FIELD)),
        (&MODE_FIELD_STR, OwnedStr::new(MODE_FIELD)),
        (&ONE, OwnedStr::from_i64(1)),
    ] {
        slot.store(value.0, Ordering::Relaxed);
        std::mem::forget(value); // lives as long as the module
    }
}

fn token_field() -> RStr {
    TOKEN_FIELD_STR.load(Ordering::Relaxed)
}

const HSET: *const c_char = c"HSET".as_ptr();
const PEXPIREAT: *const c_char = c"PEXPIREAT".as_ptr();
pub(crate) const DEL: *const c_char = c"DEL".as_ptr();
const HDEL: *const c_char = c"HDEL".as_ptr();

/// Redis's marker value for "delete this field" in `RedisModule_HashSet`.
const HASH_DELETE: RStr = 1usize as RStr;

pub use crate::lock::LockType;

/// What a write puts in the hash besides the owner's hold count.
#[derive(Clone, Copy, Default)]
pub struct Extra<'a> {
    pub token: Option<i64>,
    /// The encoded request-id memory (`rlock:ids`).
    pub ids: Option<&'a [u8]>,
    /// The hold cap, absolute ms (`rlock:maxhold`).
    pub cap: Option<i64>,
}

/// The holder as `RLOCK.INFO` reports it.
pub struct Holder {
    pub owner: Vec<u8>,
    pub holds: i64,
    pub token: Option<i64>,
}

/// An open lock key; closed on drop.
pub struct LockKey {
    ctx: Ctx,
    name: RStr,
    key: *mut raw::RedisModuleKey,
}

impl LockKey {
    /// Opens `name` for reading and, with `write`, writing. Refuses a key of another type.
    pub fn open(ctx: Ctx, name: RStr, write: bool) -> Result<LockKey> {
        let mode = raw::REDISMODULE_READ | if write { raw::REDISMODULE_WRITE } else { 0 };
        // SAFETY: `ctx` and `name` are live for this callback; the key is closed on drop.
        let key = unsafe { api!(RedisModule_OpenKey)(ctx, name, mode as c_int) };
        let lock = LockKey { ctx, name, key };
        match lock.key_type() {
            raw::REDISMODULE_KEYTYPE_EMPTY | raw::REDISMODULE_KEYTYPE_HASH => Ok(lock),
            _ => Err(Error::WrongType),
        }
    }

    /// Like `open`, also refusing a lock of the other kind (`WRONGTYPE`, nothing changed).
    pub fn open_as(ctx: Ctx, name: RStr, write: bool, kind: LockType) -> Result<LockKey> {
        let lock = LockKey::open(ctx, name, write)?;
        match lock.kind() {
            Some(found) if found != kind => Err(Error::WrongType),
            _ => Ok(lock),
        }
    }

    fn key_type(&self) -> isize {
        // SAFETY: `self.key` is open (KeyType accepts NULL too).
        unsafe { api!(RedisModule_KeyType)(self.key) as isize }
    }

    pub fn is_free(&self) -> bool {
        self.key_type() == raw::REDISMODULE_KEYTYPE_EMPTY
    }

    /// The kind of lock at the key; None when free.
    pub fn kind(&self) -> Option<LockType> {
        if self.is_free() {
            return None;
        }
        let mode = self.field(MODE_FIELD_STR.load(Ordering::Relaxed));
        if mode.is_null() {
            return Some(LockType::Plain);
        }
        // SAFETY: `mode` is the live string HashGet returned; freed once, here.
        unsafe { api!(RedisModule_FreeString)(self.ctx, mode) };
        Some(LockType::ReadWrite)
    }

    /// A hash field's bytes, if present.
    pub fn get(&self, field: &[u8]) -> Option<Vec<u8>> {
        let field = OwnedStr::new(field);
        let value = self.field(field.0);
        if value.is_null() {
            return None;
        }
        let out = bytes(value).to_vec();
        // SAFETY: `value` is the live string HashGet returned; freed once, here.
        unsafe { api!(RedisModule_FreeString)(self.ctx, value) };
        Some(out)
    }

    /// Sets hash fields: one HashSet each, one replicated HSET for all.
    pub fn hset(&mut self, pairs: &[(&[u8], &[u8])]) {
        let strings: Vec<(OwnedStr, OwnedStr)> = pairs
            .iter()
            .map(|(f, v)| (OwnedStr::new(f), OwnedStr::new(v)))
            .collect();
        let mut argv = vec![self.name];
        for (field, value) in &strings {
            // SAFETY: the key is open for writing; HashSet copies the field and value.
            unsafe {
                api!(RedisModule_HashSet)(
                    self.key,
                    raw::REDISMODULE_HASH_NONE as c_int,
                    field.0,
                    value.0,
                    null_mut::<c_void>(),
                )
            };
            argv.extend([field.0, value.0]);
        }
        self.replicate(HSET, argv);
    }

    /// Deletes hash fields (the key goes with its last field), replicated as one HDEL.
    pub fn hdel(&mut self, fields: &[&[u8]]) {
        if fields.is_empty() || self.is_free() {
            return;
        }
        let strings: Vec<OwnedStr> = fields.iter().map(|f| OwnedStr::new(f)).collect();
        let mut argv = vec![self.name];
        for field in &strings {
            // SAFETY: the key is open for writing; HASH_DELETE is Redis's "delete" marker.
            unsafe {
                api!(RedisModule_HashSet)(
                    self.key,
                    raw::REDISMODULE_HASH_NONE as c_int,
                    field.0,
                    HASH_DELETE,
                    null_mut::<c_void>(),
                )
            };
            argv.push(field.0);
        }
        self.replicate(HDEL, argv);
    }

    fn replicate(&self, command: *const c_char, mut argv: Vec<RStr>) {
        // SAFETY: the 'v' format takes the array and its length; Replicate copies the strings.
        unsafe {
            api!(RedisModule_Replicate)(
                self.ctx,
                command,
                c"v".as_ptr(),
                argv.as_mut_ptr(),
                argv.len(),
            )
        };
    }

    pub fn name(&self) -> RStr {
        self.name
    }

    pub fn ctx(&self) -> Ctx {
        self.ctx
    }

    /// A hash field's value, to be freed by the caller (NULL when absent).
    fn field(&self, field: RStr) -> RStr {
        let mut value: RStr = null_mut();
        // SAFETY: HashGet writes a new string (or NULL) to `value`; the caller frees it.
        unsafe {
            api!(RedisModule_HashGet)(
                self.key,
                raw::REDISMODULE_HASH_NONE as c_int,
                field,
                &mut value as *mut RStr,
                null_mut::<c_void>(),
            )
        };
        value
    }

    /// An integer hash field: `Ok(None)` when absent, an error when not an integer.
    fn int_field(&self, field: RStr) -> Result<Option<i64>> {
        let value = self.field(field);
        if value.is_null() {
            return Ok(None);
        }
        let mut n: i64 = 0;
        // SAFETY: `value` is the live string HashGet returned; freed once, right after.
        let parsed = unsafe { api!(RedisModule_StringToLongLong)(value, &mut n) };
        // SAFETY: as above.
        unsafe { api!(RedisModule_FreeString)(self.ctx, value) };
        match parsed {
            crate::api::OK => Ok(Some(n)),
            _ => Err(Error::CorruptHolds),
        }
    }

    pub fn token(&self) -> Option<i64> {
        self.int_field(token_field()).ok().flatten()
    }

    /// The holding's hold cap (absolute ms), if it has one.
    pub fn cap(&self) -> Option<i64> {
        // Most locks hold only the owner and the token: no field to look for, and a hash read
        // costs as much as the rest of a re-entry's own work.
        if self.len() <= 2 {
            return None;
        }
        self.int_field(CAP_FIELD_STR.load(Ordering::Relaxed))
            .ok()
            .flatten()
    }

    /// The number of fields in the hash (0 when free).
    fn len(&self) -> usize {
        // SAFETY: `self.key` is open (ValueLength accepts an empty key and replies 0).
        unsafe { api!(RedisModule_ValueLength)(self.key) }
    }

    /// The request ids the current holding remembers.
    pub fn ids(&self) -> Memory {
        let value = self.field(IDS_FIELD_STR.load(Ordering::Relaxed));
        if value.is_null() {
            return Memory::default();
        }
        let memory = Memory::parse(bytes(value));
        // SAFETY: `value` is the live string HashGet returned; freed once, here.
        unsafe { api!(RedisModule_FreeString)(self.ctx, value) };
        memory
    }

    pub fn view(&self, owner: RStr) -> Result<View> {
        self.view_with(owner, true)
    }

    /// The lock as `owner` sees it, without reading the token (a release needs only the count,
    /// and each hash read costs as much as the rest of the release's own work).
    pub fn view_without_token(&self, owner: RStr) -> Result<View> {
        self.view_with(owner, false)
    }

    fn view_with(&self, owner: RStr, with_token: bool) -> Result<View> {
        if self.is_free() {
            return Ok(View::Free);
        }
        Ok(match self.int_field(owner)? {
            Some(holds) => View::Mine {
                holds,
                token: if with_token { self.token() } else { None },
            },
            None => View::Theirs,
        })
    }

    /// The absolute expiry in ms, or `None` for a key without one.
    pub fn expire_at(&self) -> Option<i64> {
        // SAFETY: `self.key` is open.
        let at = unsafe { api!(RedisModule_GetAbsExpire)(self.key) };
        (at >= 0).then_some(at)
    }

    /// Sets `owner`'s hold count and the `extra` fields given: one HashSet, and one replicated
    /// HSET built from the same strings (no number is turned into a new string twice).
    pub fn set_holds(&mut self, owner: RStr, holds: i64, extra: Extra) {
        let holds_value = (holds != 1).then(|| OwnedStr::from_i64(holds));
        let holds_str = holds_value
            .as_ref()
            .map_or(ONE.load(Ordering::Relaxed), |v| v.0);
        let token = extra.token.map(OwnedStr::from_i64);
        let ids = extra.ids.map(OwnedStr::new);
        let cap = extra.cap.map(OwnedStr::from_i64);
        let mut argv = [
            self.name,
            owner,
            holds_str,
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
        ];
        let mut argc = 3;
        for (field, value) in [
            (token_field(), &token),
            (IDS_FIELD_STR.load(Ordering::Relaxed), &ids),
            (CAP_FIELD_STR.load(Ordering::Relaxed), &cap),
        ] {
            if let Some(value) = value {
                argv[argc] = field;
                argv[argc + 1] = value.0;
                argc += 2;
            }
        }
        let (key, flags, end) = (
            self.key,
            raw::REDISMODULE_HASH_NONE as c_int,
            null_mut::<c_void>(),
        );
        let [_, f0, v0, f1, v1, f2, v2, f3, v3] = argv;
        // SAFETY: the key is open for writing; HashSet copies fields and values and stops at
        // the first NULL field; the 'v' format takes the array and its length, and Replicate
        // copies the strings.
        unsafe {
            api!(RedisModule_HashSet)(key, flags, f0, v0, f1, v1, f2, v2, f3, v3, end);
            api!(RedisModule_Replicate)(self.ctx, HSET, c"v".as_ptr(), argv.as_mut_ptr(), argc);
        }
    }

    /// Takes a free lock for `owner`: one hold, `extra` (with the token), expiring at
    /// `expire_at`.
    pub fn grant(&mut self, owner: RStr, extra: Extra, expire_at: i64) {
        self.set_holds(owner, 1, extra);
        self.set_expire_at(expire_at);
    }

    pub fn set_expire_at(&mut self, at: i64) {
        // SAFETY: the key is open for writing and holds a value; the format matches (s, l).
        unsafe {
            api!(RedisModule_SetAbsExpire)(self.key, at);
            api!(RedisModule_Replicate)(self.ctx, PEXPIREAT, c"sl".as_ptr(), self.name, at);
        }
    }

    pub fn delete(&mut self) {
        // SAFETY: the key is open for writing; the format matches (s).
        unsafe {
            api!(RedisModule_DeleteKey)(self.key);
            api!(RedisModule_Replicate)(self.ctx, DEL, c"s".as_ptr(), self.name);
        }
    }

    /// The holder, read with a hash scan: the owner is the field that is not rlock's own.
    pub fn holder(&self) -> Option<Holder> {
        if self.is_free() {
            return None;
        }
        let fields = self.fields();
        let int = |v: &[u8]| {
            std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
        };
        let token = fields
            .iter()
            .find(|(f, _)| f == TOKEN_FIELD)
            .and_then(|(_, v)| int(v));
        let (owner, holds) = fields
            .into_iter()
            .find(|(f, _)| !f.starts_with(RESERVED_PREFIX))?;
        Some(Holder {
            owner,
            holds: int(&holds).unwrap_or(0),
            token,
        })
    }

    /// Every field of the hash with its value, read with a hash scan.
    pub fn fields(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        unsafe extern "C" fn collect(
            _key: *mut raw::RedisModuleKey,
            field: RStr,
            value: RStr,
            privdata: *mut c_void,
        ) {
            // SAFETY: `privdata` is the `fields` vector below, alive for the whole scan.
            let fields = unsafe { &mut *privdata.cast::<Vec<(Vec<u8>, Vec<u8>)>>() };
            fields.push((bytes(field).to_vec(), bytes(value).to_vec()));
        }
        // SAFETY: the cursor is destroyed after the scan; `collect` only touches `fields`.
        unsafe {
            let cursor = api!(RedisModule_ScanCursorCreate)();
            while api!(RedisModule_ScanKey)(
                self.key,
                cursor,
                Some(collect),
                (&mut fields as *mut Vec<(Vec<u8>, Vec<u8>)>).cast(),
            ) != 0
            {}
            api!(RedisModule_ScanCursorDestroy)(cursor);
        }
        fields
    }
}

impl Drop for LockKey {
    fn drop(&mut self) {
        // SAFETY: the key was opened in `open` and is closed once, here.
        unsafe { api!(RedisModule_CloseKey)(self.key) }
    }
}
