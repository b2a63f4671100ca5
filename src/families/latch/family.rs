//! What upkeep asks of the latch (the family contract): opening it for its waiters when a
//! timer looks at its key. A latch has no holders, so nothing to renew or end.

use crate::api::{select, Ctx};
use crate::families::contract::Family;
use crate::kinds::{LockType, Word};

pub struct Latch;

impl Family for Latch {
    fn words(&self) -> &'static [&'static Word] {
        &[super::serve::WANT.word]
    }

    fn kind(&self) -> Option<LockType> {
        None
    }

    fn check(&self, ctx: Ctx, db: i32, key: &[u8]) {
        let name = select(ctx, db, key);
        super::serve::open(ctx, db, name.0);
    }
}
