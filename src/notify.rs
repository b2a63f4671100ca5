//! Messages to waiters that wait without a blocked connection (`NOTIFY`, docs/notify.md): the
//! channel of a connection, the message format, and delivery. A message for a connection in
//! the middle of its own `MULTI`/`EXEC` is held back until the EXEC reply is out: Redis 7.0
//! would put it inside that reply.

use crate::acl::{same_user, Caller, Refused};
use crate::api::{api, context_flags, create_timer, guarded, reply_elements, Ctx, OwnedStr};
use crate::error::{Error, Result};
use crate::kinds::Want;
use crate::lifetime::notices::Notice;
use crate::lifetime::{with_listening, with_notices};
use crate::stats;
use redis_module::raw;
use std::cell::RefCell;
use std::ffi::c_void;

/// `REDISMODULE_NODE_ID_LEN`.
const NODE_ID_LEN: usize = 40;
use std::ptr::null_mut;

/// What a message tells its waiter or holder.
pub enum Event<'a> {
    /// The waiter holds now, with this token (1 for an open latch).
    Granted(i64),
    Timeout,
    Failed(&'a Error),
    /// A holding granted with `NOTIFY` ended other than by its owner's release.
    Lost(i64),
}

/// `<event> <type> <value> <key-length> <key> <owner>`: binary-safe, the key counted, the
/// owner the rest.
pub fn message(event: &Event, want: Want, key: &[u8], owner: &[u8]) -> Vec<u8> {
    let (word, value) = match event {
        Event::Granted(token) => ("granted", token.to_string()),
        Event::Timeout => ("timeout", "-".to_string()),
        Event::Failed(error) => ("failed", error.code()),
        Event::Lost(token) => ("lost", token.to_string()),
    };
    let head = format!("{word} {} {value} {} ", want.word.0, key.len());
    [head.as_bytes(), key, b" ", owner].concat()
}

/// `__rlock__:<client-id>`, and in a cluster `__rlock__:<node-id>:<client-id>`: client ids are
/// unique only within one server, and a cluster broadcasts every message to all nodes.
pub fn channel(client: u64) -> Vec<u8> {
    let node = node_id();
    let mut name = Vec::with_capacity(b"__rlock__:".len() + NODE_ID_LEN + 1 + 20);
    name.extend_from_slice(b"__rlock__:");
    if !node.is_empty() {
        name.extend_from_slice(node);
        name.push(b':');
    }
    // In decimal, written by hand: `format!` was a third of a `NOTIFY <id>` check's time.
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = client;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    name.extend_from_slice(&digits[at..]);
    name
}

/// This node's cluster id, empty outside a cluster: the part of a channel's name that may
/// change while a connection lives (`CLUSTER RESET HARD`).
fn node_id() -> &'static [u8] {
    // SAFETY: returns NULL outside a cluster, else the node's id: 40 bytes, not NUL-terminated.
    let node = unsafe { api!(RedisModule_GetMyClusterID)() };
    if node.is_null() {
        return &[];
    }
    // SAFETY: checked non-NULL; Redis keeps the id's 40 bytes for the life of the server.
    unsafe { std::slice::from_raw_parts(node.cast::<u8>(), NODE_ID_LEN) }
}

#[derive(Default)]
struct Outbox {
    /// The context of the command running now, set by the command wrapper: only a message to
    /// its own client, inside its own `EXEC`, is held back (looked at when one is sent).
    command: Option<usize>,
    held_back: Vec<(u64, Vec<u8>)>,
    timer_armed: bool,
    /// A context of the module's own for publishing and timers outside any callback's.
    ctx: Option<usize>,
}

thread_local! {
    // Redis calls every callback of this module on its main thread.
    static OUTBOX: RefCell<Outbox> = RefCell::default();
}

fn with<R>(f: impl FnOnce(&mut Outbox) -> R) -> R {
    OUTBOX.with(|o| f(&mut o.borrow_mut()))
}

/// Keeps a context of the module's own. Call from OnLoad.
pub fn init(ctx: Ctx) {
    // SAFETY: OnLoad's context; the detached context lives as long as the module.
    let own = unsafe { api!(RedisModule_GetDetachedThreadSafeContext)(ctx) };
    with(|o| o.ctx = Some(own as usize));
}

