//! The counting semaphore's rules as a model: one count of permits that belong to nobody; a
//! request is granted when it fits and nobody is queued ahead of it (the head is never passed
//! by a smaller request behind it); any release adds permits, beyond what was taken; additions
//! may be negative, a drain takes all; a Redisson client's release serves the queue too.

use super::harness::{agree, outcomes, pick_wait, Rng, Session, Told, Waiter};
use crate::common::redisson::semaphore as redisson;
use crate::common::Server;
use std::collections::VecDeque;

#[derive(Default)]
struct Model {
    available: i64,
    /// (waiter id, permits asked for), in queue order.
    queue: VecDeque<(usize, i64)>,
}

impl Model {
    /// Lets in the head while it fits: the waiters let in, with what each asked for.
    fn serve(&mut self) -> Vec<(usize, i64)> {
        let mut granted = Vec::new();
        while let Some(&(id, n)) = self.queue.front() {
            if self.available < n {
                break;
            }
            self.queue.pop_front();
            self.available -= n;
            granted.push((id, n));
        }
        granted
    }
}

pub fn check(seed: u64, events: usize, history: &mut Vec<String>) -> Result<(), String> {
    let server = Server::start();
    let mut s = Session::new(&server, history);
    let mut rng = Rng(seed);
    let mut model = Model {
        available: rng.below(4) as i64,
        ..Model::default()
    };
    s.c.q(&format!("RCSEM.SETPERMITS s {}", model.available));
    s.history.push(format!("SETPERMITS {}", model.available));
    let mut requests = 0;
    for _ in 0..events {
        let n = 1 + rng.below(3) as i64;
        let mut refused = Vec::new();
        let mut replied = None;
        match rng.below(12) {
            0..=3 => {
                requests += 1;
                let id = format!("w{requests}");
                let line = format!("RCSEM.ACQUIRE s PERMITS {n} ID {id}");
                let at_once = model.queue.is_empty() && model.available >= n;
                if at_once {
                    model.available -= n;
                }
                if rng.chance(25) {
                    s.history.push(format!("{id}: ACQUIRE {n} (no wait)"));
                    let reply = s.c.q(&line);
                    let expected = at_once.then_some(n);
                    if reply.is_nil() == at_once || (at_once && reply.int() != n) {
                        return Err(format!("{id} {n}: model {expected:?}, server {reply:?}"));
                    }
                } else {
                    let (wait, via) = pick_wait(&mut rng);
                    s.history
                        .push(format!("{id}: ACQUIRE {n} WAIT {wait} ({via:?})"));
                    let (mut waiter, told) =
                        Waiter::start(s.server, &mut s.c, &id, &line, wait, via, at_once);
                    match (at_once, told) {
                        (true, Some(Told::Granted(got))) if got == n => {}
                        (false, None) if wait == 30 => waiter.times_out()?,
                        (false, None) => {
                            s.waiters.push(Some(waiter));
                            model.queue.push_back((s.waiters.len() - 1, n));
                        }
                        (a, told) => {
                            return Err(format!("{id} {n}: model at once={a}, server {told:?}"))
                        }
                    }
                }
            }
            4 | 5 => {
                s.history.push(format!("RELEASE {n}"));
                model.available += n;
                replied = Some(s.c.q(&format!("RCSEM.RELEASE s PERMITS {n}")).int());
            }
            6 => {
                s.history.push(format!("Redisson release {n}"));
                model.available += n;
                redisson::release(&mut s.c, "s", n);
            }
            7 | 8 => {
                let queued: Vec<usize> = model.queue.iter().map(|(id, _)| *id).collect();
                if queued.is_empty() {
                    continue;
                }
                let id = queued[rng.below(queued.len())];
                if !s.depart(&mut rng, id, "s", &mut refused)? {
                    continue;
                }
                model.queue.retain(|(q, _)| *q != id);
            }
            9 => {
                s.history.push("DRAIN".into());
                let taken = s.c.q("RCSEM.DRAIN s").int();
                if taken != model.available {
                    return Err(format!("drain took {taken}, model {}", model.available));
                }
                model.available = 0;
            }
            _ => {
                // Between -3 and 6 permits, so waiters are served and starve too.
                let add = if model.available > 3 {
                    -(1 + rng.below(6) as i64)
                } else {
                    1 + rng.below(3) as i64
                };
                s.history.push(format!("ADDPERMITS {add}"));
                model.available += add;
                replied = Some(s.c.q(&format!("RCSEM.ADDPERMITS s {add}")).int());
            }
        }
        let granted = model.serve();
        if let Some(reply) = replied.filter(|r| *r != model.available) {
            return Err(format!(
                "replied {reply} available, model {}",
                model.available
            ));
        }
        let ids: Vec<usize> = granted.iter().map(|(id, _)| *id).collect();
        let still: Vec<usize> = model.queue.iter().map(|(id, _)| *id).collect();
        let told = outcomes(&mut s.waiters, &ids, &refused, &still)?;
        let asked: Vec<i64> = granted.iter().map(|(_, n)| *n).collect();
        if told != asked {
            return Err(format!("waiters told {told:?}, model granted {asked:?}"));
        }
        agree(|| s.c.q("RCSEM.AVAILABLE s").int(), model.available)?;
    }
    server.assert_no_crash();
    Ok(())
}
