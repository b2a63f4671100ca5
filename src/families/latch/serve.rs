//! Serving a latch's queue: once its count is gone or down to 0, every waiter is let in at
//! once (each is told 1); a key that now holds something else fails them.

use crate::api::{bytes, Ctx, RStr};
use crate::counter;
use crate::error::{Error, Result};
use crate::kinds::{Want, Word};
use crate::queue::{self, Admission, Request, Verdict};

/// What a latch waiter asks for, by the word its messages name it.
pub const WANT: Want = Want::one(&Word("latch"));

/// An open latch (or the error its key gives), as the queue asks it.
struct Opened(Option<Error>);

impl Admission for Opened {
    fn admit(&mut self, want: Want) -> Verdict {
        match (&self.0, want) {
            (_, want) if want != WANT => Verdict::Wait,
            (Some(error), _) => Verdict::Fail(error.clone()),
            (None, _) => Verdict::Enter,
        }
    }

    fn enter(&mut self, _ask: &Request, _want: Want) -> Result<i64> {
        Ok(1)
    }
}

/// Opens the latch at `key` for its waiters if its count is gone or down to 0.
pub fn open(ctx: Ctx, db: i32, key: RStr) {
    let mut opened = match counter::get(ctx, key) {
        Ok(Some(count)) if count > 0 => return,
        Ok(_) => Opened(None),
        Err(error) => Opened(Some(error)),
    };
    queue::serve(db, bytes(key), &mut opened);
}
