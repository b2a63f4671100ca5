//! The semaphore's rules as a model: owned permits that add up per owner; a request is granted
//! when it fits and nobody is queued ahead of it (the head is never passed by smaller requests
//! behind it); permits come back on release, lease end or force, and with ADDPERMITS. `EACH`
//! grants n permits as n owners `<owner>:<i>` of one permit each, refused while any of them
//! holds; `RELEASEMANY ALL|ANY` gives back whole owners, all or none, or those that hold.

use super::harness::{agree, outcomes, rising, Rng, Told, Via, Waiter};
use crate::common::{Conn, Server, Value};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

const OWNERS: usize = 6;

#[derive(Default)]
struct Model {
    permits: i64,
    holds: BTreeMap<String, i64>,
    /// Waiter id, permits, `EACH`.
    queue: VecDeque<(usize, i64, bool)>,
}

impl Model {
    fn available(&self) -> i64 {
        self.permits - self.holds.values().sum::<i64>()
    }

    /// The owners a grant of `n` to `owner` writes, with the permits of each.
    fn grant(&mut self, owner: &str, n: i64, each: bool) {
        if each {
            for i in 1..=n {
                self.holds.insert(format!("{owner}:{i}"), 1);
            }
        } else {
            *self.holds.entry(owner.to_string()).or_insert(0) += n;
        }
    }

    /// Whether an `EACH` request of `n` by `owner` is refused: one of its owners holds.
    fn each_held(&self, owner: &str, n: i64) -> bool {
        (1..=n).any(|i| self.holds.contains_key(&format!("{owner}:{i}")))
    }
}

pub fn check(seed: u64, events: usize, history: &mut Vec<String>) -> Result<(), String> {
    let server = Server::start();
    let mut c = server.conn();
    let mut rng = Rng(seed);
    let mut model = Model {
        permits: 3 + rng.below(3) as i64,
        ..Model::default()
    };
    c.q(&format!("RSEM.SETPERMITS s {}", model.permits));
    history.push(format!("SETPERMITS {}", model.permits));
    let mut waiters: Vec<Option<Waiter>> = Vec::new();
    let mut last_token = 0;
    for _ in 0..events {
        let owner = format!("o{}", rng.below(OWNERS));
        let n = 1 + rng.below(3) as i64;
        let waiting = |model: &Model, waiters: &[Option<Waiter>], owner: &str| {
            model
                .queue
                .iter()
                .any(|(id, _, _)| waiters[*id].as_ref().is_some_and(|w| w.owner == owner))
        };
        let mut refused = Vec::new();
        match rng.below(12) {
            0..=3 if !waiting(&model, &waiters, &owner) => {
                let wait = match rng.below(4) {
                    0 => None,
                    1 => Some(30),
                    _ => Some(60_000),
                };
                let via = if rng.chance(50) {
                    Via::Blocked
                } else {
                    Via::Notify
                };
                let each = rng.chance(30);
                let each_word = if each { " EACH" } else { "" };
                history.push(format!(
                    "{owner}: ACQUIRE PERMITS {n}{each_word} WAIT {wait:?} ({via:?})"
                ));
                let line = format!("RSEM.ACQUIRE s {owner} PERMITS {n}{each_word} PX 60000");
                if each && model.each_held(&owner, n) {
                    let refused = c.q(&format!("{line} WAIT 60000"));
                    if !matches!(&refused, Value::Error(e) if e.starts_with("ERR EACH:")) {
                        return Err(format!("{owner} EACH {n} while held: {refused:?}"));
                    }
                    continue_settle(&mut c, &mut model, &mut waiters, &[], &mut last_token)?;
                    continue;
                }
                let at_once = model.queue.is_empty() && model.available() >= n;
                if at_once {
                    model.grant(&owner, n, each);
                }
                let Some(wait) = wait else {
                    let reply = c.q(&line);
                    match (at_once, reply.is_nil()) {
                        (true, false) => rising(&mut last_token, &[reply.int()])?,
                        (false, true) => {}
                        _ => {
                            return Err(format!(
                                "{owner} {n}: model at once={at_once}, server {reply:?}"
                            ))
                        }
                    }
                    continue_settle(&mut c, &mut model, &mut waiters, &refused, &mut last_token)?;
                    continue;
                };
                let (mut waiter, told) =
                    Waiter::start(&server, &mut c, &owner, &line, wait, via, at_once);
                match (at_once, told) {
                    (true, Some(Told::Granted(t))) => rising(&mut last_token, &[t])?,
                    (false, None) if wait == 30 => match waiter.read(Duration::from_secs(5)) {
                        Some(Told::NotGranted) => {}
                        other => return Err(format!("{owner}'s short wait: {other:?}")),
                    },
                    (false, None) => {
                        waiters.push(Some(waiter));
                        model.queue.push_back((waiters.len() - 1, n, each));
                    }
                    (a, told) => {
                        return Err(format!(
                            "{owner} {n} wait: model at once={a}, server {told:?}"
                        ))
                    }
                }
            }
            4 | 5 => {
                let held: Vec<(String, i64)> =
                    model.holds.iter().map(|(o, p)| (o.clone(), *p)).collect();
                if held.is_empty() {
                    continue;
                }
                let (o, p) = held[rng.below(held.len())].clone();
                let m = 1 + rng.below(p as usize) as i64;
                history.push(format!("{o}: RELEASE PERMITS {m}"));
                let left = c.q(&format!("RSEM.RELEASE s {o} PERMITS {m}")).int();
                if left != p - m {
                    return Err(format!("release left {left}, model {}", p - m));
                }
                if left == 0 {
                    model.holds.remove(&o);
                } else {
                    model.holds.insert(o, left);
                }
            }
            6 => {
                let queued: Vec<usize> = model.queue.iter().map(|(id, _, _)| *id).collect();
                if queued.is_empty() {
                    continue;
                }
                let id = queued[rng.below(queued.len())];
                let w = waiters[id].as_ref().expect("live");
                let (o, via, client) = (w.owner.clone(), w.via, w.client_id);
                match rng.below(3) {
                    0 => {
                        history.push(format!("{o}: disconnect"));
                        waiters[id] = None;
                    }
                    1 => {
                        history.push(format!("{o}: RLOCK.CANCEL"));
                        if c.q(&format!("RLOCK.CANCEL s {o}")).int() != 1 {
                            return Err(format!("cancel of {o}"));
                        }
                        refused.push(id);
                    }
                    _ if via == Via::Blocked => {
                        history.push(format!("{o}: CLIENT UNBLOCK"));
                        c.q(&format!("CLIENT UNBLOCK {client}"));
                        refused.push(id);
                    }
                    _ => continue,
                }
                model.queue.retain(|(q, _, _)| *q != id);
            }
            7 => {
                let held: Vec<String> = model.holds.keys().cloned().collect();
                if held.is_empty() {
                    continue;
                }
                let o = held[rng.below(held.len())].clone();
                history.push(format!("{o}: lease ends (RENEW PX 1)"));
                if c.q(&format!("RSEM.RENEW s {o} PX 1")).int() != 1 {
                    return Err(format!("renew by holder {o} refused"));
                }
                model.holds.remove(&o);
            }
            10 | 11 => release_many(&mut c, &mut model, &mut rng, history)?,
            _ => {
                // Keep the total between 1 and 8 so waiters can be served and starve too.
                let add = if model.permits > 6 {
                    -(rng.below(2) as i64 + 1)
                } else {
                    rng.below(3) as i64 + 1
                };
                history.push(format!("ADDPERMITS {add}"));
                c.q(&format!("RSEM.ADDPERMITS s {add}"));
                model.permits += add;
            }
        }
        continue_settle(&mut c, &mut model, &mut waiters, &refused, &mut last_token)?;
    }
    server.assert_no_crash();
    Ok(())
}

