//! `RSEM.RELEASEMANY key ALL|ANY owner [owner ...]`: gives back every permit of several owners
//! in one call (Redisson's `release(List)` all or none, `tryRelease(List)` those still held),
//! serving the queue and telling Redisson's waiters once for the whole call.

use crate::api::{bytes, Ctx, RStr};
use crate::args;
use crate::error::{Error, Result};
use crate::holdings;
use crate::lifetime;
use crate::reply::{run, Reply};
use crate::stats;

use super::commands::open_settled;
use super::family::semaphore_changed;
use super::rules::Holding;
use super::serve::give_back;
use std::collections::HashSet;
use std::os::raw::c_int;

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

/// Replies how many owners gave their permits back. An owner holds once: named again, it
/// counts as not holding (with `ALL`, an error). Owners whose lease ended hold nothing.
fn release_many(ctx: Ctx, argv: &[RStr]) -> Result<Reply> {
    let [_, key, mode, owners @ ..] = argv else {
        return Err(Error::WrongArity);
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
    let mut held: Vec<(&[u8], Holding)> = Vec::new();
    let mut named = HashSet::new();
    for owner in owners {
        let again = !named.insert(owner);
        match sem.holding(owner)?.filter(|_| !again) {
            Some(holding) => held.push((owner, holding)),
            None if all => return Err(Error::NotHeld(String::from_utf8_lossy(owner).into())),
            None => {}
        }
    }
    if held.is_empty() {
        return Ok(Reply::Int(0));
    }
    let name = bytes(*key);
    for (owner, _) in &held {
        sem.remove_holding(owner);
        lifetime::with_watchdog(|w| w.unbind(db, name, owner));
        holdings::released(db, name, owner);
        holdings::tell_change(ctx, name, c"rsem.released");
        stats::RELEASES.add();
    }
    give_back(ctx, &mut sem, held.iter().map(|(_, h)| h.permits).sum())?;
    semaphore_changed(ctx, db, &mut sem);
    Ok(Reply::Int(held.len() as i64))
}

crate::reply::entry_points!(release_many_command => release_many);
