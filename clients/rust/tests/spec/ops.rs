//! The Rust runner's table of clients/spec actor ops: each op as calls of rlock_client's public
//! API, and the error kinds.

use crate::json::Json;
use rlock_client::{
    Confirm, CountDownLatch, Election, Error, Lock, LockGuard, MultiGuard, MultiLock, Permit,
    ReadGuard, RwLock, Semaphore, WriteGuard,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An op's outcome: a result, or an error kind (`Err` of a text that is no kind fails the step).
pub type Outcome = Result<Json, String>;

/// A handle's (or a holding's) place: its family (`lock`, `rwlock`, ...) and key.
type Place = (String, String);

/// One actor: one owner id given to every handle, a client of its own (its ACL user).
pub struct Actor {
    pub user: String,
    owner: String,
    client: redis::Client,
    /// Handles by place and wait; the lease (and watchdog) each place's first step fixed.
    handles: Mutex<HashMap<(Place, Option<i64>), Handle>>,
    /// Each place's lease, watchdog and confirmation, fixed by its first step.
    options: Mutex<HashMap<Place, (Option<i64>, bool, Option<Confirm>)>>,
    held: Mutex<HashMap<Place, Vec<Held>>>,
    elections: Mutex<HashMap<String, Arc<Election>>>,
}

#[derive(Clone)]
enum Handle {
    Lock(Arc<Lock>),
    Rw(Arc<RwLock>),
    Sem(Arc<Semaphore>),
    Multi(Arc<MultiLock>),
}

enum Held {
    Lock(LockGuard),
    Read(ReadGuard),
    Write(WriteGuard),
    Permit(Permit),
    Multi(MultiGuard),
}

pub fn kind_of(error: Error) -> String {
    match error {
        Error::NotAcquired => "NotAcquired".into(),
        Error::Lost => "NotHeld".into(),
        Error::Deadlock(_) => "Deadlock".into(),
        Error::NotConfirmed { .. } => "NotConfirmed".into(),
        Error::Redis(e) if e.code() == Some("WRONGTYPE") => "WrongType".into(),
        Error::Redis(e) if e.to_string().contains("upgrade") => "UpgradeRefused".into(),
        other => format!("unexpected error: {other}"),
    }
}

/// A step's `confirm: {replicas, timeout_ms}` as the helper's setting.
fn confirm_of(step: &Json) -> Option<Confirm> {
    let confirm = step.get("confirm")?;
    let replicas = confirm.int("replicas").expect("confirm.replicas") as u32;
    Some(
        Confirm::replicas(replicas)
            .timeout(ms(confirm.int("timeout_ms").expect("confirm.timeout_ms"))),
    )
}

fn ms(value: i64) -> Duration {
    Duration::from_millis(value as u64)
}

impl Actor {
    pub fn new(port: u16, user: String) -> Actor {
        let url = format!("redis://{user}:spec@127.0.0.1:{port}/");
        Actor {
            owner: format!("{user}:owner"),
            client: redis::Client::open(url).expect("client"),
            user,
            handles: Mutex::default(),
            options: Mutex::default(),
            held: Mutex::default(),
            elections: Mutex::default(),
        }
    }

    /// The step's handle, one per (type, key, wait) and kept: a handle keeps its holdings'
    /// connection. The lease is fixed by the first step on (type, key).
    fn handle(&self, kind: &str, step: &Json) -> Handle {
        let key = match kind {
            "multilock" => step.strings("keys").join("\n"),
            _ => step.str("key").expect("key").to_string(),
        };
        let family = if kind == "read" || kind == "write" {
            "rwlock"
        } else {
            kind
        };
        let (lease, watchdog, confirm) = self
            .options
            .lock()
            .unwrap()
            .entry((family.into(), key.clone()))
            .or_insert_with(|| {
                (
                    step.int("lease_ms"),
                    step.get("lease_ms").is_none(),
                    confirm_of(step),
                )
            })
            .clone();
        let wait = step.int("wait_ms");
        let mut handles = self.handles.lock().unwrap();
        let made = handles
            .entry(((family.into(), key.clone()), wait))
            .or_insert_with(|| {
                macro_rules! build {
                    ($handle:expr) => {{
                        let handle = $handle.owner_id(self.owner.clone()).watchdog(watchdog);
                        let handle = match lease {
                            Some(l) => handle.lease(ms(l)),
                            None => handle,
                        };
                        let handle = match confirm.clone() {
                            Some(c) => handle.confirm(c),
                            None => handle,
                        };
                        match wait {
                            Some(w) => handle.wait(ms(w)),
                            None => handle,
                        }
                    }};
                }
                match family {
                    "lock" => Handle::Lock(Arc::new(build!(Lock::new(&self.client, key.as_str())))),
                    "rwlock" => {
                        Handle::Rw(Arc::new(build!(RwLock::new(&self.client, key.as_str()))))
                    }
                    "semaphore" => {
                        Handle::Sem(Arc::new(build!(Semaphore::new(&self.client, key.as_str()))))
                    }
                    _ => Handle::Multi(Arc::new(build!(MultiLock::new(
                        &self.client,
                        step.strings("keys")
                    )))),
                }
            });
        made.clone()
    }

    fn push(&self, kind: &str, key: String, held: Held) {
        self.held
            .lock()
            .unwrap()
            .entry((kind.into(), key))
            .or_default()
            .push(held);
    }

    fn pop(&self, kind: &str, key: String) -> Option<Held> {
        self.held
            .lock()
            .unwrap()
            .get_mut(&(kind.into(), key))
            .and_then(Vec::pop)
    }

    fn election(&self, step: &Json) -> Arc<Election> {
        let key = step.str("key").expect("key");
        let candidate = step.str("candidate").unwrap_or(&self.owner).to_string();
        let mut elections = self.elections.lock().unwrap();
        elections
            .entry(key.into())
            .or_insert_with(|| Arc::new(Election::new(&self.client, key, candidate)))
            .clone()
    }

    /// Runs the actor op `op` of `step`.
    pub async fn run(&self, op: &str, step: &Json) -> Outcome {
        let key = || step.str("key").expect("key").to_string();
        let token = |t: u64| Json::Int(t as i64);
        let kind = step.str("type").unwrap_or_default();
        match (op, kind) {
            ("acquire", _) => {
                let (held, t) = match self.handle(kind, step) {
                    Handle::Lock(h) => h.acquire().await.map(|g| (g.token(), Held::Lock(g))),
                    Handle::Rw(h) if kind == "read" => {
                        h.read().await.map(|g| (g.token(), Held::Read(g)))
                    }
                    Handle::Rw(h) => h.write().await.map(|g| (g.token(), Held::Write(g))),
                    Handle::Sem(h) => {
                        let permits = step.int("permits").unwrap_or(1) as u32;
                        h.acquire_many(permits)
                            .await
                            .map(|g| (g.token(), Held::Permit(g)))
                    }
                    Handle::Multi(_) => unreachable!(),
                }
                .map(|(t, g)| (g, t))
                .map_err(kind_of)?;
                self.push(kind, key(), held);
                Ok(token(t))
            }
            ("release", _) => {
                let released = match self.pop(kind, key()) {
                    None => return Err("NotHeld".into()),
                    Some(Held::Lock(g)) => g.release().await,
                    Some(Held::Read(g)) => g.release().await,
                    Some(Held::Write(g)) => g.release().await,
                    Some(Held::Permit(g))
                        if g.permits() as i64 == step.int("permits").unwrap_or(1) =>
                    {
                        g.release().await
                    }
                    Some(_) => {
                        return Err("the runner releases one grant's permits at a time".into())
                    }
                };
                released.map(|()| Json::Null).map_err(kind_of)
            }
            ("guard", _) => {
                let held = self
                    .held
                    .lock()
                    .unwrap()
                    .get(&("lock".into(), key()))
                    .map(|g| g.len());
                let Some(Held::Lock(guard)) = self.pop("lock", key()) else {
                    return Err(if held.is_none() {
                        "NotHeld".into()
                    } else {
                        "no lock guard".into()
                    });
                };
                let reply: Result<redis::Value, Error> = guard
                    .guarded(&crate::command(&step.strings("command")))
                    .await;
                self.push("lock", key(), Held::Lock(guard));
                reply.map(crate::from_redis).map_err(kind_of)
            }
            ("await_lost", _) => {
                let lost: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> =
                    match kind {
                        "election" => Box::pin(self.election(step).lost()),
                        _ => {
                            let name = if kind == "multilock" {
                                step.strings("keys").join("\n")
                            } else {
                                key()
                            };
                            let held = self.held.lock().unwrap();
                            match held.get(&(kind.into(), name)).and_then(|g| g.last()) {
                                Some(Held::Lock(g)) => Box::pin(g.lost()),
                                Some(Held::Read(g)) => Box::pin(g.lost()),
                                Some(Held::Write(g)) => Box::pin(g.lost()),
                                Some(Held::Permit(g)) => Box::pin(g.lost()),
                                Some(Held::Multi(g)) => Box::pin(g.lost()),
                                None => return Err("await_lost: nothing held".into()),
                            }
                        }
                    };
                let limit = ms(step.int("within_ms").unwrap_or(5000));
                match tokio::time::timeout(limit, lost).await {
                    Ok(()) => Ok(Json::Null),
                    Err(_) => Err("the holding was not reported lost".into()),
                }
            }
            ("acquire_all", _) | ("release_all", _) => {
                let name = step.strings("keys").join("\n");
                if op == "release_all" {
                    return match self.pop("multilock", name) {
                        Some(Held::Multi(g)) => {
                            g.unlock().await.map(|()| Json::Null).map_err(kind_of)
                        }
                        _ => Err("NotHeld".into()),
                    };
                }
                let Handle::Multi(multi) = self.handle("multilock", step) else {
                    unreachable!()
                };
                let guard = match step.int("wait_ms") {
                    Some(w) => multi.try_lock_for(ms(w)).await,
                    None => multi.try_lock().await,
                }
                .map_err(kind_of)?;
                let tokens = guard.tokens().into_iter().map(token).collect();
                self.push("multilock", name, Held::Multi(guard));
                Ok(Json::Arr(tokens))
            }
            ("campaign", _) => {
                let election = self.election(step);
                let limit = ms(step.int("wait_ms").expect("campaign's wait_ms"));
                match tokio::time::timeout(limit, election.campaign()).await {
                    Ok(term) => term.map(token).map_err(kind_of),
                    Err(_) => Err("NotAcquired".into()),
                }
            }
            ("leader", _) => Ok(match self.election(step).leader().await.map_err(kind_of)? {
                None => Json::Null,
                Some(leader) => Json::Obj(vec![
                    ("owner".into(), Json::Str(leader.owner)),
                    ("term".into(), leader.term.map_or(Json::Null, token)),
                ]),
            }),
            ("resign", _) => self
                .election(step)
                .resign()
                .await
                .map(|()| Json::Null)
                .map_err(kind_of),
            ("set_permits" | "add_permits" | "available_permits", _) => {
                let Handle::Sem(sem) = self.handle("semaphore", step) else {
                    unreachable!()
                };
                let permits = step.int("permits").unwrap_or(0);
                match op {
                    "set_permits" => sem.try_set_permits(permits as u32).await.map(Json::Bool),
                    "add_permits" => sem.add_permits(permits).await.map(Json::Int),
                    _ => sem.available_permits().await.map(Json::Int),
                }
                .map_err(kind_of)
            }
            ("set_count" | "count_down" | "get_count" | "await_latch", _) => {
                let latch = CountDownLatch::new(&self.client, key());
                match op {
                    "set_count" => latch
                        .try_set_count(step.int("count").unwrap() as u64)
                        .await
                        .map(Json::Bool),
                    "count_down" => latch.count_down().await.map(|_| Json::Null),
                    "get_count" => latch.count().await.map(|n| Json::Int(n as i64)),
                    _ => latch
                        .wait_for(ms(step.int("wait_ms").expect("await_latch's wait_ms")))
                        .await
                        .map(Json::Bool),
                }
                .map_err(kind_of)
            }
            _ => Err(format!("the Rust runner has no op {op:?}")),
        }
    }
}
