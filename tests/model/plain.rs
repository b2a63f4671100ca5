//! The plain lock's rules as a model: one holder (reentrant), a FIFO queue; whenever the lock
//! is free its first waiter enters (work conservation), whatever made it free.

use super::harness::{agree, outcomes, pick_wait, rising, Rng, Session, Told, Waiter};
use crate::common::{Conn, Server};
use std::collections::VecDeque;

const OWNERS: usize = 6;

#[derive(Default)]
struct Model {
    holder: Option<(String, i64)>,
    queue: VecDeque<usize>,
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
        run.step(&mut rng)?;
    }
    server.assert_no_crash();
    Ok(())
}

impl Run<'_> {
    fn waiting_owner(&self, owner: &str) -> bool {
        self.model.queue.iter().any(|id| {
            self.s.waiters[*id]
                .as_ref()
                .is_some_and(|w| w.owner == owner)
        })
    }

    fn step(&mut self, rng: &mut Rng) -> Result<(), String> {
        let owner = format!("o{}", rng.below(OWNERS));
        let holder = self.model.holder.as_ref().map(|(o, _)| o.clone());
        let mut granted = Vec::new();
        let mut refused = Vec::new();
        match rng.below(11) {
            0 | 1 if !self.waiting_owner(&owner) => {
                self.s.history.push(format!("{owner}: ACQUIRE (no wait)"));
                let reply = self.s.c.q(&format!("RLOCK.ACQUIRE k {owner} PX 60000"));
                let expected = self.acquire_at_once(&owner);
                match (expected, reply.is_nil()) {
                    (true, false) => self.token(reply.int(), holder.as_deref() == Some(&*owner))?,
                    (false, true) => {}
                    (e, _) => {
                        return Err(format!(
                            "{owner}'s acquire: model says granted={e}, server {reply:?}"
                        ))
                    }
                }
            }
            2..=4 if !self.waiting_owner(&owner) => {
                let (wait, via) = pick_wait(rng);
                self.s
                    .history
                    .push(format!("{owner}: ACQUIRE WAIT {wait} ({via:?})"));
                let at_once = self.acquire_at_once(&owner);
                let line = format!("RLOCK.ACQUIRE k {owner} PX 60000");
                let (mut waiter, told) = Waiter::start(
                    self.s.server,
                    &mut self.s.c,
                    &owner,
                    &line,
                    wait,
                    via,
                    at_once,
                );
                match (at_once, told) {
                    (true, Some(Told::Granted(t))) => {
                        self.token(t, holder.as_deref() == Some(&*owner))?
                    }
                    (false, None) if wait == 30 => waiter.times_out()?,
                    (false, None) => {
                        self.s.waiters.push(Some(waiter));
                        self.model.queue.push_back(self.s.waiters.len() - 1);
                    }
                    (at_once, told) => {
                        return Err(format!(
                            "{owner}'s wait: model says at once={at_once}, server {told:?}"
                        ))
                    }
                }
            }
            5 | 6 => {
                let Some(h) = holder else { return Ok(()) };
                self.s.history.push(format!("{h}: RELEASE"));
                let remaining = self.s.c.q(&format!("RLOCK.RELEASE k {h}")).int();
                let model_left = self.model.holder.as_ref().map_or(0, |(_, n)| n - 1);
                if remaining != model_left {
                    return Err(format!("release left {remaining}, model {model_left}"));
                }
                match &mut self.model.holder {
                    Some((_, n)) if *n > 1 => *n -= 1,
                    _ => self.model.holder = None,
                }
            }
            7 => {
                let Some(id) = self.pick_waiter(rng) else {
                    return Ok(());
                };
                if !self.s.depart(rng, id, "k", &mut refused)? {
                    return Ok(());
                }
                self.model.queue.retain(|q| *q != id);
            }
            8 => {
                let Some(h) = holder else { return Ok(()) };
                self.s.history.push(format!("{h}: lease ends (RENEW PX 1)"));
                if self.s.c.q(&format!("RLOCK.RENEW k {h} PX 1")).int() != 1 {
                    return Err("renew by the holder refused".into());
                }
                self.model.holder = None;
            }
            9 => {
                self.s.history.push("FORCERELEASE".into());
                let n = self.s.c.q("RLOCK.FORCERELEASE k").int();
                if n != i64::from(holder.is_some()) {
                    return Err(format!("forcerelease replied {n}"));
                }
                self.model.holder = None;
            }
            10 => {
                self.s.history.push("DEL".into());
                self.s.c.q("DEL k");
                self.model.holder = None;
            }
            _ => return Ok(()),
        }
        // The rules: a free lock goes to its first waiter.
        if self.model.holder.is_none() {
            if let Some(id) = self.model.queue.pop_front() {
                let owner = self.s.waiters[id].as_ref().expect("live").owner.clone();
                self.model.holder = Some((owner, 1));
                granted.push(id);
            }
        }
        self.settle(&granted, &refused)
    }

    /// Whether an acquire by `owner` is answered at once with a holding (model), and applies it.
    fn acquire_at_once(&mut self, owner: &str) -> bool {
        match &mut self.model.holder {
            Some((o, n)) if o == owner => {
                *n += 1;
                true
            }
            None if self.model.queue.is_empty() => {
                self.model.holder = Some((owner.to_string(), 1));
                true
            }
            _ => false,
        }
    }

    fn token(&mut self, token: i64, reentry: bool) -> Result<(), String> {
        match reentry {
            true => Ok(()),
            false => rising(&mut self.s.last_token, &[token]),
        }
    }

    fn pick_waiter(&self, rng: &mut Rng) -> Option<usize> {
        let q: Vec<usize> = self.model.queue.iter().copied().collect();
        (!q.is_empty()).then(|| q[rng.below(q.len())])
    }

    /// The granted and refused waiters hear so, nobody else does, and the lock is as modelled.
    fn settle(&mut self, granted: &[usize], refused: &[usize]) -> Result<(), String> {
        let waiting: Vec<usize> = self.model.queue.iter().copied().collect();
        let tokens = outcomes(&mut self.s.waiters, granted, refused, &waiting)?;
        rising(&mut self.s.last_token, &tokens)?;
        let model = self
            .model
            .holder
            .as_ref()
            .map(|(o, n)| (o.clone(), *n, waiting.len() as i64));
        agree(|| state(&mut self.s.c), model)
    }
}

/// (owner, holds, waiters) of `k`, None when it is free.
fn state(c: &mut Conn) -> Option<(String, i64, i64)> {
    let info = c.q("RLOCK.INFO k");
    (!info.is_nil()).then(|| {
        (
            info.field("owner").text(),
            info.field("holds").int(),
            info.field("waiters").int(),
        )
    })
}