/// The module's own context, for work started where Redis gives none.
pub fn own_ctx() -> Ctx {
    with(|o| o.ctx.unwrap_or(0)) as Ctx
}

/// Marks the context of the command that runs now (None after it).
pub fn set_command(ctx: Option<Ctx>) {
    with(|o| o.command = ctx.map(|c| c as usize));
}

/// Whether `client` is the one running the current command, inside its `EXEC`.
fn in_own_exec(client: u64) -> bool {
    let Some(ctx) = with(|o| o.command).map(|c| c as Ctx) else {
        return false;
    };
    // SAFETY: the command's context is live while it runs (the wrapper clears it after).
    context_flags(ctx) & raw::REDISMODULE_CTX_FLAGS_MULTI != 0
        && unsafe { api!(RedisModule_GetClientId)(ctx) } == client
}

/// Sends `message` to `client`'s channel; returns whether anyone received it (a held-back
/// message counts as received).
pub fn send(client: u64, message: Vec<u8>) -> bool {
    if !in_own_exec(client) {
        return publish(client, &message) > 0;
    }
    with(|o| {
        o.held_back.push((client, message));
        if !o.timer_armed {
            o.timer_armed = true;
            let ctx = o.ctx.unwrap_or(0) as Ctx;
            create_timer(ctx, 0, Some(on_release_timer), null_mut());
        }
    });
    true
}

fn publish(client: u64, message: &[u8]) -> i32 {
    let (channel, message) = (OwnedStr::new(&channel(client)), OwnedStr::new(message));
    // SAFETY: both strings live across the call; Redis copies what it keeps.
    unsafe { api!(RedisModule_PublishMessage)(own_ctx(), channel.0, message.0) }
}

extern "C" fn on_release_timer(_ctx: Ctx, _data: *mut c_void) {
    guarded("held-back messages", (), || {
        let held = with(|o| {
            o.timer_armed = false;
            std::mem::take(&mut o.held_back)
        });
        for (client, message) in held {
            publish(client, &message);
        }
    })
}

/// Tells the owner of a holding granted with `NOTIFY` that it ended (`lost`).
pub fn tell_lost(key: &[u8], notice: &Notice) {
    stats::NOTIFY_LOST.add();
    let message = message(&Event::Lost(notice.token), notice.want, key, &notice.owner);
    send(notice.client, message);
}

/// `owner`'s holding of the lock ended other than by its release: it hears of it, if its
/// holding was granted with `NOTIFY`.
pub fn owner_lost(db: i32, key: &[u8], owner: &[u8]) {
    if let Some(notice) = with_notices(|n| n.forget(db, key, owner)) {
        tell_lost(key, &notice);
    }
}

/// Whether `client` is connected and subscribed to something (its channel, we trust: a
/// connection subscribed to other channels only is caught by `check_subscribed` up front).
pub fn reachable(client: u64) -> bool {
    client_flags(client).is_some_and(|f| f & raw::REDISMODULE_CLIENTINFO_FLAG_PUBSUB as u64 != 0)
}

fn client_flags(client: u64) -> Option<u64> {
    let mut info: raw::RedisModuleClientInfo = unsafe { std::mem::zeroed() };
    info.version = 1;
    // SAFETY: a version-1 client info for Redis to fill.
    let found = unsafe {
        api!(RedisModule_GetClientInfoById)(
            (&mut info as *mut raw::RedisModuleClientInfo).cast(),
            client,
        )
    } == crate::api::OK;
    found.then_some(info.flags)
}

/// Refuses a `NOTIFY` aimed at a connection of another user whose channel the caller may not
/// publish to (docs/security.md), before anything about that connection is told. The
/// caller's own connection needs no check: looked up only for another connection's id.
pub fn check_permitted(ctx: Ctx, client: u64) -> Result<()> {
    // SAFETY: `ctx` is the live context of the command.
    if unsafe { api!(RedisModule_GetClientId)(ctx) } == client {
        return Ok(());
    }
    // A connection of the caller's own user (a helper's listener) is asked about first, by
    // user name alone: no user handle, no channel name, no ACL look-up for the common case.
    if same_user(ctx, client) {
        return Ok(());
    }
    let caller = Caller::of(ctx)?;
    let channel = channel(client);
    if caller.may_publish(&channel) || caller.owns_connection(ctx, client) {
        return Ok(());
    }
    caller.log_refusal(ctx, Refused::Channel(&channel));
    Err(Error::NotifyNotPermitted {
        client,
        channel: String::from_utf8_lossy(&channel).into_owned(),
    })
}

