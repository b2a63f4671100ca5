//! Waiters blocked in their connection (`... WAIT` without `NOTIFY`): Redis's blocked-client
//! calls and the callbacks it makes. Each blocked client is unblocked exactly once, by whoever
//! takes its waiter out of the registry (through `deliver.rs`, which answers it).

use super::ask::Ask;
use super::deadlines::arm_wake_timer;
use super::registry::{serve_departed, with};
use super::waiter::{Bc, Outcome, Via, Waiter};
use crate::api::{api, guarded, Ctx, RStr, ERR};
use crate::args::Wait;
use crate::error::{Error, Result};
use crate::stats;
use std::num::NonZeroUsize;
use std::os::raw::{c_int, c_void};
use std::ptr::null_mut;

/// Blocks the calling client at the back of the queue of each of `keys` (one request). Fails
/// (and changes nothing) if Redis hands back no blocked client.
pub fn block(ctx: Ctx, db: i32, keys: &[&[u8]], ask: Ask, wait: Wait) -> Result<()> {
    let bc = block_client(ctx, wait)?;
    with(|r| {
        r.push_all(db, keys, ask, Via::Blocked(bc), wait);
        arm_wake_timer(ctx, r);
    });
    Ok(())
}

/// Blocks the calling client until `wait` ends, with this module's callbacks; the caller puts
/// the handle in the registry before its command returns.
pub(super) fn block_client(ctx: Ctx, wait: Wait) -> Result<NonZeroUsize> {
    let timeout_ms = match wait {
        Wait::Forever => 0,
        Wait::Ms(ms) => ms,
    };
    // SAFETY: called from a command that may block (the caller checked the context flags).
    // The handle stays valid until our single UnblockClient call (see the module doc).
    let bc = unsafe {
        api!(RedisModule_BlockClient)(
            ctx,
            Some(on_reply),
            Some(on_timeout),
            Some(free_outcome),
            timeout_ms,
        )
    };
    let bc = NonZeroUsize::new(bc as usize).ok_or(Error::Internal)?;
    // SAFETY: `bc` is the live handle just returned.
    unsafe { api!(RedisModule_SetDisconnectCallback)(bc.get() as Bc, Some(on_disconnect)) };
    Ok(bc)
}

/// Takes a blocked waiter out because its client timed out or went away.
fn remove(bc: Bc) -> Option<Waiter> {
    with(|r| {
        let seq = *r.blocked.get(&(bc as usize))?;
        r.depart(seq)
    })
}

fn reply_outcome(ctx: Ctx) -> c_int {
    // SAFETY: the private data, if any, is the `Outcome` boxed by `deliver`, alive until
    // `free_outcome`.
    unsafe {
        let outcome = api!(RedisModule_GetBlockedClientPrivateData)(ctx).cast::<Outcome>();
        match outcome.as_ref() {
            Some(Outcome::Granted(token)) => api!(RedisModule_ReplyWithLongLong)(ctx, *token),
            Some(Outcome::GrantedAll(tokens)) => {
                api!(RedisModule_ReplyWithArray)(ctx, tokens.len() as std::os::raw::c_long);
                for token in tokens {
                    api!(RedisModule_ReplyWithLongLong)(ctx, *token);
                }
                crate::api::OK
            }
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
                let replied = unsafe {
                    api!(RedisModule_UnblockClient)(bc, null_mut());
                    api!(RedisModule_ReplyWithNull)(ctx)
                };
                serve_departed(ctx);
                replied
            }
            // Granted in this same event-loop turn, just before the deadline: tell it so.
            None => reply_outcome(ctx),
        }
    })
}

extern "C" fn on_disconnect(ctx: Ctx, bc: Bc) {
    guarded("a waiter's disconnect", (), || {
        if remove(bc).is_some() {
            // SAFETY: just taken out of the registry: this is its one UnblockClient.
            unsafe { api!(RedisModule_UnblockClient)(bc, null_mut()) };
            serve_departed(ctx);
        }
    })
}

extern "C" fn free_outcome(_ctx: Ctx, outcome: *mut c_void) {
    if !outcome.is_null() {
        // SAFETY: private data is only ever a boxed `Outcome` from `deliver`, freed once here.
        drop(unsafe { Box::from_raw(outcome.cast::<Outcome>()) });
    }
}
