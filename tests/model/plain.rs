//! The plain lock's rules as a model: one holder (reentrant), a FIFO queue; whenever the lock
//! is free its first waiter enters (work conservation), whatever made it free.

use super::harness::{Rng, Told, Via, Waiter};
use crate::common::{Conn, Server};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

const OWNERS: usize = 6;

#[derive(Default)]
struct Model {
    holder: Option<(String, i64)>,
    queue: VecDeque<usize>,
}

struct Run<'a> {
    server: &'a Server,
    c: Conn,
    model: Model,
    /// Waiters by id (None once answered).
    waiters: Vec<Option<Waiter>>,
    last_token: i64,
    history: &'a mut Vec<String>,
}

pub fn check(seed: u64, events: usize, history: &mut Vec<String>) -> Result<(), String> {
    let server = Server::start();
    let mut run = Run {
        c: server.conn(),
        server: &server,
        model: Model::default(),
        waiters: Vec::new(),
        last_token: 0,
        history,
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
        self.model
            .queue
            .iter()
            .any(|id| self.waiters[*id].as_ref().is_some_and(|w| w.owner == owner))
    }

    fn step(&mut self, rng: &mut Rng) -> Result<(), String> {
        let owner = format!("o{}", rng.below(OWNERS));
        let holder = self.model.holder.as_ref().map(|(o, _)| o.clone());
        let mut granted = Vec::new();
        let mut refused = Vec::new();
        match rng.below(11) {
            0 | 1 if !self.waiting_owner(&owner) => {
                self.history.push(format!("{owner}: ACQUIRE (no wait)"));
                let reply = self.c.q(&format!("RLOCK.ACQUIRE k {owner} PX 60000"));
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
                let via = if rng.chance(50) {
                    Via::Blocked
                } else {
                    Via::Notify
                };
                let short = rng.chance(25);
                let wait = if short { 30 } else { 60_000 };
                self.history
                    .push(format!("{owner}: ACQUIRE WAIT {wait} ({via:?})"));
                let at_once = self.acquire_at_once(&owner);
                let line = format!("RLOCK.ACQUIRE k {owner} PX 60000");
                let (mut waiter, told) =
                    Waiter::start(self.server, &mut self.c, &owner, &line, wait, via, at_once);
                match (at_once, told) {
                    (true, Some(Told::Granted(t))) => {
                        self.token(t, holder.as_deref() == Some(&*owner))?
                    }
                    (false, None) if short => {
                        // Its timeout is the very next thing to happen.
                        match waiter.read(Duration::from_secs(5)) {
                            Some(Told::NotGranted) => {}
                            other => return Err(format!("{owner}'s short wait: {other:?}")),
                        }
                    }
                    (false, None) => {
                        self.waiters.push(Some(waiter));
                        self.model.queue.push_back(self.waiters.len() - 1);
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
                self.history.push(format!("{h}: RELEASE"));
                let remaining = self.c.q(&format!("RLOCK.RELEASE k {h}")).int();
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
                let (how, owner) = {
                    let w = self.waiters[id].as_mut().expect("live");
                    (rng.below(3), w.owner.clone())
                };
                match how {
                    0 => {
                        self.history.push(format!("{owner}: disconnect"));
                        self.waiters[id] = None;
                    }
                    1 => {
                        self.history.push(format!("{owner}: RLOCK.CANCEL"));
                        let left = self.c.q(&format!("RLOCK.CANCEL k {owner}")).int();
                        if left != 1 {
                            return Err(format!("cancel of {owner} took {left}"));
                        }
                        refused.push(id);
                    }
                    _ => {
                        let w = self.waiters[id].as_ref().expect("live");
                        if w.via != Via::Blocked {
                            return Ok(());
                        }
                        self.history.push(format!("{owner}: CLIENT UNBLOCK"));
                        self.c.q(&format!("CLIENT UNBLOCK {}", w.client_id));
                        refused.push(id);
                    }
                }
                self.model.queue.retain(|q| *q != id);
            }
            8 => {
                let Some(h) = holder else { return Ok(()) };
                self.history.push(format!("{h}: lease ends (RENEW PX 1)"));
                if self.c.q(&format!("RLOCK.RENEW k {h} PX 1")).int() != 1 {
                    return Err("renew by the holder refused".into());
                }
                self.model.holder = None;
            }
            9 => {
                self.history.push("FORCERELEASE".into());
                let n = self.c.q("RLOCK.FORCERELEASE k").int();
                if n != i64::from(holder.is_some()) {
                    return Err(format!("forcerelease replied {n}"));
                }
                self.model.holder = None;
            }
            10 => {
                self.history.push("DEL".into());
                self.c.q("DEL k");
                self.model.holder = None;
            }
            _ => return Ok(()),
        }
        // The rules: a free lock goes to its first waiter.
        if self.model.holder.is_none() {
            if let Some(id) = self.model.queue.pop_front() {
                let owner = self.waiters[id].as_ref().expect("live").owner.clone();
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
        if reentry {
            return Ok(());
        }
        if token <= self.last_token {
            return Err(format!("token {token} not above {}", self.last_token));
        }
        self.last_token = token;
        Ok(())
    }

    fn pick_waiter(&self, rng: &mut Rng) -> Option<usize> {
        let q: Vec<usize> = self.model.queue.iter().copied().collect();
        (!q.is_empty()).then(|| q[rng.below(q.len())])
    }

    /// The granted and refused waiters hear so, nobody else does, and the lock is as modelled.
    fn settle(&mut self, granted: &[usize], refused: &[usize]) -> Result<(), String> {
        for id in granted {
            let w = self.waiters[*id].as_mut().expect("live");
            let owner = w.owner.clone();
            match w.read(Duration::from_secs(3)) {
                Some(Told::Granted(t)) => self.token(t, false)?,
                other => {
                    return Err(format!(
                        "{owner} should have been granted (FIFO head), got {other:?}"
                    ))
                }
            }
            self.waiters[*id] = None;
        }
        for id in refused {
            let w = self.waiters[*id].as_mut().expect("live");
            let owner = w.owner.clone();
            let expect_message = w.via == Via::Blocked;
            if expect_message && w.read(Duration::from_secs(3)) != Some(Told::NotGranted) {
                return Err(format!("{owner} should have been answered nil"));
            }
            self.waiters[*id] = None;
        }
        for id in self.model.queue.clone() {
            let w = self.waiters[id].as_mut().expect("live");
            if let Some(told) = w.read(Duration::from_millis(1)) {
                return Err(format!(
                    "{} still waits in the model, told {told:?}",
                    w.owner
                ));
            }
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let info = self.c.q("RLOCK.INFO k");
            let server = (!info.is_nil()).then(|| {
                (
                    info.field("owner").text(),
                    info.field("holds").int(),
                    info.field("waiters").int(),
                )
            });
            let model = self
                .model
                .holder
                .as_ref()
                .map(|(o, n)| (o.clone(), *n, self.model.queue.len() as i64));
            if server == model {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("server {server:?}, model {model:?}"));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}
