//! Several plain locks at once (`RLOCK.ACQUIREALL`) as a model: one global arrival-ordered
//! list of waiting requests, single-key or several-key. A request heads key k when no earlier
//! waiting request names k; after every event, every waiting request that heads all its keys
//! and finds each free or its owner's is granted, all keys in one step, until nothing changes
//! (work conservation). A newcomer enters at once only when each of its keys is free or its
//! own and nobody waits for any of them (a single-key re-entry passes the queue, as for the
//! plain lock). Deadlock detection (on, as by default) refuses a wait that would close a cycle
//! of owners, with the server's edges: a waiter waits for the holder of each of its keys and
//! for every request for several keys ahead of it in their queues (a newcomer: all of them).

use super::harness::{agree, outcomes_each, pick_wait, rising, Rng, Session, Told, Via, Waiter};
use crate::common::{Conn, Server, Value};
use std::time::Duration;

const KEYS: usize = 4;
const OWNERS: usize = 6;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Holding {
    owner: String,
    holds: i64,
    /// 0 until the grant's token is read.
    token: i64,
}

/// A waiting request: its waiter's id and the keys it names, in its argument order.
struct Request {
    id: usize,
    owner: String,
    keys: Vec<usize>,
}

/// A grant the model made: per key, whether it is a fresh holding (else a re-entry).
struct Grant {
    keys: Vec<usize>,
    fresh: Vec<bool>,
}

#[derive(Default)]
struct Model {
    held: [Option<Holding>; KEYS],
    /// In arrival order.
    waiting: Vec<Request>,
}

impl Model {
    fn free_for(&self, key: usize, owner: &str) -> bool {
        self.held[key].as_ref().is_none_or(|h| h.owner == owner)
    }

    fn named(&self, key: usize) -> usize {
        self.waiting
            .iter()
            .filter(|r| r.keys.contains(&key))
            .count()
    }

    fn waits(&self, owner: &str) -> bool {
        self.waiting.iter().any(|r| r.owner == owner)
    }

    /// Whether a newcomer for `keys` enters now.
    fn at_once(&self, keys: &[usize], owner: &str) -> bool {
        // A key its owner holds is re-entered at once; a free one only with nobody waiting.
        let reentry = |k: usize| self.held[k].as_ref().is_some_and(|h| h.owner == owner);
        keys.iter()
            .all(|k| reentry(*k) || (self.held[*k].is_none() && self.named(*k) == 0))
    }

    /// The owners deadlock detection says keep `owner`'s request for `key` out: the key's
    /// holder and the requests for several keys ahead of it (all of them for a newcomer), but
    /// `owner` itself.
    fn blockers(&self, key: usize, owner: &str) -> Vec<String> {
        let holder = self.held[key].iter().map(|h| h.owner.clone());
        let ahead = self.waiting.iter().take_while(|r| r.owner != owner);
        let groups = ahead
            .filter(|r| r.keys.len() > 1 && r.keys.contains(&key))
            .map(|r| r.owner.clone());
        holder.chain(groups).filter(|b| b != owner).collect()
    }

    /// Whether a wait by `owner` for `keys` would close a cycle of owners, each waiting for
    /// the next (`blockers`).
    fn closes_cycle(&self, keys: &[usize], owner: &str) -> bool {
        let mut todo: Vec<String> = keys.iter().flat_map(|k| self.blockers(*k, owner)).collect();
        let mut seen = std::collections::HashSet::new();
        while let Some(b) = todo.pop() {
            if b == owner {
                return true;
            }
            if !seen.insert(b.clone()) {
                continue;
            }
            if let Some(r) = self.waiting.iter().find(|r| r.owner == b) {
                todo.extend(r.keys.iter().flat_map(|k| self.blockers(*k, &b)));
            }
        }
        false
    }

    /// Gives `owner` every one of `keys` (tokens of fresh holdings to be learnt).
    fn take(&mut self, keys: &[usize], owner: &str) -> Grant {
        let fresh = keys
            .iter()
            .map(|k| match &mut self.held[*k] {
                Some(h) => {
                    h.holds += 1;
                    false
                }
                none => {
                    *none = Some(Holding {
                        owner: owner.to_string(),
                        holds: 1,
                        token: 0,
                    });
                    true
                }
            })
            .collect();
        Grant {
            keys: keys.to_vec(),
            fresh,
        }
    }

