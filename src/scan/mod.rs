//! `RLOCK.SCAN cursor [MATCH pattern] [COUNT n] [MINHELD ms]`: the locks among the hashes one
//! step of the server's own `SCAN ... TYPE hash` returns, longest held first. There is no
//! index of locks (RLOCK.ACQUIRE pays nothing for this command): each call looks at about
//! `COUNT` keys, and the caller follows the cursor to 0, as with SCAN. Only the locks whose keys
//! the caller may read are listed (docs/security.md): a restricted user may get fewer than
//! it would otherwise, as with SCAN's MATCH.

use crate::acl::{Access, Caller};
use crate::api::{
    api, bytes, guarded, log_warning, now_ms, reply_bytes, reply_elements, selected_db, Ctx,
    OwnedStr, RStr, OK,
};
use crate::error::{Error, Result};
use crate::families::contract::{self, Held};
use crate::queue;
use crate::reply::Out;
use crate::store::LockKey;
use std::ffi::CString;
use std::os::raw::c_int;

mod args;
use args::Scan;

/// One listed holder: `[key, owner, holds, held, ttl, waiters]` in the reply.
struct Entry {
    key: Vec<u8>,
    holder: Held,
    /// ms since the holding was granted.
    held: i64,
    /// ms left, -1 without expiry.
    ttl: i64,
    waiters: usize,
}

struct Page {
    cursor: Vec<u8>,
    entries: Vec<Entry>,
}

pub extern "C" fn scan_command(ctx: Ctx, argv: *mut RStr, argc: c_int) -> c_int {
    // SAFETY: Redis passes `argc` live strings in `argv` for the duration of the command.
    let args = unsafe { std::slice::from_raw_parts(argv, argc.max(0) as usize) };
    let result = guarded("RLOCK.SCAN", Err(Error::Internal), || scan(ctx, args));
    // SAFETY: replies go to the context of the command being executed.
    unsafe {
        match result {
            Ok(page) => reply(ctx, &page),
            Err(Error::WrongArity) => api!(RedisModule_WrongArity)(ctx),
            Err(e) => api!(RedisModule_ReplyWithError)(ctx, e.to_cstring().as_ptr()),
        }
    }
}

fn scan(ctx: Ctx, argv: &[RStr]) -> Result<Page> {
    let [_, args @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let args: Vec<&[u8]> = args.iter().map(|a| bytes(*a)).collect();
    let request = args::scan(&args)?;
    let (now, db) = (now_ms(), selected_db(ctx));
    let mut entries = Vec::new();
    // One user handle per call; a key the caller may not read is skipped unopened.
    let caller = Caller::of(ctx)?;
    let cursor = scan_hashes(ctx, &request, |name| {
        if caller.may(Access::Read, name) {
            entries.extend(entry(ctx, db, name, now, request.min_held_ms));
        }
    })?;
    entries.sort_by(|a, b| b.held.cmp(&a.held).then_with(|| a.key.cmp(&b.key)));
    Ok(Page { cursor, entries })
}

/// The holders of the lock at `name`, if the hash there is one whose family lists them (the
/// family contract's `holders`), held at least `min_held` ms.
fn entry(ctx: Ctx, db: i32, name: &[u8], now: i64, min_held: i64) -> Vec<Entry> {
    let key = OwnedStr::new(name);
    let Ok(lock) = LockKey::open(ctx, key.0, false) else {
        return Vec::new();
    };
    // The token is the grant time: it decides before the rest of the hash is read.
    let long_enough = |token| crate::clock::held_ms(token, now) >= min_held;
    let holders = contract::holders(&lock, &long_enough);
    if holders.is_empty() {
        return Vec::new();
    }
    let ttl = lock.expire_at().map_or(-1, |at| (at - now).max(0));
    let waiters = queue::count(db, name);
    let entry = |holder: Held| Entry {
        key: name.to_vec(),
        held: crate::clock::held_ms(holder.token, now),
        ttl,
        waiters,
        holder,
    };
    holders.into_iter().map(entry).collect()
}

/// Runs `SCAN cursor MATCH pattern COUNT n TYPE hash`, hands each key to `each`, and returns
/// the next cursor.
fn scan_hashes(ctx: Ctx, s: &Scan, mut each: impl FnMut(&[u8])) -> Result<Vec<u8>> {
    let (cursor, count) = (digits(s.cursor), digits(s.count));
    // "*" is what SCAN uses without MATCH: it skips matching for it.
    let pattern = s.pattern.unwrap_or(b"*");
    // SAFETY: the C strings and `pattern` live across the call; the format names them in
    // order ('b' takes a pointer and a length); the reply is read, then freed, below.
    unsafe {
        let reply = api!(RedisModule_Call)(
            ctx,
            c"SCAN".as_ptr(),
            c"ccbcccc".as_ptr(),
            cursor.as_ptr(),
            c"MATCH".as_ptr(),
            pattern.as_ptr(),
            pattern.len(),
            c"COUNT".as_ptr(),
            count.as_ptr(),
            c"TYPE".as_ptr(),
            c"hash".as_ptr(),
        );
        let mut parts = reply_elements(reply).into_iter().flatten();
        let (next, keys) = (parts.next(), parts.next());
        let next = next.and_then(|n| reply_bytes(n)).map(<[u8]>::to_vec);
        let listed = keys.and_then(|k| reply_elements(k)).map(|keys| {
            keys.filter_map(|k| reply_bytes(k)).for_each(&mut each);
        });
        if !reply.is_null() {
            api!(RedisModule_FreeCallReply)(reply);
        }
        match (next, listed) {
            (Some(next), Some(())) => Ok(next),
            _ => {
                log_warning("rlock: RLOCK.SCAN: SCAN did not reply [cursor, keys]");
                Err(Error::Internal)
            }
        }
    }
}

fn digits(n: impl ToString) -> CString {
    CString::new(n.to_string()).unwrap_or_default() // digits hold no NUL
}

/// `[next-cursor, [[key, owner, holds, held, ttl, waiters], ...]]`, the same in RESP2 and RESP3.
unsafe fn reply(ctx: Ctx, page: &Page) -> c_int {
    // SAFETY: as the caller promises, `ctx` is the command's.
    let out = unsafe { Out::new(ctx) };
    out.array(2);
    out.text(&page.cursor);
    out.array(page.entries.len());
    for e in &page.entries {
        out.array(6);
        out.text(&e.key);
        out.text(&e.holder.owner);
        out.int(e.holder.holds);
        out.int(e.held);
        out.int(e.ttl);
        out.int(e.waiters as i64);
    }
    OK
}