/// Serves the model's queue (the head while it fits), then compares with the server.
fn continue_settle(
    c: &mut Conn,
    model: &mut Model,
    waiters: &mut [Option<Waiter>],
    refused: &[usize],
    last_token: &mut i64,
) -> Result<(), String> {
    let mut granted = Vec::new();
    while let Some(&(id, n, each)) = model.queue.front() {
        if model.available() < n {
            break;
        }
        model.queue.pop_front();
        let o = waiters[id].as_ref().expect("live").owner.clone();
        model.grant(&o, n, each);
        granted.push(id);
    }
    let still: Vec<usize> = model.queue.iter().map(|(id, _, _)| *id).collect();
    let tokens = outcomes(waiters, &granted, refused, &still)?;
    rising(last_token, &tokens)?;
    if !granted.is_empty() && model.available() < 0 {
        return Err("the model granted more permits than there are".into());
    }
    let expected = (
        model.available(),
        model
            .holds
            .iter()
            .map(|(o, p)| (o.clone(), *p))
            .collect::<Vec<_>>(),
        model.queue.iter().map(|(_, n, _)| *n).collect::<Vec<_>>(),
    );
    agree(|| state(c), expected)
}

/// `RSEM.RELEASEMANY ALL|ANY` of one to three owners: held ones, one that holds nothing, or one
/// named twice. `ALL` gives back all or, with one not held, nothing (an error); `ANY` those held.
fn release_many(
    c: &mut Conn,
    model: &mut Model,
    rng: &mut Rng,
    history: &mut Vec<String>,
) -> Result<(), String> {
    let held: Vec<String> = model.holds.keys().cloned().collect();
    let mut named: Vec<String> = Vec::new();
    for _ in 0..1 + rng.below(3) {
        named.push(match rng.below(6) {
            0 => format!("o{}", rng.below(OWNERS)),
            1 if !named.is_empty() => named[rng.below(named.len())].clone(),
            _ if !held.is_empty() => held[rng.below(held.len())].clone(),
            _ => "nobody".to_string(),
        });
    }
    let all = rng.chance(50);
    let mode = if all { "ALL" } else { "ANY" };
    history.push(format!("RELEASEMANY {mode} {}", named.join(" ")));
    let mut released: Vec<&String> = Vec::new();
    let mut not_held = None;
    for owner in &named {
        if model.holds.contains_key(owner) && !released.contains(&owner) {
            released.push(owner);
        } else if not_held.is_none() {
            not_held = Some(owner.clone());
        }
    }
    let reply = c.q(&format!("RSEM.RELEASEMANY s {mode} {}", named.join(" ")));
    let expected = match (all, not_held) {
        (true, Some(owner)) => Value::Error(format!("ERR not held: {owner}")),
        _ => {
            for owner in &released {
                model.holds.remove(*owner);
            }
            Value::Int(released.len() as i64)
        }
    };
    if reply != expected {
        return Err(format!("RELEASEMANY: server {reply:?}, model {expected:?}"));
    }
    Ok(())
}

/// available, (owner, permits) by owner, the permits each waiter asks for in order.
fn state(c: &mut Conn) -> (i64, Vec<(String, i64)>, Vec<i64>) {
    let info = c.q("RSEM.INFO s");
    let mut holds: Vec<(String, i64)> = info
        .field("holders")
        .items()
        .iter()
        .map(|h| (h.field("owner").text(), h.field("permits").int()))
        .collect();
    holds.sort();
    let wanted = info
        .field("waiters")
        .items()
        .iter()
        .map(|w| w.int())
        .collect();
    (info.field("available").int(), holds, wanted)
}
