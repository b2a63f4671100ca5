//! The one loop that lets waiters in, for every family: the queue keeps the order and tells
//! each waiter its outcome; the family's rules, asked through `Admission`, say who may enter
//! and write the holding. Every event that can let someone in (a release, a lease end, a
//! departure from the queue, permits added, a key deleted) ends in `serve`.

use super::ask::Request;
use super::deliver::deliver;
use super::registry::{next_head, serve_departed, take_head, with};
use super::waiter::Outcome;
use crate::api::RStr;
use crate::error::{Error, Result};
use crate::kinds::Want;
use crate::notify;
use std::rc::Rc;

/// What a family says of the waiter at the head of its queue.
pub enum Verdict {
    /// It may enter now.
    Enter,
    /// It must wait (and so must everyone behind it: nobody passes the head).
    Wait,
    /// It can never enter here (the key holds another type now): it leaves with the error.
    Fail(Error),
}

/// A family's rules over one opened key, as the queue asks them.
pub trait Admission {
    /// May the head, asking for `want`, enter now?
    fn admit(&mut self, want: Want) -> Verdict;
    /// Lets the head in: writes its holding and returns what it is told (its token), or why it
    /// cannot have it after all.
    fn enter(&mut self, ask: &Request, want: Want) -> Result<i64>;
    /// May a request by `owner` for all of `keys` at once (this queue's key among them), which
    /// heads every one of their queues, enter now? Only the plain lock takes such requests.
    fn admit_all(&mut self, _owner: RStr, _keys: &[Rc<[u8]>]) -> Verdict {
        Verdict::Fail(Error::WrongType)
    }
    /// Lets such a request in: a holding of each key, their tokens in the keys' order.
    fn enter_all(&mut self, _ask: &Request, _keys: &[Rc<[u8]>]) -> Result<Vec<i64>> {
        Err(Error::WrongType)
    }
}

/// Lets waiters in from the head of (db, key)'s queue for as long as `family` admits them, in
/// queue order. Returns how many entered.
pub fn serve(db: i32, key: &[u8], family: &mut impl Admission) -> usize {
    let mut entered = 0;
    while let Some((want, group)) = next_head(db, key) {
        let verdict = match &group {
            Some(group) if !with(|r| r.heads_all(group)) => break,
            Some(group) => {
                let owner = with(|r| r.waiters.get(group.lead()).map(|w| w.ask.owner.0));
                match owner {
                    Some(owner) => family.admit_all(owner, &group.keys),
                    None => break,
                }
            }
            None => family.admit(want),
        };
        if matches!(verdict, Verdict::Wait) {
            break;
        }
        let Some(waiter) = take_head(db, key) else {
            break;
        };
        let outcome = match (verdict, &group) {
            (Verdict::Fail(error), _) => Outcome::Failed(error),
            (_, Some(group)) => match family.enter_all(&waiter.ask.request(), &group.keys) {
                Ok(tokens) => {
                    entered += 1;
                    Outcome::GrantedAll(tokens)
                }
                Err(error) => Outcome::Failed(error),
            },
            (_, None) => match family.enter(&waiter.ask.request(), want) {
                Ok(told) => {
                    entered += 1;
                    Outcome::Granted(told)
                }
                Err(error) => Outcome::Failed(error),
            },
        };
        deliver(waiter, outcome);
    }
    // A request for several keys that left headed other queues too.
    serve_departed(notify::own_ctx());
    entered
}
