//! What upkeep asks of the counting semaphore (the family contract): serving its queue when a
//! timer looks at its key. Its permits belong to nobody, so there is nothing to renew or end.

use crate::api::{select, Ctx};
use crate::families::contract::Family;
use crate::kinds::{LockType, Word};

pub struct Counting;

impl Family for Counting {
    fn words(&self) -> &'static [&'static Word] {
        &[super::rules::COUNTING]
    }

    fn kind(&self) -> Option<LockType> {
        None
    }

    fn check(&self, ctx: Ctx, db: i32, key: &[u8]) {
        let name = select(ctx, db, key);
        super::serve::check(ctx, db, name.0);
    }
}
