//! The read-write lock's rules as a model: many readers or one writer; a writer may take read
//! holds (and keeps them when it releases its write holds); a reader asking for write is
//! refused at once; one FIFO queue in which a run of readers at the head enters together and a
//! writer alone, and a newcomer never passes anyone queued.

use super::harness::{agree, outcomes, rising, Rng, Told, Via, Waiter};
use crate::common::{Conn, Server};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

const OWNERS: usize = 6;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Read,
    Write,
}

impl Mode {
    fn word(self) -> &'static str {
        match self {
            Mode::Read => "READ",
            Mode::Write => "WRITE",
        }
    }
}

#[derive(Default)]
struct Model {
    /// owner -> (read holds, write holds)
    holds: BTreeMap<String, (i64, i64)>,
    queue: VecDeque<(usize, Mode)>,
}

impl Model {
    fn writer(&self) -> bool {
        self.holds.values().any(|(_, w)| *w > 0)
    }

    fn may_enter(&self, mode: Mode) -> bool {
        match mode {
            Mode::Read => !self.writer(),
            Mode::Write => self.holds.is_empty(),
        }
    }

    /// What an acquire answers at once: Some(Ok(new holding?)), Some(Err(())) for a refused
    /// upgrade, None when it must wait (and the holding is applied).
    fn at_once(&mut self, owner: &str, mode: Mode) -> Option<Result<bool, ()>> {
        let (reads, writes) = self.holds.get(owner).copied().unwrap_or((0, 0));
        match mode {
            Mode::Read if reads > 0 => {
                self.holds.entry(owner.to_string()).or_insert((0, 0)).0 += 1;
                Some(Ok(false))
            }
            Mode::Read if writes > 0 => {
                self.holds.entry(owner.to_string()).or_insert((0, 0)).0 += 1;
                Some(Ok(true))
            }
            Mode::Write if writes > 0 => {
                self.holds.entry(owner.to_string()).or_insert((0, 0)).1 += 1;
                Some(Ok(false))
            }
            Mode::Write if reads > 0 => Some(Err(())),
            _ if self.queue.is_empty() && self.may_enter(mode) => {
                let e = self.holds.entry(owner.to_string()).or_insert((0, 0));
                match mode {
                    Mode::Read => e.0 += 1,
                    Mode::Write => e.1 += 1,
                }
                Some(Ok(true))
            }
            _ => None,
        }
    }
}