/// Refuses a `NOTIFY` whose connection is gone or not subscribed to its channel, asking the
/// server each time.
pub fn check_subscribed(ctx: Ctx, client: u64) -> Result<()> {
    subscribed_to(ctx, client, channel(client)).map(drop)
}

/// `check_subscribed`, answered from memory when `client` was found subscribed and nothing
/// since may have changed that (`lifetime::listening`). `remember`: a success may be kept,
/// because the filter that forgets is in place; never inside `MULTI`, where an `UNSUBSCRIBE`
/// queued after this command runs in the same `EXEC`, after the filter saw it.
pub fn check_listening(ctx: Ctx, client: u64, remember: bool) -> Result<()> {
    // Known by the node id its channel was named with: no name built on the way that repeats.
    let node = node_id();
    if with_listening(|l| l.knows(client, node)) {
        return Ok(());
    }
    subscribed_to(ctx, client, channel(client))?;
    if remember && context_flags(ctx) & raw::REDISMODULE_CTX_FLAGS_MULTI == 0 {
        with_listening(|l| l.remember(client, node.to_vec()));
    }
    Ok(())
}

/// Whether `client` is here, subscribed to something, and `channel` has a subscriber: the
/// channel back if so.
fn subscribed_to(ctx: Ctx, client: u64, channel: Vec<u8>) -> Result<Vec<u8>> {
    if reachable(client) && subscribers(ctx, &channel) > 0 {
        return Ok(channel);
    }
    Err(Error::NotSubscribed {
        client,
        channel: String::from_utf8_lossy(&channel).into_owned(),
    })
}

/// `PUBSUB NUMSUB channel` on this server.
fn subscribers(ctx: Ctx, channel: &[u8]) -> i64 {
    let channel = OwnedStr::new(channel);
    // SAFETY: the strings live across the call; the reply is freed below.
    unsafe {
        let reply = api!(RedisModule_Call)(
            ctx,
            c"PUBSUB".as_ptr(),
            c"cs".as_ptr(),
            c"NUMSUB".as_ptr(),
            channel.0,
        );
        if reply.is_null() {
            return 0;
        }
        let count = reply_elements(reply)
            .and_then(|mut e| e.nth(1))
            .map_or(0, |n| api!(RedisModule_CallReplyInteger)(n));
        api!(RedisModule_FreeCallReply)(reply);
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::Word;

    #[test]
    fn messages_count_the_key_and_end_with_the_owner() {
        let cases: [(Event, Want, &[u8], &[u8], &[u8]); 6] = [
            (
                Event::Granted(17),
                Want::one(&Word("lock")),
                b"jobs",
                b"w-1",
                b"granted lock 17 4 jobs w-1",
            ),
            (
                Event::Timeout,
                Want::one(&Word("read")),
                b"a b",
                b"o",
                b"timeout read - 3 a b o",
            ),
            (
                Event::Failed(&Error::WrongType),
                Want::of(&Word("permits"), 2),
                b"s",
                b"o",
                b"failed permits WRONGTYPE 1 s o",
            ),
            (
                Event::Lost(5),
                Want::one(&Word("write")),
                b"",
                b"x y",
                b"lost write 5 0  x y",
            ),
            (
                Event::Granted(1),
                Want::one(&Word("latch")),
                b"l\r\n\0",
                b"",
                b"granted latch 1 4 l\r\n\0 ",
            ),
            (
                Event::Granted(3),
                Want::of(&Word("counting"), 3),
                b"pool",
                b"req-9",
                b"granted counting 3 4 pool req-9",
            ),
        ];
        for (event, want, key, owner, expected) in cases {
            assert_eq!(message(&event, want, key, owner), expected);
        }
    }
}
