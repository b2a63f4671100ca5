//! Clients blocked in `RLOCK.ACQUIRE ... WAIT`: one FIFO queue per (db, key), and every
//! blocked-client and timer call of the module.
//!
//! Ownership rule: a waiter is in `Registry::waiters` exactly while nobody has called
//! `RedisModule_UnblockClient` for it. Whoever removes it (a grant, its timeout, its
//! disconnect) makes that one call; a callback that finds it gone does nothing more, which is
//! what keeps a late disconnect of an already granted client from unblocking it twice.

use crate::api::{
    api, create_timer, guarded, now_ms, stop_timer, Ctx, OwnedStr, RStr, TimerId, ERR,
};
use crate::args::Wait;
use crate::error::Error;
use crate::lock::Want;
use crate::stats;
use redis_module::raw;
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::os::raw::{c_int, c_void};
use std::ptr::null_mut;
use std::rc::Rc;

type Bc = *mut raw::RedisModuleBlockedClient;

/// What a blocked client is told when it leaves the queue other than by timing out.
pub enum Outcome {
    Granted(i64),
    Failed(Error),
}

/// What a waiter asks for: a holding of some lock type and access (`want`) for an owner. The
/// queue is the same for every lock type; each type's rules decide whom at its head to admit.
pub struct Ask {
    pub want: Want,
    pub owner: OwnedStr,
    pub lease_ms: i64,
    /// The waiter's connection, to bind its holding to (`WATCHDOG`).
    pub bind_to: Option<u64>,
    pub id: Option<Box<[u8]>>,
    pub max_hold_ms: Option<i64>,
}

impl Ask {
    /// A waiter for `want`, asking what `request` asks.
    pub fn new(want: Want, request: &Request) -> Ask {
        Ask {
            want,
            owner: OwnedStr::hold(request.owner),
            lease_ms: request.lease_ms,
            bind_to: request.bind_to,
            id: request.id.map(Box::from),
            max_hold_ms: request.max_hold_ms,
        }
    }

    pub fn request(&self) -> Request<'_> {
        Request {
            owner: self.owner.0,
            lease_ms: self.lease_ms,
            bind_to: self.bind_to,
            id: self.id.as_deref(),
            max_hold_ms: self.max_hold_ms,
        }
    }
}

/// A request for a holding, borrowed from a command's arguments or a waiter's `Ask`.
pub struct Request<'a> {
    pub owner: RStr,
    pub lease_ms: i64,
    /// The connection to bind the holding to (`WATCHDOG`).
    pub bind_to: Option<u64>,
    pub id: Option<&'a [u8]>,
    pub max_hold_ms: Option<i64>,
}

pub struct Waiter {
    seq: u64,
    db: i32,
    key: Rc<[u8]>,
    pub ask: Ask,
}

#[derive(Default)]
struct Queue {
    /// (seq, blocked client) in arrival order. Entries of waiters that left early stay until
    /// they reach the front or the queue is compacted; `seq` tells them from a new waiter
    /// whose blocked client happens to reuse the address.
    order: VecDeque<(u64, usize)>,
    live: usize,
}

#[derive(Default)]
struct Registry {
    waiters: HashMap<usize, Waiter>,
    queues: HashMap<i32, HashMap<Rc<[u8]>, Queue>>,
    next_seq: u64,
    /// Wait deadlines, to wake the event loop at each: Redis 7.0 notices a blocked client's
    /// timeout only in `beforeSleep`, which otherwise may run ~100 ms late. Deadlines of
    /// waiters that left early just cause one harmless extra wakeup.
    deadlines: BinaryHeap<Reverse<i64>>,
    wake_timer: Option<(TimerId, i64)>,
}

thread_local! {
    // Redis calls every callback of this module on its main thread.
    static REGISTRY: RefCell<Registry> = RefCell::default();
}

/// Runs `f` on the registry. `f` must not call back into code that uses the registry.
fn with<R>(f: impl FnOnce(&mut Registry) -> R) -> R {
    REGISTRY.with(|r| f(&mut r.borrow_mut()))
}

pub fn count(db: i32, key: &[u8]) -> usize {
    with(|r| {
        r.queues
            .get(&db)
            .and_then(|q| q.get(key))
            .map_or(0, |q| q.live)
    })
}

pub fn total() -> usize {
    with(|r| r.waiters.len())
}

pub fn locks_with_waiters() -> usize {
    with(|r| r.queues.values().map(HashMap::len).sum())
}