pub fn check(seed: u64, events: usize, history: &mut Vec<String>) -> Result<(), String> {
    let server = Server::start();
    let mut c = server.conn();
    let mut model = Model::default();
    let mut waiters: Vec<Option<Waiter>> = Vec::new();
    let mut last_token = 0;
    let mut rng = Rng(seed);
    for _ in 0..events {
        let owner = format!("o{}", rng.below(OWNERS));
        let mode = if rng.chance(60) {
            Mode::Read
        } else {
            Mode::Write
        };
        let waiting = |model: &Model, waiters: &[Option<Waiter>], owner: &str| {
            model
                .queue
                .iter()
                .any(|(id, _)| waiters[*id].as_ref().is_some_and(|w| w.owner == owner))
        };
        let mut refused = Vec::new();
        match rng.below(10) {
            0 | 1 if !waiting(&model, &waiters, &owner) => {
                history.push(format!("{owner}: ACQUIRE {} (no wait)", mode.word()));
                let reply = c.q(&format!(
                    "RWLOCK.ACQUIRE k {owner} {} PX 60000",
                    mode.word()
                ));
                match (model.at_once(&owner, mode), reply) {
                    (Some(Ok(fresh)), crate::common::Value::Int(t)) => {
                        if fresh {
                            rising(&mut last_token, &[t])?;
                        }
                    }
                    (Some(Err(())), crate::common::Value::Error(e))
                        if e.contains("holds the read lock") => {}
                    (None, crate::common::Value::Nil) => {}
                    (m, reply) => {
                        return Err(format!("{owner} {mode:?}: model {m:?}, server {reply:?}"))
                    }
                }
            }
            2..=4 if !waiting(&model, &waiters, &owner) => {
                let via = if rng.chance(50) {
                    Via::Blocked
                } else {
                    Via::Notify
                };
                let short = rng.chance(25);
                let wait = if short { 30 } else { 60_000 };
                history.push(format!(
                    "{owner}: ACQUIRE {} WAIT {wait} ({via:?})",
                    mode.word()
                ));
                let answer = model.at_once(&owner, mode);
                let line = format!("RWLOCK.ACQUIRE k {owner} {} PX 60000", mode.word());
                let (mut waiter, told) =
                    Waiter::start(&server, &mut c, &owner, &line, wait, via, answer.is_some());
                match (answer, told) {
                    (Some(Ok(fresh)), Some(Told::Granted(t))) => {
                        if fresh {
                            rising(&mut last_token, &[t])?;
                        }
                    }
                    (Some(Err(())), Some(Told::Failed(e))) if e.contains("holds the read lock") => {
                    }
                    (None, None) if short => match waiter.read(Duration::from_secs(5)) {
                        Some(Told::NotGranted) => {}
                        other => return Err(format!("{owner}'s short wait: {other:?}")),
                    },
                    (None, None) => {
                        waiters.push(Some(waiter));
                        model.queue.push_back((waiters.len() - 1, mode));
                    }
                    (m, told) => {
                        return Err(format!(
                            "{owner} {mode:?} wait: model {m:?}, server {told:?}"
                        ))
                    }
                }
            }
            5 | 6 => {
                let held: Vec<(String, (i64, i64))> =
                    model.holds.iter().map(|(o, h)| (o.clone(), *h)).collect();
                if held.is_empty() {
                    continue;
                }
                let (o, (reads, writes)) = held[rng.below(held.len())].clone();
                let mode = if reads > 0 && (writes == 0 || rng.chance(50)) {
                    Mode::Read
                } else {
                    Mode::Write
                };
                history.push(format!("{o}: RELEASE {}", mode.word()));
                let left = c.q(&format!("RWLOCK.RELEASE k {o} {}", mode.word())).int();
                let e = model.holds.get_mut(&o).expect("held");
                let n = match mode {
                    Mode::Read => &mut e.0,
                    Mode::Write => &mut e.1,
                };
                *n -= 1;
                if left != *n {
                    return Err(format!("release left {left}, model {n}"));
                }
                if *e == (0, 0) {
                    model.holds.remove(&o);
                }
            }
            7 => {
                let queued: Vec<usize> = model.queue.iter().map(|(id, _)| *id).collect();
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
                        if c.q(&format!("RLOCK.CANCEL k {o}")).int() != 1 {
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
                model.queue.retain(|(q, _)| *q != id);
            }
            8 => {
                let held: Vec<String> = model.holds.keys().cloned().collect();
                if held.is_empty() {
                    continue;
                }
                let o = held[rng.below(held.len())].clone();
                history.push(format!("{o}: lease ends (RENEW PX 1)"));
                if c.q(&format!("RWLOCK.RENEW k {o} PX 1")).int() != 1 {
                    return Err(format!("renew by holder {o} refused"));
                }
                model.holds.remove(&o);
            }
            _ => {
                history.push("FORCERELEASE".into());
                c.q("RWLOCK.FORCERELEASE k");
                model.holds.clear();
            }
        }
        // The rules: readers at the head enter together, a writer alone, nobody passes.
        let mut granted = Vec::new();
        while let Some(&(id, mode)) = model.queue.front() {
            if !model.may_enter(mode) {
                break;
            }
            model.queue.pop_front();
            let o = waiters[id].as_ref().expect("live").owner.clone();
            let e = model.holds.entry(o).or_insert((0, 0));
            match mode {
                Mode::Read => e.0 += 1,
                Mode::Write => e.1 += 1,
            }
            granted.push(id);
        }
        let still: Vec<usize> = model.queue.iter().map(|(id, _)| *id).collect();
        let tokens = outcomes(&mut waiters, &granted, &refused, &still)?;
        rising(&mut last_token, &tokens)?;
        let expected = (
            model
                .holds
                .iter()
                .map(|(o, (r, w))| (o.clone(), *r, *w))
                .collect::<Vec<_>>(),
            model.queue.iter().filter(|(_, m)| *m == Mode::Read).count() as i64,
            model
                .queue
                .iter()
                .filter(|(_, m)| *m == Mode::Write)
                .count() as i64,
        );
        if expected.0.iter().filter(|(_, _, w)| *w > 0).count() > 1 {
            return Err("the model has two writers".into());
        }
        agree(|| state(&mut c), expected)?;
    }
    server.assert_no_crash();
    Ok(())
}

/// (owner, read holds, write holds) by owner, waiting readers, waiting writers.
fn state(c: &mut Conn) -> (Vec<(String, i64, i64)>, i64, i64) {
    let info = c.q("RWLOCK.INFO k");
    if info.is_nil() {
        return (Vec::new(), 0, 0);
    }
    let mut holds: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for h in info.field("holders").items() {
        let e = holds.entry(h.field("owner").text()).or_insert((0, 0));
        match h.field("mode").text().as_str() {
            "read" => e.0 = h.field("holds").int(),
            _ => e.1 = h.field("holds").int(),
        }
    }
    (
        holds.into_iter().map(|(o, (r, w))| (o, r, w)).collect(),
        info.field("waiting_readers").int(),
        info.field("waiting_writers").int(),
    )
}