    /// The rules: grants, in arrival order until nothing changes, every waiting request that
    /// heads each of its keys' queues and finds each key free or its owner's.
    fn serve(&mut self) -> Vec<(usize, Grant)> {
        let mut granted = Vec::new();
        while let Some(i) = (0..self.waiting.len()).find(|&i| {
            let r = &self.waiting[i];
            r.keys.iter().all(|k| {
                self.free_for(*k, &r.owner) && !self.waiting[..i].iter().any(|e| e.keys.contains(k))
            })
        }) {
            let r = self.waiting.remove(i);
            granted.push((r.id, self.take(&r.keys, &r.owner)));
        }
        granted
    }

    /// The holdings and the waiting requests in order, for a failure's message.
    fn describe(&self) -> String {
        let held: Vec<String> = (0..KEYS)
            .map(|k| match &self.held[k] {
                Some(h) => format!("k{k}={}x{}", h.owner, h.holds),
                None => format!("k{k}=free"),
            })
            .collect();
        let waiting: Vec<String> = self
            .waiting
            .iter()
            .map(|r| format!("{}[{}]", r.owner, names(&r.keys)))
            .collect();
        format!("{}; waiting: {}", held.join(" "), waiting.join(", "))
    }

    /// Per key: (owner, holds, token, waiters) or None when free; then the waiting requests
    /// and the keys some request waits for (`INFO rlock`).
    fn state(&self) -> State {
        let keys = (0..KEYS)
            .map(|k| {
                self.held[k]
                    .as_ref()
                    .map(|h| (h.owner.clone(), h.holds, h.token, self.named(k) as i64))
            })
            .collect();
        let with_waiters = (0..KEYS).filter(|k| self.named(*k) > 0).count();
        (keys, self.waiting.len() as i64, with_waiters as i64)
    }
}

type State = (Vec<Option<(String, i64, i64, i64)>>, i64, i64);

fn server_state(c: &mut Conn) -> State {
    let keys = (0..KEYS)
        .map(|k| {
            let info = c.q(&format!("RLOCK.INFO k{k}"));
            (!info.is_nil()).then(|| {
                (
                    info.field("owner").text(),
                    info.field("holds").int(),
                    info.field("token").int(),
                    info.field("waiters").int(),
                )
            })
        })
        .collect();
    let stats = c.q("INFO rlock").text();
    let stat = |name: &str| -> i64 {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&format!("rlock_{name}:")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(-1)
    };
    (keys, stat("waiters"), stat("locks_with_waiters"))
}

struct Run<'a> {
    s: Session<'a>,
    model: Model,
}

pub fn check(seed: u64, events: usize, history: &mut Vec<String>) -> Result<(), String> {
    let server = Server::start();
    let mut run = Run {
        s: Session::new(&server, history),
        model: Model::default(),
    };
    let mut rng = Rng(seed);
    for _ in 0..events {
        run.step(&mut rng)
            .map_err(|why| format!("{why}\nmodel: {}", run.model.describe()))?;
    }
    server.assert_no_crash();
    let count = |what: &str| run.s.history.iter().filter(|e| e.contains(what)).count();
    eprintln!(
        "several_keys seed {seed}: {events} events, {} requests for several keys, {} let in from the queues, {} deadlocks refused",
        count("ACQUIREALL"),
        count("->"),
        count("deadlock"),
    );
    Ok(())
}

