//! A lock hash as Redis stores it, for the families kept in one (the plain and the read-write
//! lock): open it, tell which kind it is, read and write fields and the expiry. Every write is
//! applied through the low-level key API and replicated as the plain command that reproduces
//! it exactly (HSET, HDEL, PEXPIREAT, DEL), so replicas and the AOF need no module.

use crate::api::{api, bytes, Ctx, OwnedStr, RStr};
use crate::error::{Error, Result};
use crate::kinds::MODE_FIELD;
use crate::lifetime::watchdog::LockId;
use crate::lifetime::with_watchdog;
use crate::own_writes::tell_deleted;
use redis_module::raw;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

static MODE_FIELD_STR: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());

/// The integer 1, the hold count most writes put down.
pub(crate) static ONE: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());

/// The integer 0, the message Redisson's clients hear when a lock frees.
pub(crate) static ZERO: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());

/// Creates the strings every open or grant uses, at load time, so no command allocates them.
pub fn init() {
    for (slot, value) in [
        (&MODE_FIELD_STR, OwnedStr::new(MODE_FIELD)),
        (&ONE, OwnedStr::from_i64(1)),
        (&ZERO, OwnedStr::from_i64(0)),
    ] {
        slot.store(value.0, Ordering::Relaxed);
        std::mem::forget(value); // lives as long as the module
    }
}

pub(crate) const HSET: *const c_char = c"HSET".as_ptr();
const PEXPIREAT: *const c_char = c"PEXPIREAT".as_ptr();
pub(crate) const DEL: *const c_char = c"DEL".as_ptr();
const HDEL: *const c_char = c"HDEL".as_ptr();

/// Redis's marker value for "delete this field" in `RedisModule_HashSet`.
const HASH_DELETE: RStr = 1usize as RStr;

pub use crate::kinds::LockType;

/// Refuses, in Redis Cluster, a key whose side keys (a read-write lock's timeout keys, a
/// semaphore's holders) would land in another slot, where a slot migration would leave them.
pub fn side_keys_in_slot(ctx: Ctx, key: &[u8]) -> Result<()> {
    let cluster = crate::api::context_flags(ctx) & raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0;
    if cluster && !crate::kinds::side_keys_share_slot(key) {
        return Err(Error::SideKeysSlot);
    }
    Ok(())
}

/// An open lock key; closed on drop.
pub struct LockKey {
    pub(crate) ctx: Ctx,
    pub(crate) name: RStr,
    pub(crate) key: *mut raw::RedisModuleKey,
}

/// Opens the lock `key` in `db` from a timer (its client is pointed at `db` first); the name
/// must outlive the key. Opening lets Redis expire the key first (and replicate that DEL
/// before our writes).
pub fn open_at(ctx: Ctx, db: i32, key: &[u8]) -> (OwnedStr, Result<LockKey>) {
    let name = crate::api::select(ctx, db, key);
    let lock = LockKey::open(ctx, name.0, true);
    (name, lock)
}

/// `open_at`, kept only if `held` says the lock is still what the caller expects (a watchdog
/// binding's holding).
pub fn open_if(
    ctx: Ctx,
    (db, key): (i32, &[u8]),
    held: impl Fn(&LockKey) -> bool,
) -> Option<(OwnedStr, LockKey)> {
    let (name, lock) = open_at(ctx, db, key);
    Some(name).zip(lock.ok().filter(held))
}

/// `open_if` for renewing a watchdog binding's holding: a lock that no longer is it (`held`
/// says) loses `owner`'s binding, never to be renewed again.
pub fn open_to_renew(
    ctx: Ctx,
    id: &LockId,
    owner: &[u8],
    held: impl Fn(&LockKey) -> bool,
) -> Option<(OwnedStr, LockKey)> {
    let opened = open_if(ctx, (id.0, &id.1), held);
    if opened.is_none() {
        with_watchdog(|w| w.unbind(id.0, &id.1, owner));
    }
    opened
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
        if kind == LockType::ReadWrite {
            side_keys_in_slot(ctx, bytes(name))?;
        }
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
        if self.is_free() {
            tell_deleted(self.ctx, self.name);
        }
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
    pub(crate) fn field(&self, field: RStr) -> RStr {
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
    pub(crate) fn int_field(&self, field: RStr) -> Result<Option<i64>> {
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

    /// The number of fields in the hash (0 when free).
    pub(crate) fn len(&self) -> usize {
        // SAFETY: `self.key` is open (ValueLength accepts an empty key and replies 0).
        unsafe { api!(RedisModule_ValueLength)(self.key) }
    }

    /// The absolute expiry in ms, or `None` for a key without one (or no key: Redis 8.2's
    /// GetAbsExpire crashes on an empty key opened for writing).
    pub fn expire_at(&self) -> Option<i64> {
        if self.is_free() {
            return None;
        }
        // SAFETY: `self.key` is open and holds a value.
        let at = unsafe { api!(RedisModule_GetAbsExpire)(self.key) };
        (at >= 0).then_some(at)
    }

    pub fn set_expire_at(&mut self, at: i64) {
        // SAFETY: the key is open for writing and holds a value; the format matches (s, l).
        unsafe {
            api!(RedisModule_SetAbsExpire)(self.key, at);
            api!(RedisModule_Replicate)(self.ctx, PEXPIREAT, c"sl".as_ptr(), self.name, at);
        }
    }

    pub fn delete(&mut self) {
        let existed = !self.is_free();
        // SAFETY: the key is open for writing; the format matches (s).
        unsafe {
            api!(RedisModule_DeleteKey)(self.key);
            api!(RedisModule_Replicate)(self.ctx, DEL, c"s".as_ptr(), self.name);
        }
        if existed {
            tell_deleted(self.ctx, self.name);
        }
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
