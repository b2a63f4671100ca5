//! `RSEM.ACQUIRE ... EACH`: n permits granted as n holdings of one permit each, owners
//! `<owner>:1` ... `<owner>:<n>`, all at once under the grant's one token. Redisson's
//! `RPermitExpirableSemaphore` hands out one permit id per permit, each released or expiring
//! on its own; our client maps each id to one such owner.

use crate::api::{bytes, now_ms};
use crate::clock::{issue_token, lease_end};
use crate::config;
use crate::error::{Error, Result};
use crate::lifetime::retries::{Kind, Memory};
use crate::queue::Request;
use crate::stats;

use super::rules::Holding;
use super::serve::{cap_from, put_holding, Written};
use super::store::Semaphore;

/// The owner of the `i`-th (from 1) of the permits `owner` asked for with `EACH`.
pub fn each_owner(owner: &[u8], i: i64) -> Vec<u8> {
    [owner, b":", i.to_string().as_bytes()].concat()
}

/// The owner that keeps an `EACH` request's id (and so answers its retry).
pub fn id_keeper(owner: &[u8]) -> Vec<u8> {
    each_owner(owner, 1)
}

/// Refuses a grant of `n` permits to `owner` with `EACH` when any of its owners holds already
/// (no re-entry: each permit is one holding, released on its own).
pub fn check_none_hold(sem: &Semaphore, owner: &[u8], n: i64) -> Result<()> {
    for i in 1..=n {
        let each = each_owner(owner, i);
        if sem.holding(&each)?.is_some() {
            return Err(Error::EachHeld(String::from_utf8_lossy(&each).into_owned()));
        }
    }
    Ok(())
}

/// Takes `permits` for `ask`'s owner as that many holdings of one permit, all under one new
/// token, each with the same lease and cap; its request id is kept on the first. Returns the
/// token and the lease end.
pub fn grant_each(db: i32, sem: &mut Semaphore, ask: &Request, permits: i64) -> Result<(i64, i64)> {
    let owner = bytes(ask.owner);
    check_none_hold(sem, owner, permits)?;
    let now = now_ms();
    let cap = cap_from(ask, now);
    let token = issue_token();
    sem.add_available(-permits)?;
    let holding = Holding {
        permits: 1,
        token,
        expire_at: lease_end(now, ask.lease_ms, cap),
        cap,
    };
    let ids = ask.id.map(|id| {
        let mut memory = Memory::default();
        memory.remember(Kind::Acquire, id, token, now, config::retry_window_ms());
        memory.encode()
    });
    for i in 1..=permits {
        let each = each_owner(owner, i);
        let written = Written {
            owner: &each,
            holding: &holding,
            ids: ids.as_deref().filter(|_| i == 1),
            fresh: true,
        };
        put_holding(db, sem, ask, written);
    }
    stats::ACQUISITIONS.add();
    Ok((token, holding.expire_at))
}