fn names(keys: &[usize]) -> String {
    keys.iter()
        .map(|k| format!("k{k}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// 2 or 3 distinct keys in a random order.
fn subset(rng: &mut Rng) -> Vec<usize> {
    let mut all: Vec<usize> = (0..KEYS).collect();
    let n = 2 + rng.below(2);
    (0..n).map(|_| all.remove(rng.below(all.len()))).collect()
}

impl Run<'_> {
    fn step(&mut self, rng: &mut Rng) -> Result<(), String> {
        let owner = format!("o{}", rng.below(OWNERS));
        let free_to_act = !self.model.waits(&owner);
        let mut refused = Vec::new();
        let mut grants = Vec::new();
        match rng.below(16) {
            0..=4 if free_to_act => {
                let keys = vec![rng.below(KEYS)];
                grants.extend(self.acquire(rng, &owner, keys)?);
            }
            5..=7 if free_to_act => {
                let keys = subset(rng);
                grants.extend(self.acquire(rng, &owner, keys)?);
            }
            8 | 9 => {
                let held: Vec<usize> = (0..KEYS)
                    .filter(|k| {
                        self.model.held[*k]
                            .as_ref()
                            .is_some_and(|h| !self.model.waits(&h.owner))
                    })
                    .collect();
                if held.is_empty() {
                    return Ok(());
                }
                let k = held[rng.below(held.len())];
                let h = self.model.held[k].clone().expect("held");
                self.s.history.push(format!("{}: RELEASE k{k}", h.owner));
                let left = self.s.c.q(&format!("RLOCK.RELEASE k{k} {}", h.owner)).int();
                if left != h.holds - 1 {
                    return Err(format!(
                        "release of k{k} left {left}, model {}",
                        h.holds - 1
                    ));
                }
                self.release(k);
            }
            10 if free_to_act => {
                let mut keys: Vec<usize> = (0..KEYS)
                    .filter(|k| {
                        self.model.held[*k]
                            .as_ref()
                            .is_some_and(|h| h.owner == owner)
                    })
                    .collect();
                if keys.is_empty() {
                    return Ok(());
                }
                let others: Vec<usize> = (0..KEYS).filter(|k| !keys.contains(k)).collect();
                if !others.is_empty() && rng.chance(30) {
                    let at = rng.below(keys.len() + 1);
                    keys.insert(at, others[rng.below(others.len())]);
                }
                self.s
                    .history
                    .push(format!("{owner}: RELEASEALL {}", names(&keys)));
                let reply = self.s.c.q(&format!(
                    "RLOCK.RELEASEALL {} {} {owner}",
                    keys.len(),
                    names(&keys)
                ));
                let model: Vec<Value> = keys
                    .iter()
                    .map(|k| match &self.model.held[*k] {
                        Some(h) if h.owner == owner => Value::Int(h.holds - 1),
                        _ => Value::Nil,
                    })
                    .collect();
                if reply != Value::Array(model.clone()) {
                    return Err(format!("releaseall replied {reply:?}, model {model:?}"));
                }
                for (k, answer) in keys.iter().zip(&model) {
                    if *answer != Value::Nil {
                        self.release(*k);
                    }
                }
            }
            11 | 12 => {
                if self.model.waiting.is_empty() {
                    return Ok(());
                }
                let at = rng.below(self.model.waiting.len());
                let r = &self.model.waiting[at];
                let (id, key) = (r.id, r.keys[rng.below(r.keys.len())]);
                if !self.s.depart(rng, id, &format!("k{key}"), &mut refused)? {
                    return Ok(());
                }
                self.model.waiting.remove(at);
            }
            13 => {
                let held: Vec<usize> = (0..KEYS)
                    .filter(|k| self.model.held[*k].is_some())
                    .collect();
                if held.is_empty() {
                    return Ok(());
                }
                let k = held[rng.below(held.len())];
                let h = self.model.held[k].take().expect("held").owner;
                self.s
                    .history
                    .push(format!("{h}: lease of k{k} ends (RENEW PX 1)"));
                if self.s.c.q(&format!("RLOCK.RENEW k{k} {h} PX 1")).int() != 1 {
                    return Err(format!("renew of k{k} by its holder {h} refused"));
                }
            }
            14 => {
                let k = rng.below(KEYS);
                self.s.history.push(format!("FORCERELEASE k{k}"));
                let n = self.s.c.q(&format!("RLOCK.FORCERELEASE k{k}")).int();
                let held = self.model.held[k].take().is_some();
                if n != i64::from(held) {
                    return Err(format!("forcerelease of k{k} replied {n}"));
                }
            }
            15 => {
                let k = rng.below(KEYS);
                self.s.history.push(format!("DEL k{k}"));
                self.s.c.q(&format!("DEL k{k}"));
                self.model.held[k] = None;
            }
            _ => return Ok(()),
        }
        let served = self.model.serve();
        for (id, grant) in &served {
            let owner = &self.s.waiters[*id].as_ref().expect("live").owner;
            let keys = names(&grant.keys);
            self.s.history.push(format!("  -> {owner} let in ({keys})"));
        }
        let ids: Vec<usize> = served.iter().map(|(id, _)| *id).collect();
        let still: Vec<usize> = self.model.waiting.iter().map(|r| r.id).collect();
        let told = outcomes_each(&mut self.s.waiters, &ids, &refused, &still)?;
        for ((_, grant), tokens) in served.into_iter().zip(told) {
            grants.push((grant, tokens));
        }
        self.learn(grants)?;
        agree(|| server_state(&mut self.s.c), self.model.state())
    }

    fn release(&mut self, k: usize) {
        match &mut self.model.held[k] {
            Some(h) if h.holds > 1 => h.holds -= 1,
            held => *held = None,
        }
    }

    /// A newcomer for `keys` (one: `RLOCK.ACQUIRE`, more: `RLOCK.ACQUIREALL`), without a
    /// wait or with one (blocked or `NOTIFY`, sometimes short). Returns its grant if the model
    /// lets it in at once, with the tokens the server replied.
    fn acquire(
        &mut self,
        rng: &mut Rng,
        owner: &str,
        keys: Vec<usize>,
    ) -> Result<Option<(Grant, Vec<i64>)>, String> {
        let line = match keys.len() {
            1 => format!("RLOCK.ACQUIRE k{} {owner} PX 60000", keys[0]),
            n => format!("RLOCK.ACQUIREALL {n} {} {owner} PX 60000", names(&keys)),
        };
        let wait = match rng.below(3) {
            0 => None,
            _ => Some(pick_wait(rng)),
        };
        let (verb, _) = line.split_once(' ').expect("a command");
        let what = format!("{verb} {}", names(&keys));
        self.s.history.push(match wait {
            None => format!("{owner}: {what} (no wait)"),
            Some((ms, via)) => format!("{owner}: {what} WAIT {ms} ({via:?})"),
        });
        let at_once = self.model.at_once(&keys, owner);
        let deadlock = !at_once && wait.is_some() && self.model.closes_cycle(&keys, owner);
        if deadlock {
            self.s.history.push("  (a deadlock: refused)".into());
        }
        let grant = at_once.then(|| self.model.take(&keys, owner));
        let told = match wait {
            None => match self.s.c.q(&line) {
                Value::Nil => None,
                Value::Int(t) => Some(Told::Granted(t)),
                Value::Array(tokens) => {
                    Some(Told::GrantedAll(tokens.iter().map(Value::int).collect()))
                }
                other => Some(Told::Failed(format!("{other:?}"))),
            },
            Some((ms, via)) => {
                let (mut waiter, told) =
                    Waiter::start(self.s.server, &mut self.s.c, owner, &line, ms, via, at_once);
                if keys.len() > 1 {
                    waiter.keys = keys.iter().map(|k| format!("k{k}")).collect();
                }
                let refused = |told: &Option<Told>| matches!(told, Some(Told::Failed(e)) if e.starts_with("DEADLOCK"));
                match (at_once, told) {
                    (false, None) if deadlock && via == Via::Blocked => {
                        let told = waiter.read(Duration::from_secs(3));
                        if !refused(&told) {
                            return Err(format!("{owner}'s {what}: a deadlock, server {told:?}"));
                        }
                        None
                    }
                    (false, told) if deadlock && refused(&told) => None,
                    (false, None) if ms == 30 => waiter.times_out().map(|()| None)?,
                    (false, None) => {
                        self.s.waiters.push(Some(waiter));
                        self.model.waiting.push(Request {
                            id: self.s.waiters.len() - 1,
                            owner: owner.to_string(),
                            keys,
                        });
                        return Ok(None);
                    }
                    (_, told) => told,
                }
            }
        };
        match (grant, told) {
            (None, None) => Ok(None),
            (Some(grant), Some(Told::Granted(t))) if keys.len() == 1 => Ok(Some((grant, vec![t]))),
            (Some(grant), Some(Told::GrantedAll(t))) if t.len() == keys.len() && keys.len() > 1 => {
                Ok(Some((grant, t)))
            }
            (grant, told) => Err(format!(
                "{owner}'s {what}: model says at once={}, server {told:?}",
                grant.is_some()
            )),
        }
    }

    /// Checks the tokens of this event's grants: a re-entered key keeps its token, a fresh
    /// one's is above every earlier token (in key order within a request; the event's
    /// requests are let in together, so among them only above what came before), and records
    /// them in the model.
    fn learn(&mut self, grants: Vec<(Grant, Vec<i64>)>) -> Result<(), String> {
        let mut fresh_tokens = Vec::new();
        for (grant, tokens) in grants {
            if tokens.len() != grant.keys.len() {
                return Err(format!("{} tokens for keys {:?}", tokens.len(), grant.keys));
            }
            let mut mine = Vec::new();
            for ((k, fresh), t) in grant.keys.iter().zip(&grant.fresh).zip(&tokens) {
                let h = self.model.held[*k].as_mut().expect("just granted");
                if *fresh {
                    h.token = *t;
                    mine.push(*t);
                } else if h.token != *t {
                    return Err(format!("re-entry of k{k} told token {t}, held {}", h.token));
                }
            }
            rising(&mut 0, &mine).map_err(|e| format!("within one request: {e}"))?;
            fresh_tokens.extend(mine);
        }
        fresh_tokens.sort_unstable();
        rising(&mut self.s.last_token, &fresh_tokens)
    }
}
