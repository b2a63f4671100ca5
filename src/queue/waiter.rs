//! A waiter in a key's queue, and how it learns its outcome: its blocked connection is
//! answered, or messages go to the connection that receives its grants (`NOTIFY`).

use super::ask::Ask;
use super::group::Group;
use crate::api::bytes;
use crate::error::Error;
use redis_module::raw;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::num::NonZeroUsize;
use std::rc::Rc;

pub(super) type Bc = *mut raw::RedisModuleBlockedClient;

/// What a blocked client is told when it leaves the queue other than by timing out.
pub enum Outcome {
    Granted(i64),
    /// A request for several keys got them all: their tokens, in its keys' order.
    GrantedAll(Vec<i64>),
    Failed(Error),
}

/// How a waiter learns the outcome: its blocked connection is answered, or a message goes to
/// the connection that receives its grants (`NOTIFY`, the ask's `notify`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Via {
    Blocked(NonZeroUsize),
    Message,
    /// A place a request for several keys holds in one more queue: the request's first entry
    /// (its lead) is the one answered.
    Member,
}

pub struct Waiter {
    pub(super) db: i32,
    pub(super) key: Rc<[u8]>,
    pub ask: Ask,
    pub(super) via: Via,
    /// The request for several keys this entry is part of.
    pub(super) group: Option<Rc<Group>>,
    /// When its wait ends (`WAIT ms`; None: forever, or a further place of a request for
    /// several keys): a retry that takes the entry over sets its own.
    pub(super) deadline: Option<i64>,
}

impl Waiter {
    /// For a waiter that carries a request id (blocked or told by message): the key of
    /// `requests`.
    pub(super) fn request(&self) -> Option<u64> {
        let id = self.ask.id.as_deref().filter(|_| self.via != Via::Member)?;
        Some(request_hash(
            self.db,
            &self.key,
            bytes(self.ask.owner.0),
            id,
        ))
    }

    pub(super) fn owner_hash(&self) -> u32 {
        owner_hash(self.db, bytes(self.ask.owner.0))
    }

    /// The connection its messages go to, for a waiter told by message.
    pub(super) fn receiver(&self) -> Option<u64> {
        match self.via {
            Via::Message => self.ask.notify(),
            Via::Blocked(_) | Via::Member => None,
        }
    }

    /// The keys its outcome is about: its request's keys, in their order.
    pub(super) fn keys(&self) -> &[Rc<[u8]>] {
        match &self.group {
            Some(group) => &group.keys,
            None => std::slice::from_ref(&self.key),
        }
    }
}

/// A 32-bit hash of (db, owner), never 0 (an empty slot).
pub(super) fn owner_hash(db: i32, owner: &[u8]) -> u32 {
    let mut hasher = DefaultHasher::new();
    (db, owner).hash(&mut hasher);
    (hasher.finish() as u32) | 1
}

pub(super) fn request_hash(db: i32, key: &[u8], owner: &[u8], id: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    (db, key, owner, id).hash(&mut hasher);
    hasher.finish()
}
