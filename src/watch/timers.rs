//! Keys looked at again at given times, on one module timer.

use crate::api::{create_timer, stop_timer, Ctx, TimerId};
use redis_module::raw;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::Hash;
use std::ptr::null_mut;
use std::rc::Rc;

pub type Target = (i32, Rc<[u8]>);

/// Looks at keys again at given times: one module timer for all of them, at the earliest, over
/// a heap of (time, key); per key only the earliest time counts (a later one is dropped, an
/// earlier one replaces it). A timer per key would cost Redis a timer and the module a boxed
/// copy of the key for every lock that has waiters.
pub struct KeyTimers<T = Target> {
    /// The time each key is to be looked at.
    armed: HashMap<T, i64>,
    /// (time, key), with entries left behind by a replaced time (skipped: `armed` differs).
    due: BinaryHeap<Reverse<(i64, T)>>,
    timer: Option<(TimerId, i64)>,
}

impl<T> Default for KeyTimers<T> {
    fn default() -> Self {
        KeyTimers {
            armed: HashMap::new(),
            due: BinaryHeap::new(),
            timer: None,
        }
    }
}

impl<T: Clone + Eq + Hash + Ord> KeyTimers<T> {
    /// Makes sure `target` is looked at by `callback` at `fire_at` or earlier (None: not at
    /// all).
    pub fn arm(
        &mut self,
        ctx: Ctx,
        target: T,
        fire_at: Option<i64>,
        callback: raw::RedisModuleTimerProc,
    ) {
        let Some(at) = fire_at else {
            self.armed.remove(&target);
            return;
        };
        if self.armed.get(&target).is_some_and(|&armed| armed <= at) {
            return;
        }
        self.armed.insert(target.clone(), at);
        self.due.push(Reverse((at, target)));
        self.rearm(ctx, callback);
    }

    /// Arms the module timer for the earliest key left.
    pub fn rearm(&mut self, ctx: Ctx, callback: raw::RedisModuleTimerProc) {
        while let Some(Reverse((at, target))) = self.due.peek() {
            if self.armed.get(target) == Some(at) {
                break;
            }
            self.due.pop();
        }
        let Some(&Reverse((next, _))) = self.due.peek() else {
            return;
        };
        match self.timer {
            Some((_, armed)) if armed <= next => return,
            Some((timer, _)) => {
                stop_timer(ctx, timer);
            }
            None => {}
        }
        self.timer = Some((create_timer(ctx, next, callback, null_mut()), next));
    }

    /// The module timer fired: takes the keys due by `now`.
    pub fn fired(&mut self, now: i64) -> Vec<T> {
        self.timer = None;
        let mut targets = Vec::new();
        while let Some(Reverse((at, _))) = self.due.peek() {
            if *at > now {
                break;
            }
            let Some(Reverse((at, target))) = self.due.pop() else {
                break;
            };
            if self.armed.get(&target) == Some(&at) {
                self.armed.remove(&target);
                targets.push(target);
            }
        }
        targets
    }
}
