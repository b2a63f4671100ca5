//! What every family does with a holding once granted: bind it to a watchdog connection (or
//! confirm a binding made by message), unbind a lock's holdings when it frees, tell the owners
//! that asked with `NOTIFY` of a loss, and tell Redisson's clients on their channels.

use crate::api::{api, now_ms, Ctx, OwnedStr};
use crate::config;
use crate::kinds::{LockType, Want};
use crate::lifetime::notices::Notice;
use crate::lifetime::watchdog::Bind;
use crate::lifetime::{with_notices, with_watchdog};
use crate::notify;
use crate::queue::Request;
use crate::store::{ONE, ZERO};
use redis_module::raw;
use std::cell::OnceCell;
use std::ffi::CStr;
use std::os::raw::c_int;
use std::rc::Rc;
use std::sync::atomic::Ordering;

/// A holding granted with `NOTIFY` is told of its loss on its grant channel.
pub fn tell_loss(db: i32, key: &[u8], holding: &Holding, ask: &Request, want: Want) {
    tell_loss_of(db, &Names::new(key, holding.owner), holding, ask, want);
}

/// `tell_loss`, with the key and owner copied at most once (`Names`).
pub fn tell_loss_of(db: i32, names: &Names, holding: &Holding, ask: &Request, want: Want) {
    if let (Some(client), Some(token)) = (ask.notify, holding.token) {
        let notice = Notice {
            owner: names.owner(),
            token,
            client,
            want,
        };
        with_notices(|n| n.watch(db, names.key(), notice));
    }
}

/// A holding's key and owner, copied to the heap once, when a map first keeps them, for all
/// that keep them: a grant with `WATCHDOG` and `NOTIFY` copied each for the watchdog and
/// again for the loss notices.
pub struct Names<'a> {
    key: (&'a [u8], OnceCell<Rc<[u8]>>),
    owner: (&'a [u8], OnceCell<Rc<[u8]>>),
}

impl<'a> Names<'a> {
    pub fn new(key: &'a [u8], owner: &'a [u8]) -> Names<'a> {
        Names {
            key: (key, OnceCell::new()),
            owner: (owner, OnceCell::new()),
        }
    }

    pub fn key(&self) -> Rc<[u8]> {
        let (bytes, made) = &self.key;
        made.get_or_init(|| Rc::from(*bytes)).clone()
    }

    /// The key's copy, if one was made.
    pub fn made_key(self) -> Option<Rc<[u8]>> {
        self.key.1.into_inner()
    }

    pub fn owner(&self) -> Rc<[u8]> {
        let (bytes, made) = &self.owner;
        made.get_or_init(|| Rc::from(*bytes)).clone()
    }
}

/// The owner ended its own holding: it is not told of a loss.
pub fn released(db: i32, key: &[u8], owner: &[u8]) {
    with_notices(|n| n.forget(db, key, owner));
}

/// Tells the owners of the lock's noticed holdings that they ended (`lost`).
fn lost_all(db: i32, key: &[u8]) {
    for notice in with_notices(|n| n.take_lock(db, key)) {
        notify::tell_lost(key, &notice);
    }
}

/// A holding to bind: of which lock type, whose, and which one (its token).
pub struct Holding<'a> {
    pub kind: LockType,
    pub owner: &'a [u8],
    pub token: Option<i64>,
}

/// Binds a holding of the lock at `key` to connection `client`, renewed for `lease_ms` (once
/// confirmed, for a grant told by message: `renewing` false).
pub fn bind(db: i32, key: &[u8], holding: Holding, client: u64, lease_ms: i64, renewing: bool) {
    let names = Names::new(key, holding.owner);
    bind_of(db, &names, holding, (client, lease_ms), renewing);
}

/// `bind`, with the key and owner copied at most once (`Names`).
pub fn bind_of(
    db: i32,
    names: &Names,
    holding: Holding,
    (client, lease_ms): (u64, i64),
    renewing: bool,
) {
    let bind = Bind {
        owner: names.owner(),
        token: holding.token,
        client,
        lease_ms,
        kind: holding.kind,
        renewing,
    };
    with_watchdog(|w| w.bind((db, names.key()), bind, now_ms()));
}

/// `RENEW ... WATCHDOG`: confirms a grant told by message (its binding stays on the connection
/// the grant was told to, and renewals start), or binds the holding to `client`.
pub fn bind_or_confirm(db: i32, key: &[u8], holding: Holding, client: u64, lease_ms: i64) {
    let lock = (db, Rc::from(key));
    let confirmed =
        with_watchdog(|w| w.confirm(lock, holding.owner, holding.token, lease_ms, now_ms()));
    if !confirmed {
        bind(db, key, holding, client, lease_ms, true);
    }
}

/// Binds a holding that has no binding yet (a re-entry with WATCHDOG); never moves one, which
/// only `RENEW ... WATCHDOG` does. Returns whether it bound.
pub fn bind_if_unbound(
    db: i32,
    key: &[u8],
    holding: Holding,
    client: u64,
    lease_ms: i64,
    renewing: bool,
) -> bool {
    let bound = with_watchdog(|w| w.get(db, key, holding.owner).is_some());
    if !bound {
        bind(db, key, holding, client, lease_ms, renewing);
    }
    !bound
}

/// Ends every watchdog binding of the lock (it is free, or a new holding replaces the old);
/// the owners told of a loss hear of it.
pub fn unbind(db: i32, key: &[u8]) {
    with_watchdog(|w| w.unbind_lock(db, key));
    lost_all(db, key);
}

/// Tells the subscribers of keyspace events of the module class (`d` in
/// `notify-keyspace-events`) that who holds `key` changed: `event` is one of the names
/// docs/operations.md lists (`rlock.acquired`, `rlock.released`, ...). Nothing is built
/// unless the class is on.
pub fn tell_change(ctx: Ctx, key: &[u8], event: &CStr) {
    let class = raw::REDISMODULE_NOTIFY_MODULE as c_int;
    // SAFETY: reads the server's setting.
    if unsafe { api!(RedisModule_GetNotifyKeyspaceEvents)() } & class == 0 {
        return;
    }
    let key = OwnedStr::new(key);
    // SAFETY: `ctx` is a live command or timer context (its client's db is the key's); the
    // strings live across the call and Redis copies what it keeps.
    unsafe { api!(RedisModule_NotifyKeyspaceEvent)(ctx, class, event.as_ptr(), key.0) };
}

/// Publishes `message` on `channel` (Redisson's clients listen there), unless
/// `rlock.redisson-publish` is off.
pub fn publish(ctx: Ctx, channel: &[u8], message: &[u8]) {
    if config::redisson_publish() {
        publish_to(ctx, &OwnedStr::new(channel), message);
    }
}

/// `publish` to a channel made already, whatever `rlock.redisson-publish` says (the caller
/// asked).
pub fn publish_to(ctx: Ctx, channel: &OwnedStr, message: &[u8]) {
    // "0" and "1", most messages, are made once, at load time; any other lives until the call ends.
    let made;
    let message = match message {
        b"0" => ZERO.load(Ordering::Relaxed),
        b"1" => ONE.load(Ordering::Relaxed),
        _ => {
            made = OwnedStr::new(message);
            made.0
        }
    };
    // SAFETY: both strings are live for the call; Redis copies what it keeps.
    unsafe { api!(RedisModule_PublishMessage)(ctx, channel.0, message) };
}
