//! Wait deadlines: a timer wakes the event loop at each. Redis 7.0 notices a blocked client's
//! timeout only in `beforeSleep`, which otherwise may run ~100 ms late; a `NOTIFY` waiter's
//! deadline is the module's own to keep.

use super::deliver::time_out;
use super::registry::{serve_departed, with, Registry};
use super::waiter::{Via, Waiter};
use crate::api::{create_timer, guarded, now_ms, stop_timer, Ctx};
use std::cmp::Reverse;
use std::os::raw::c_void;
use std::ptr::null_mut;

pub(super) fn arm_wake_timer(ctx: Ctx, r: &mut Registry) {
    let Some(&Reverse((next, _))) = r.deadlines.peek() else {
        return;
    };
    match r.wake_timer {
        Some((_, armed)) if armed <= next => return,
        Some((timer, _)) => {
            stop_timer(ctx, timer);
        }
        None => {}
    }
    r.wake_timer = Some((
        create_timer(ctx, next, Some(on_wake_timer), null_mut()),
        next,
    ));
}

/// At a wait deadline: a `NOTIFY` waiter is told its time ran out; for a blocked one, the
/// event loop's turn is enough (its beforeSleep times the client out).
extern "C" fn on_wake_timer(ctx: Ctx, _data: *mut c_void) {
    guarded("the wait deadline timer", (), || {
        let timed_out = with(|r| {
            r.wake_timer = None;
            let now = now_ms();
            let mut timed_out = Vec::new();
            while let Some(&Reverse((at, seq))) = r.deadlines.peek() {
                if at > now {
                    break;
                }
                r.deadlines.pop();
                // A retry that took the entry over may have moved its deadline.
                let due =
                    |w: &Waiter| w.via == Via::Message && w.deadline.is_some_and(|d| d <= now);
                if r.waiters.get(seq).is_some_and(due) {
                    timed_out.extend(r.depart(seq));
                }
            }
            arm_wake_timer(ctx, r);
            timed_out
        });
        timed_out.into_iter().for_each(time_out);
        serve_departed(ctx);
    })
}
