//! The RSEM commands: a semaphore whose permits belong to their holders and come back when a
//! holder's lease ends, its watchdog connection closes or its cap is reached. Parse, apply,
//! reply; the queue, leases, watchdog and request ids are the lock's machinery.

use crate::api::{bytes, now_ms, selected_db, Ctx, RStr};
use crate::args;
use crate::clock::lease_end;
use crate::config;
use crate::counter::semaphore_channel;
use crate::error::{Error, Result};
use crate::holdings::{self, publish};
use crate::kinds::{permits_fit, LockType, Want};
use crate::lifetime::{self, retries, retries::Kind};
use crate::queue::{self, Ask};
use crate::reply::{run, with_bytes, Out, Reply};
use crate::own_writes::answered_again;
use crate::request::{lease_ms, once, request, wait_or_nil, watchdog_client};
use crate::stats;
use crate::watch::arm_renewals;
use std::collections::HashSet;
use std::os::raw::c_int;

use super::each::{check_none_hold, id_keeper};
use super::family::{semaphore_changed, watch_holding};
use super::rules as semaphore;
use super::rules::Holding;
use super::serve::{give_back, grant_each, grant_permits};
use super::store::Semaphore;

/// Opens the semaphore for a write command, giving back the permits of expired holders and
/// serving its queue first.
fn open_settled(ctx: Ctx, key: RStr) -> Result<(Semaphore, i32)> {
    let mut sem = Semaphore::open(ctx, key)?;
    let db = selected_db(ctx);
    semaphore_changed(ctx, db, &mut sem);
    Ok((sem, db))
}

/// `RSEM.ACQUIRE key owner [PERMITS n] [EACH] [PX lease-ms] [WAIT timeout-ms] [WATCHDOG] [ID id]
/// [MAXHOLD ms]`: a fencing token for the grant, nil when not granted. `EACH` grants the permits
/// as holdings of one permit each (`each`).
fn acquire(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    args::owner(bytes(*owner))?;
    let o = with_bytes(options, args::sem_acquire_options)?;
    let permits = o.permits.unwrap_or(1);
    let request = request(ctx, *owner, &o)?;
    let (mut sem, db) = open_settled(ctx, *key)?;
    let name = bytes(*key);
    // An EACH request's id is kept by its first owner.
    let id_keeper = match o.each {
        true => id_keeper(bytes(*owner)),
        false => bytes(*owner).to_vec(),
    };
    let held = sem.holding(&id_keeper)?;
    if let (Some(id), Some(held)) = (o.id, held) {
        if sem.ids(&id_keeper).find(Kind::Acquire, id) == Some(held.token) {
            answered_again(ctx);
            return Ok(Reply::Int(held.token));
        }
    }
    if o.each {
        check_none_hold(&sem, bytes(*owner), permits)?;
    }
    let queued = queue::count(db, name) > 0;
    if permits_fit(sem.available(), permits, queued) {
        let (token, expire_at) = match o.each {
            true => grant_each(db, &mut sem, &request, permits)?,
            false => grant_permits(db, &mut sem, &request, permits)?,
        };
        watch_holding(ctx, db, name, expire_at);
        if held.is_some() {
            stats::REENTRIES.add();
        }
        return Ok(Reply::Int(token));
    }
    if o.wait.is_some() && !crate::subscriptions::ensure_string_subscription(ctx) {
        return Err(Error::Internal);
    }
    let ask = || Ask::new(Want::of(semaphore::PERMITS, permits), &request);
    wait_or_nil(ctx, (db, name), o.wait, ask, || Ok(None))
}

/// `RSEM.RELEASE key owner [PERMITS n] [ID request-id]`: the permits the owner still holds, nil
/// when it held none; releasing more than it holds is an error.
fn release(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let owner = args::owner(bytes(*owner))?;
    let o = with_bytes(options, args::sem_release_options)?;
    let permits = o.permits.unwrap_or(1);
    let (mut sem, db) = open_settled(ctx, *key)?;
    let name = bytes(*key);
    let now = now_ms();
    let call = o.id.map(|id| retries::release_call(db, name, owner, id));
    if let Some(reply) = call
        .as_ref()
        .and_then(|c| lifetime::with_released(|r| r.reply(c, now)))
    {
        answered_again(ctx);
        return Ok(Reply::Int(reply));
    }
    let Some(mut held) = sem.holding(owner)? else {
        return Ok(Reply::Null);
    };
    let mut memory = sem.ids(owner);
    if let Some(left) = o.id.and_then(|id| memory.find(Kind::Release, id)) {
        answered_again(ctx);
        return Ok(Reply::Int(left));
    }
    if permits > held.permits {
        return Err(Error::TooManyPermits { held: held.permits });
    }
    held.permits -= permits;
    if held.permits > 0 {
        let ids = o.id.map(|id| {
            memory.remember(
                Kind::Release,
                id,
                held.permits,
                now,
                config::retry_window_ms(),
            );
            memory.encode()
        });
        sem.set_holding(owner, &held, ids.as_deref());
    } else {
        sem.remove_holding(owner);
        lifetime::with_watchdog(|w| w.unbind(db, name, owner));
        holdings::released(db, name, owner);
        holdings::tell_change(ctx, name, c"rsem.released");
        if let Some(call) = call {
            let window = config::retry_window_ms();
            lifetime::with_released(|r| r.remember(call, 0, now, window));
        }
    }
    give_back(ctx, &mut sem, permits)?;
    stats::RELEASES.add();
    semaphore_changed(ctx, db, &mut sem);
    Ok(Reply::Int(held.permits))
}

