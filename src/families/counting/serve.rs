//! Serving a counting semaphore's queue: requests at the head take their permits while they
//! fit, each grant a plain `INCRBY key -n` (the count is all there is to write).

use crate::api::{bytes, now_ms, Ctx, RStr};
use crate::config;
use crate::counter;
use crate::error::{Error, Result};
use crate::kinds::Want;
use crate::lifetime;
use crate::queue::{self, Admission, Request, Verdict};
use crate::stats;
use crate::watch::serve_other_family;

use super::rules::{remembered_call, Call, COUNTING};

/// The count as the queue asks it: the head's request enters when it fits.
struct Unowned {
    ctx: Ctx,
    db: i32,
    key: RStr,
    available: i64,
}

impl Admission for Unowned {
    fn admit(&mut self, want: Want) -> Verdict {
        match want.amount_if(COUNTING) {
            Some(wanted) if wanted <= self.available => Verdict::Enter,
            _ => Verdict::Wait,
        }
    }

    fn enter(&mut self, ask: &Request, want: Want) -> Result<i64> {
        let Some(wanted) = want.amount_if(COUNTING) else {
            return Err(Error::Internal);
        };
        self.available = take(self.ctx, (self.db, self.key), wanted, ask.id)?;
        stats::HANDOFFS.add();
        Ok(wanted)
    }
}

/// Takes `wanted` permits (`INCRBY key -wanted`): the count left. A request id remembers the
/// grant, so that its retry answers as the first call (or the wait's message) did.
pub fn take(ctx: Ctx, (db, key): (i32, RStr), wanted: i64, id: Option<&[u8]>) -> Result<i64> {
    let left = counter::add(ctx, key, -wanted)?;
    if let Some(id) = id {
        let call = remembered_call(db, bytes(key), Call::Acquire, id);
        let window = config::retry_window_ms();
        lifetime::with_released(|r| r.remember(call, wanted, now_ms(), window));
    }
    stats::ACQUISITIONS.add();
    Ok(left)
}

/// Lets in the waiters at the head of the key's queue whose requests fit `available`, in
/// order. Returns the count left. A waiter of another family at the head (the owned
/// semaphore shares this layout) is that family's to serve.
pub fn serve(ctx: Ctx, db: i32, key: RStr, available: i64) -> i64 {
    let name = bytes(key);
    let mut unowned = Unowned {
        ctx,
        db,
        key,
        available,
    };
    queue::serve(db, name, &mut unowned);
    serve_other_family(ctx, db, name, |want| want.word == COUNTING);
    unowned.available
}

/// Looks at the count from a timer (a Redisson release, a `DEL`, a departure from the queue):
/// lets in whom it fits; a key that now holds another type fails its waiters.
pub fn check(ctx: Ctx, db: i32, key: RStr) {
    match counter::get(ctx, key) {
        Ok(count) => {
            serve(ctx, db, key, count.unwrap_or(0));
        }
        Err(error) => queue::fail_all_with(db, bytes(key), error),
    }
}
