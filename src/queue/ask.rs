//! What a waiter asks for (`Ask`, kept in the queue) and the request it stands for when its
//! turn comes (`Request`, also built straight from a command's arguments).

use crate::api::{OwnedStr, RStr};
use crate::kinds::Want;
use std::num::NonZeroU64;

/// What a waiter asks for: a holding of some lock type and access (`want`) for an owner. The
/// queue is the same for every lock type; each type's rules decide whom at its head to admit.
/// Kept small: a waiter told by message costs only this and its queue slot.
pub struct Ask {
    pub want: Want,
    pub owner: OwnedStr,
    lease_ms: i64,
    /// The waiter's connection, to bind its holding to (`WATCHDOG`).
    pub(super) bind_to: Option<NonZeroU64>,
    pub id: Option<Box<[u8]>>,
    /// `MAXHOLD`, `LOCKDELAY` and `EACH`, boxed: rarely given, and a waiter is kept small.
    limits: Option<Box<Limits>>,
    /// The connection told of the grant by message (`NOTIFY`), and of the holding's loss.
    pub(super) notify: Option<NonZeroU64>,
}

impl Ask {
    /// A waiter for `want`, asking what `request` asks. A `NOTIFY` waiter's holding binds to
    /// the connection its grant is told to.
    pub fn new(want: Want, request: &Request) -> Ask {
        Ask {
            want,
            owner: OwnedStr::hold(request.owner),
            lease_ms: request.lease_ms,
            bind_to: request
                .bind_to
                .map(|caller| request.notify.unwrap_or(caller))
                .and_then(NonZeroU64::new),
            id: request.id.map(Box::from),
            limits: (request.max_hold_ms.is_some()
                || request.lock_delay_ms.is_some()
                || request.each)
                .then(|| {
                    Box::new(Limits {
                        max_hold_ms: request.max_hold_ms,
                        lock_delay_ms: request.lock_delay_ms,
                        each: request.each,
                    })
                }),
            notify: request.notify.and_then(NonZeroU64::new),
        }
    }

    /// The same request's place in one more queue (a request for several keys): its owner and
    /// want, for the queue's rules and deadlock detection; the rest stays with the lead.
    pub(super) fn member(&self) -> Ask {
        Ask {
            want: self.want,
            owner: OwnedStr::hold(self.owner.0),
            lease_ms: self.lease_ms,
            bind_to: None,
            id: None,
            limits: None,
            notify: None,
        }
    }

    /// A latch waiter (asking for `want`): no owner, nothing to hold.
    pub fn latch(want: Want, notify: Option<u64>) -> Ask {
        Ask {
            want,
            owner: OwnedStr::new(b""),
            lease_ms: 0,
            bind_to: None,
            id: None,
            limits: None,
            notify: notify.and_then(NonZeroU64::new),
        }
    }

    /// The connection told by message (`NOTIFY`), if any.
    pub fn notify(&self) -> Option<u64> {
        self.notify.map(NonZeroU64::get)
    }

    pub fn request(&self) -> Request<'_> {
        Request {
            owner: self.owner.0,
            lease_ms: self.lease_ms,
            bind_to: self.bind_to.map(NonZeroU64::get),
            id: self.id.as_deref(),
            max_hold_ms: self.limits.as_ref().and_then(|l| l.max_hold_ms),
            lock_delay_ms: self.limits.as_ref().and_then(|l| l.lock_delay_ms),
            each: self.limits.as_ref().is_some_and(|l| l.each),
            notify: self.notify(),
            by_message: self.notify.is_some(),
        }
    }
}

struct Limits {
    max_hold_ms: Option<i64>,
    lock_delay_ms: Option<i64>,
    each: bool,
}

/// A request for a holding, borrowed from a command's arguments or a waiter's `Ask`.
pub struct Request<'a> {
    pub owner: RStr,
    pub lease_ms: i64,
    /// The connection to bind the holding to (`WATCHDOG`).
    pub bind_to: Option<u64>,
    pub id: Option<&'a [u8]>,
    pub max_hold_ms: Option<i64>,
    /// `LOCKDELAY` (RLOCK): how long nobody gets the lock after this holding's lease ends.
    pub lock_delay_ms: Option<i64>,
    /// `EACH` (RSEM): the permits are granted as holdings of one permit each, `<owner>:<i>`.
    pub each: bool,
    /// The connection told of the holding's loss (`NOTIFY`).
    pub notify: Option<u64>,
    /// The grant is told by a message, which a client library may drop: a watchdog binding
    /// renews only once the owner confirms with `RENEW ... WATCHDOG`.
    pub by_message: bool,
}