/// `ALL`: every listed owner must hold, else nothing changes; `ANY`: those that hold.
fn all_must_hold(word: &[u8]) -> Result<bool> {
    if word.eq_ignore_ascii_case(b"ALL") {
        Ok(true)
    } else if word.eq_ignore_ascii_case(b"ANY") {
        Ok(false)
    } else {
        Err(Error::BadReleaseMode)
    }
}

/// `RSEM.RELEASEMANY key [ID request-id] ALL|ANY owner [owner ...]`: every permit of several
/// owners back in one call (Redisson's `release(List)` all or none, `tryRelease(List)` those
/// still held), the queue served and Redisson's waiters told once. Replies how many owners
/// gave their permits back. An owner holds once: named again, it counts as not holding (with
/// `ALL`, an error). Owners whose lease ended hold nothing. The id comes before the mode, where
/// no owner can be; with it, a retry within the retry window releases nothing and replies the
/// same.
fn release_many(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let (key, id, mode, owners) = match argv {
        [_, key, word, id, mode, owners @ ..] if bytes(*word).eq_ignore_ascii_case(b"ID") => {
            let o = with_bytes(&[*word, *id], args::request_id_options)?;
            (key, o.id, mode, owners)
        }
        [_, key, mode, owners @ ..] => (key, None, mode, owners),
        _ => return Err(Error::WrongArity),
    };
    if owners.is_empty() {
        return Err(Error::WrongArity);
    }
    let all = all_must_hold(bytes(*mode))?;
    let owners = owners
        .iter()
        .map(|o| args::owner(bytes(*o)))
        .collect::<Result<Vec<&[u8]>>>()?;
    let (mut sem, db) = open_settled(ctx, *key)?;
    let name = bytes(*key);
    let call = id.map(|id| retries::command_call(db, name, "rsem.releasemany", id));
    let released = once(ctx, call, || release_owners(ctx, (&mut sem, db, name), &owners, all))?;
    Ok(Reply::Int(released))
}

/// What `RSEM.RELEASEMANY` changes: the owners' holdings removed, their permits given back in
/// one step; how many owners released.
fn release_owners(
    ctx: Ctx,
    (sem, db, name): (&mut Semaphore, i32, &[u8]),
    owners: &[&[u8]],
    all: bool,
) -> Result<i64> {
    let mut held: Vec<(&[u8], Holding)> = Vec::new();
    let mut named = HashSet::new();
    for &owner in owners {
        let again = !named.insert(owner);
        match sem.holding(owner)?.filter(|_| !again) {
            Some(holding) => held.push((owner, holding)),
            None if all => return Err(Error::NotHeld(String::from_utf8_lossy(owner).into())),
            None => {}
        }
    }
    if held.is_empty() {
        return Ok(0);
    }
    for (owner, _) in &held {
        sem.remove_holding(owner);
        lifetime::with_watchdog(|w| w.unbind(db, name, owner));
        holdings::released(db, name, owner);
        holdings::tell_change(ctx, name, c"rsem.released");
        stats::RELEASES.add();
    }
    give_back(ctx, sem, held.iter().map(|(_, h)| h.permits).sum())?;
    semaphore_changed(ctx, db, sem);
    Ok(held.len() as i64)
}

/// `RSEM.RENEW key owner [PX lease-ms] [WATCHDOG]`: the owner's lease starts again (never past
/// its cap); `WATCHDOG` binds it to this connection. 1, or 0 when it holds no permits.
fn renew(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, owner, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let owner = args::owner(bytes(*owner))?;
    let o = with_bytes(options, args::renew_options)?;
    let bind_to = watchdog_client(ctx, o.watchdog)?;
    let lease_ms = lease_ms(&o)?;
    let (mut sem, db) = open_settled(ctx, *key)?;
    let Some(mut held) = sem.holding(owner)? else {
        return Ok(Reply::Int(0));
    };
    held.expire_at = lease_end(now_ms(), lease_ms, held.cap);
    sem.set_holding(owner, &held, None);
    let name = bytes(*key);
    match bind_to {
        Some(client) => {
            let holding = holdings::Holding {
                kind: LockType::Semaphore,
                owner,
                token: Some(held.token),
            };
            holdings::bind_or_confirm(db, name, holding, client, lease_ms);
            arm_renewals(ctx);
        }
        None if o.lease_ms.is_some() => {
            lifetime::with_watchdog(|w| w.set_lease(db, name, owner, lease_ms));
        }
        None => {}
    }
    watch_holding(ctx, db, name, held.expire_at);
    Ok(Reply::Int(1))
}