/// The keys with waiters in `db`, or in every db.
pub fn queued_keys(db: Option<i32>) -> Vec<(i32, Rc<[u8]>)> {
    with(|r| {
        r.queues
            .iter()
            .filter(|(d, _)| db.is_none_or(|db| db == **d))
            .flat_map(|(d, q)| q.keys().map(move |k| (*d, k.clone())))
            .collect()
    })
}

/// What the first live waiter of (db, key) asks for, if anyone waits.
pub fn next_want(db: i32, key: &[u8]) -> Option<Want> {
    with(|r| {
        let queue = r.queues.get(&db)?.get(key)?;
        queue.order.iter().find_map(|(seq, bc)| {
            r.waiters
                .get(bc)
                .filter(|w| w.seq == *seq)
                .map(|w| w.ask.want)
        })
    })
}

/// What every live waiter of (db, key) asks for, in queue order (O(queue length): for INFO).
pub fn wants(db: i32, key: &[u8]) -> Vec<Want> {
    with(|r| {
        let Some(queue) = r.queues.get(&db).and_then(|q| q.get(key)) else {
            return Vec::new();
        };
        queue
            .order
            .iter()
            .filter_map(|(seq, bc)| r.waiters.get(bc).filter(|w| w.seq == *seq))
            .map(|w| w.ask.want)
            .collect()
    })
}

/// How many live waiters of (db, key) want `want` (O(queue length): for `INFO` replies).
pub fn count_wanting(db: i32, key: &[u8], want: Want) -> usize {
    with(|r| {
        let Some(queue) = r.queues.get(&db).and_then(|q| q.get(key)) else {
            return 0;
        };
        queue
            .order
            .iter()
            .filter(|(seq, bc)| {
                r.waiters
                    .get(bc)
                    .is_some_and(|w| w.seq == *seq && w.ask.want == want)
            })
            .count()
    })
}

/// Blocks the calling client at the back of the queue for (db, key).
pub fn block(ctx: Ctx, db: i32, key: &[u8], ask: Ask, wait: Wait) {
    let timeout_ms = match wait {
        Wait::Forever => 0,
        Wait::Ms(ms) => ms,
    };
    // SAFETY: called from a command that may block (the caller checked the context flags).
    // The handle stays valid until our single UnblockClient call (see the module doc).
    let bc = unsafe {
        let bc = api!(RedisModule_BlockClient)(
            ctx,
            Some(on_reply),
            Some(on_timeout),
            Some(free_outcome),
            timeout_ms,
        );
        api!(RedisModule_SetDisconnectCallback)(bc, Some(on_disconnect));
        bc
    };
    with(|r| {
        let seq = r.next_seq;
        r.next_seq += 1;
        let queues = r.queues.entry(db).or_default();
        // One shared copy of the key name for the queue and all its waiters.
        let key = queues
            .get_key_value(key)
            .map_or_else(|| Rc::from(key), |(k, _)| k.clone());
        let queue = queues.entry(key.clone()).or_default();
        queue.order.push_back((seq, bc as usize));
        queue.live += 1;
        r.waiters.insert(bc as usize, Waiter { seq, db, key, ask });
        if let Wait::Ms(ms) = wait {
            r.deadlines.push(Reverse(now_ms() + ms + 1));
            arm_wake_timer(ctx, r);
        }
    });
}

/// Takes the first live waiter of (db, key) out of the queue: the caller grants or fails it
/// and must `deliver` to its blocked client.
pub fn pop_next(db: i32, key: &[u8]) -> Option<(Bc, Waiter)> {
    with(|r| {
        let Registry {
            waiters, queues, ..
        } = r;
        let queue = queues.get_mut(&db)?.get_mut(key)?;
        let mut found = None;
        while let Some((seq, bc)) = queue.order.pop_front() {
            if waiters.get(&bc).is_some_and(|w| w.seq == seq) {
                found = waiters.remove(&bc).map(|w| (bc as Bc, w));
                queue.live -= 1;
                break;
            }
        }
        if queue.live == 0 {
            drop_queue(r, db, key);
        }
        found
    })
}

/// Takes a waiter out because its client timed out or went away.
fn remove(bc: Bc) -> Option<Waiter> {
    with(|r| {
        let waiter = r.waiters.remove(&(bc as usize))?;
        let (db, key) = (waiter.db, waiter.key.clone());
        let queue = r.queues.get_mut(&db).and_then(|q| q.get_mut(&key))?;
        queue.live -= 1;
        if queue.live == 0 {
            drop_queue(r, db, &key);
        } else if queue.order.len() > 2 * queue.live + 16 {
            let waiters = &r.waiters;
            queue
                .order
                .retain(|(seq, bc)| waiters.get(bc).is_some_and(|w| w.seq == *seq));
        }
        Some(waiter)
    })
}

