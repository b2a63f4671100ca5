//! `RSEM.ACQUIRE ... EACH`: n permits granted as n holdings of one permit each, owners
//! `<owner>:1` ... `<owner>:<n>`, all at once under the grant's one token. Redisson's
//! `RPermitExpirableSemaphore` hands out one permit id per permit, each released or expiring
//! on its own; our client maps each id to one such owner. The grant itself is `serve`'s
//! (`grant_each`), beside the one for a single owner.

use crate::error::{Error, Result};

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