/// `RSEM.SETPERMITS key n [ID request-id]`: sets the available permits when the semaphore does
/// not exist yet (1), else 0. With `ID`, a retry of the call that set them replies 1 again.
fn set_permits(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, n, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let n = args::at_least("permits", bytes(*n), 0)?;
    let o = with_bytes(options, args::request_id_options)?;
    let (mut sem, db) = open_settled(ctx, *key)?;
    let call = o.id.map(|id| retries::command_call(db, bytes(*key), "rsem.setpermits", id));
    let set = once(ctx, call, || {
        if sem.counter().is_some() {
            return Ok(0);
        }
        sem.set_available(n);
        publish(
            ctx,
            &semaphore_channel(bytes(*key)),
            n.to_string().as_bytes(),
        );
        semaphore_changed(ctx, db, &mut sem);
        Ok(1)
    })?;
    Ok(Reply::Int(set))
}

/// `RSEM.ADDPERMITS key n [ID request-id]`: adds (negative: removes) available permits; the new
/// count. With `ID`, a retry within the retry window adds nothing and replies the same.
fn add_permits(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, n, options @ ..] = argv else {
        return Err(Error::WrongArity);
    };
    let n = std::str::from_utf8(bytes(*n))
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or(Error::NotAnInteger { option: "n" })?;
    let o = with_bytes(options, args::request_id_options)?;
    let (mut sem, db) = open_settled(ctx, *key)?;
    let call = o.id.map(|id| retries::command_call(db, bytes(*key), "rsem.addpermits", id));
    let available = once(ctx, call, || {
        let available = give_back(ctx, &mut sem, n)?;
        semaphore_changed(ctx, db, &mut sem);
        Ok(available)
    })?;
    Ok(Reply::Int(available))
}

/// One holder as `RSEM.INFO` shows it.
struct Shown {
    owner: Vec<u8>,
    permits: i64,
    ttl: i64,
    token: i64,
    watchdog: Option<u64>,
}

/// `RSEM.INFO key`: nil when the semaphore does not exist; else available, holders, waiters.
fn info(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key] = argv else {
        return Err(Error::WrongArity);
    };
    let sem = Semaphore::open(ctx, *key)?;
    let counter = sem.counter();
    let now = now_ms();
    let db = selected_db(ctx);
    let name = bytes(*key);
    let holders: Vec<Shown> = sem
        .holdings()
        .into_iter()
        .filter(|(_, h)| h.expire_at > now)
        .map(|(owner, h)| {
            let watchdog = lifetime::with_watchdog(|w| {
                w.get(db, name, &owner)
                    .filter(|b| b.token == Some(h.token))
                    .map(|b| b.client)
            });
            Shown {
                owner,
                permits: h.permits,
                ttl: h.expire_at - now,
                token: h.token,
                watchdog,
            }
        })
        .collect();
    if counter.is_none() && holders.is_empty() {
        return Ok(Reply::Null);
    }
    let wanted: Vec<i64> = queue::wants(db, name)
        .into_iter()
        .filter_map(|want| want.amount_if(semaphore::PERMITS))
        .collect();
    let available = counter.unwrap_or(0);
    Ok(Reply::With(Box::new(move |ctx| {
        // SAFETY: replies go to the context of the command being executed.
        unsafe { reply_info(ctx, available, &holders, &wanted) }
    })))
}

/// A map in RESP3, a flat field/value array in RESP2 (holders likewise).
unsafe fn reply_info(ctx: Ctx, available: i64, holders: &[Shown], wanted: &[i64]) -> c_int {
    // SAFETY: as the caller promises, `ctx` is the command's.
    let out = unsafe { Out::new(ctx) };
    out.map(3);
    out.int_field(b"available", available);
    out.text(b"holders");
    out.array(holders.len());
    for h in holders {
        out.map(5);
        out.text_field(b"owner", &h.owner);
        out.int_field(b"permits", h.permits);
        out.int_field(b"ttl", h.ttl);
        out.int_field(b"token", h.token);
        out.int_or_nil_field(b"watchdog", h.watchdog.map(|c| c as i64));
    }
    out.text(b"waiters");
    out.array(wanted.len());
    for n in wanted {
        out.int(*n);
    }
    crate::api::OK
}

crate::reply::entry_points!(
    acquire_command => acquire,
    release_command => release,
    release_many_command => release_many,
    renew_command => renew,
    set_permits_command => set_permits,
    add_permits_command => add_permits,
    info_command => info,
);