fn drop_queue(r: &mut Registry, db: i32, key: &[u8]) {
    let Some(queues) = r.queues.get_mut(&db) else {
        return;
    };
    queues.remove(key);
    if queues.is_empty() {
        r.queues.remove(&db);
    }
}

/// Unblocks a client taken out with `pop_next`, with what it is to be told.
pub fn deliver(bc: Bc, outcome: Outcome) {
    let outcome = Box::into_raw(Box::new(outcome));
    // SAFETY: `bc` was taken out of the registry by the caller, so this is its one
    // UnblockClient; Redis hands `outcome` to `on_reply` and then to `free_outcome`.
    unsafe { api!(RedisModule_UnblockClient)(bc, outcome.cast()) };
}

/// Fails every waiter of (db, key): the key now holds another type.
pub fn fail_all(db: i32, key: &[u8]) {
    while let Some((bc, _)) = pop_next(db, key) {
        deliver(bc, Outcome::Failed(Error::WrongType));
    }
}

fn arm_wake_timer(ctx: Ctx, r: &mut Registry) {
    let Some(&Reverse(next)) = r.deadlines.peek() else {
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

extern "C" fn on_wake_timer(ctx: Ctx, _data: *mut c_void) {
    // Nothing to do but let the event loop turn: its beforeSleep times the clients out.
    guarded("the wait deadline timer", (), || {
        with(|r| {
            r.wake_timer = None;
            let now = now_ms();
            while r.deadlines.peek().is_some_and(|&Reverse(at)| at <= now) {
                r.deadlines.pop();
            }
            arm_wake_timer(ctx, r);
        })
    })
}

fn reply_outcome(ctx: Ctx) -> c_int {
    // SAFETY: the private data, if any, is the `Outcome` boxed by `deliver`, alive until
    // `free_outcome`.
    unsafe {
        let outcome = api!(RedisModule_GetBlockedClientPrivateData)(ctx).cast::<Outcome>();
        match outcome.as_ref() {
            Some(Outcome::Granted(token)) => api!(RedisModule_ReplyWithLongLong)(ctx, *token),
            Some(Outcome::Failed(error)) => {
                api!(RedisModule_ReplyWithError)(ctx, error.to_cstring().as_ptr())
            }
            None => api!(RedisModule_ReplyWithNull)(ctx),
        }
    }
}

extern "C" fn on_reply(ctx: Ctx, _argv: *mut RStr, _argc: c_int) -> c_int {
    guarded("a waiter's reply", ERR, || reply_outcome(ctx))
}

/// Called when the wait times out and for `CLIENT UNBLOCK`.
extern "C" fn on_timeout(ctx: Ctx, _argv: *mut RStr, _argc: c_int) -> c_int {
    guarded("a waiter's timeout", ERR, || {
        // SAFETY: a timeout callback's context carries its blocked client.
        let bc = unsafe { api!(RedisModule_GetBlockedClientHandle)(ctx) };
        match remove(bc) {
            Some(_) => {
                stats::WAIT_TIMEOUTS.add();
                // SAFETY: just taken out of the registry: this is its one UnblockClient,
                // which Redis needs to free a plain blocked client that timed out.
                unsafe {
                    api!(RedisModule_UnblockClient)(bc, null_mut());
                    api!(RedisModule_ReplyWithNull)(ctx)
                }
            }
            // Granted in this same event-loop turn, just before the deadline: tell it so.
            None => reply_outcome(ctx),
        }
    })
}

extern "C" fn on_disconnect(_ctx: Ctx, bc: Bc) {
    guarded("a waiter's disconnect", (), || {
        if remove(bc).is_some() {
            // SAFETY: just taken out of the registry: this is its one UnblockClient.
            unsafe { api!(RedisModule_UnblockClient)(bc, null_mut()) };
        }
    })
}

extern "C" fn free_outcome(_ctx: Ctx, outcome: *mut c_void) {
    if !outcome.is_null() {
        // SAFETY: private data is only ever a boxed `Outcome` from `deliver`, freed once here.
        drop(unsafe { Box::from_raw(outcome.cast::<Outcome>()) });
    }
}
