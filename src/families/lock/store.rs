//! The plain lock as Redis stores it (Redisson's `RLock`): a hash `owner -> hold count` plus
//! `rlock:token -> token` (and, only when used, `rlock:ids -> request-id memory` and
//! `rlock:maxhold -> cap time`), with an absolute expiry: what the shared `LockKey` reads and
//! writes for this family.

use crate::api::{api, bytes, now_ms, OwnedStr, RStr};
use crate::error::Result;
use crate::kinds::RESERVED_PREFIX;
use crate::lifetime::retries::{find_in, Kind, Memory, IDS_FIELD};
use crate::store::{LockKey, HSET, ONE};
use redis_module::raw;
use std::os::raw::{c_int, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

use super::rules::{in_delay, View, CAP_FIELD, DELAY_FIELD, TOKEN_FIELD};

static TOKEN_FIELD_STR: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());
static IDS_FIELD_STR: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());
static CAP_FIELD_STR: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());
static DELAY_FIELD_STR: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(null_mut());

/// Creates the strings every grant writes once, at load time, so no command allocates them.
pub fn init() {
    for (slot, value) in [
        (&TOKEN_FIELD_STR, OwnedStr::new(TOKEN_FIELD)),
        (&IDS_FIELD_STR, OwnedStr::new(IDS_FIELD)),
        (&CAP_FIELD_STR, OwnedStr::new(CAP_FIELD)),
        (&DELAY_FIELD_STR, OwnedStr::new(DELAY_FIELD)),
    ] {
        slot.store(value.0, Ordering::Relaxed);
        std::mem::forget(value); // lives as long as the module
    }
}

fn token_field() -> RStr {
    TOKEN_FIELD_STR.load(Ordering::Relaxed)
}

/// What a write puts in the hash besides the owner's hold count.
#[derive(Clone, Copy, Default)]
pub struct Extra<'a> {
    pub token: Option<i64>,
    /// The encoded request-id memory (`rlock:ids`).
    pub ids: Option<&'a [u8]>,
    /// The hold cap, absolute ms (`rlock:maxhold`).
    pub cap: Option<i64>,
    /// The lock-delay, ms (`rlock:lockdelay`).
    pub delay: Option<i64>,
}

/// The holder as `RLOCK.INFO` reports it.
pub struct Holder {
    pub owner: Vec<u8>,
    pub holds: i64,
    pub token: Option<i64>,
}

impl LockKey {
    pub fn token(&self) -> Option<i64> {
        self.int_field(token_field()).ok().flatten()
    }

    /// The holding's hold cap (absolute ms), if it has one.
    pub fn cap(&self) -> Option<i64> {
        self.optional_field(&CAP_FIELD_STR)
    }

    /// The holding's lock-delay (ms), if it has one.
    pub fn delay(&self) -> Option<i64> {
        self.optional_field(&DELAY_FIELD_STR)
    }

    fn optional_field(&self, field: &AtomicPtr<raw::RedisModuleString>) -> Option<i64> {
        // Most locks hold only the owner and the token: no field to look for, and a hash read
        // costs as much as the rest of a re-entry's own work. (A free key's length is 0.)
        if self.len() <= 2 {
            return None;
        }
        self.int_field(field.load(Ordering::Relaxed)).ok().flatten()
    }

    /// Whether the holding's lease is over and its lock-delay runs: the key is there, but
    /// nobody holds it.
    pub fn in_delay(&self) -> bool {
        // The clock and the expiry are read only for the rare holding with a delay.
        self.delay()
            .is_some_and(|delay| in_delay(self.expire_at(), Some(delay), now_ms()))
    }

    /// Sets the holding's lease to end at `lease_end`; its key lives on for its lock-delay.
    /// Returns when the key expires.
    pub fn set_lease_end(&mut self, lease_end: i64) -> i64 {
        let expire_at = lease_end.saturating_add(self.delay().unwrap_or(0));
        self.set_expire_at(expire_at);
        expire_at
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

    /// The value the current holding remembers for a call of `kind` with request id `id`,
    /// read in place (`retries::find_in`).
    pub fn remembered_reply(&self, kind: Kind, id: &[u8]) -> Option<i64> {
        let value = self.field(IDS_FIELD_STR.load(Ordering::Relaxed));
        if value.is_null() {
            return None;
        }
        let found = find_in(bytes(value), kind, id);
        // SAFETY: `value` is the live string HashGet returned; freed once, here.
        unsafe { api!(RedisModule_FreeString)(self.ctx, value) };
        found
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
        if self.in_delay() {
            return Ok(View::Theirs);
        }
        Ok(match self.int_field(owner)? {
            Some(holds) => View::Mine {
                holds,
                token: if with_token { self.token() } else { None },
            },
            None => View::Theirs,
        })
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
        let delay = extra.delay.map(OwnedStr::from_i64);
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
            null_mut(),
            null_mut(),
        ];
        let mut argc = 3;
        for (field, value) in [
            (token_field(), &token),
            (IDS_FIELD_STR.load(Ordering::Relaxed), &ids),
            (CAP_FIELD_STR.load(Ordering::Relaxed), &cap),
            (DELAY_FIELD_STR.load(Ordering::Relaxed), &delay),
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
        let [_, f0, v0, f1, v1, f2, v2, f3, v3, f4, v4] = argv;
        // SAFETY: the key is open for writing; HashSet copies fields and values and stops at
        // the first NULL field; the 'v' format takes the array and its length, and Replicate
        // copies the strings.
        unsafe {
            api!(RedisModule_HashSet)(key, flags, f0, v0, f1, v1, f2, v2, f3, v3, f4, v4, end);
            api!(RedisModule_Replicate)(self.ctx, HSET, c"v".as_ptr(), argv.as_mut_ptr(), argc);
        }
    }

    /// Takes a free lock for `owner`: one hold, `extra` (with the token), expiring at
    /// `expire_at`.
    pub fn grant(&mut self, owner: RStr, extra: Extra, expire_at: i64) {
        self.set_holds(owner, 1, extra);
        self.set_expire_at(expire_at);
    }

    /// The holder, read with a hash scan: the owner is the field that is not rlock's own.
    pub fn holder(&self) -> Option<Holder> {
        if self.is_free() || self.in_delay() {
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
}
