//! The model check's side of the server: seeded events, waiters on connections of their own
//! (blocked in their command, or told by message on a subscribed connection), and settling:
//! after each event the outcomes the model expects must arrive, and no other.

use crate::common::{Conn, Server, Value};
use std::time::Duration;

/// splitmix64: a seeded generator, so a failing sequence can be replayed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// What a waiter was told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Told {
    Granted(i64),
    /// A request for several keys: its tokens, in its keys' order.
    GrantedAll(Vec<i64>),
    /// nil, or a `timeout` message.
    NotGranted,
    Failed(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Blocked,
    Notify,
}

/// A queued request on a connection of its own.
pub struct Waiter {
    pub owner: String,
    pub via: Via,
    pub conn: Conn,
    pub client_id: i64,
    /// A request for several keys: its keys, in order. With `NOTIFY` its outcome is a message
    /// per key, in this order (none named: one message).
    pub keys: Vec<String>,
}

impl Waiter {
    /// Sends `line` (an acquire without WAIT) with `WAIT wait_ms` (and `NOTIFY` for `via`).
    /// Returns the waiter and, when the server answered at once, what it said.
    pub fn start(
        server: &Server,
        commands: &mut Conn,
        owner: &str,
        line: &str,
        wait_ms: u64,
        via: Via,
        answered_at_once: bool,
    ) -> (Waiter, Option<Told>) {
        let mut conn = server.conn();
        let client_id = conn.q("CLIENT ID").int();
        let mut waiter = Waiter {
            owner: owner.to_string(),
            via,
            conn,
            client_id,
            keys: Vec::new(),
        };
        let told = match via {
            Via::Blocked => {
                let full = format!("{line} WAIT {wait_ms}");
                waiter
                    .conn
                    .send(&full.split_whitespace().collect::<Vec<_>>())
                    .expect("send");
                answered_at_once.then(|| waiter.read(Duration::from_secs(5)).expect("a reply"))
            }
            Via::Notify => {
                let channel = waiter.conn.q("RLOCK.CHANNEL").text();
                waiter.conn.cmd(&["SUBSCRIBE", &channel]);
                let full = format!("{line} WAIT {wait_ms} NOTIFY {client_id}");
                match commands.q(&full) {
                    Value::Simple(s) if s == "WAITING" => None,
                    reply => Some(told(&reply)),
                }
            }
        };
        (waiter, told)
    }

    /// A short wait that nothing else can end: its timeout is the very next thing to happen.
    pub fn times_out(&mut self) -> Result<(), String> {
        match self.read(Duration::from_secs(5)) {
            Some(Told::NotGranted) => Ok(()),
            other => Err(format!("{}'s short wait: {other:?}", self.owner)),
        }
    }

    /// The next outcome, if one arrives within `within`: with `NOTIFY`, one message for each
    /// of `keys` (all grants, their tokens in order, or all timeouts), each naming its key and
    /// the owner (else `Failed`).
    pub fn read(&mut self, within: Duration) -> Option<Told> {
        self.conn.set_read_timeout(Some(within));
        let reply = self.conn.read().ok()?;
        if self.via == Via::Blocked {
            return Some(told(&reply));
        }
        let mut each = Vec::new();
        for i in 0..self.keys.len().max(1) {
            let reply = match i {
                0 => reply.clone(),
                _ => {
                    self.conn.set_read_timeout(Some(Duration::from_secs(3)));
                    match self.conn.read() {
                        Ok(reply) => reply,
                        Err(e) => return Some(Told::Failed(format!("message {i} missing: {e}"))),
                    }
                }
            };
            let (told, key, owner) = message(&reply);
            let named = self.keys.get(i).map_or(&key, |k| k);
            if owner != self.owner || key != *named {
                return Some(Told::Failed(format!(
                    "message {i} names {key} {owner}, not {named} {}",
                    self.owner
                )));
            }
            each.push(told);
        }
        if self.keys.is_empty() {
            return each.pop();
        }
        let tokens: Option<Vec<i64>> = each
            .iter()
            .map(|t| match t {
                Told::Granted(t) => Some(*t),
                _ => None,
            })
            .collect();
        Some(match tokens {
            Some(tokens) => Told::GrantedAll(tokens),
            None if each.iter().all(|t| *t == Told::NotGranted) => Told::NotGranted,
            None => Told::Failed(format!("mixed messages for one request: {each:?}")),
        })
    }
}

/// A `NOTIFY` message, `<event> <family> <value> <key-length> <key> <owner>`: what it tells
/// (`granted` with its token, `timeout`, `failed` with its code), its key and owner.
fn message(reply: &Value) -> (Told, String, String) {
    let Value::Bulk(message) = &reply.items()[2] else {
        panic!("a message: {reply:?}")
    };
    let text = String::from_utf8_lossy(message).into_owned();
    let words: Vec<&str> = text.splitn(5, ' ').collect();
    let [event, _family, value, key_len, rest] = words[..] else {
        panic!("unexpected message {text}")
    };
    let key_len: usize = key_len.parse().expect("key length");
    let (key, owner) = (&rest[..key_len], &rest[key_len + 1..]);
    let told = match event {
        "granted" => Told::Granted(value.parse().expect("token")),
        "timeout" => Told::NotGranted,
        "failed" => Told::Failed(value.to_string()),
        _ => panic!("unexpected message {text}"),
    };
    (told, key.to_string(), owner.to_string())
}

fn told(reply: &Value) -> Told {
    match reply {
        Value::Int(token) => Told::Granted(*token),
        Value::Nil => Told::NotGranted,
        Value::Error(e) => Told::Failed(e.clone()),
        Value::Array(tokens) => Told::GrantedAll(tokens.iter().map(Value::int).collect()),
        other => panic!("unexpected reply {other:?}"),
    }
}

/// A wait's length and way: blocked or `NOTIFY` alike, a quarter of them short (30 ms).
pub fn pick_wait(rng: &mut Rng) -> (u64, Via) {
    let via = if rng.chance(50) {
        Via::Blocked
    } else {
        Via::Notify
    };
    (if rng.chance(25) { 30 } else { 60_000 }, via)
}

/// What a model's run keeps besides the model: the server, a connection for commands, the
/// waiters by id (None once answered), the last token of a fresh holding, the events so far.
pub struct Session<'a> {
    pub server: &'a Server,
    pub c: Conn,
    pub waiters: Vec<Option<Waiter>>,
    pub last_token: i64,
    pub history: &'a mut Vec<String>,
}

impl<'a> Session<'a> {
    pub fn new(server: &'a Server, history: &'a mut Vec<String>) -> Session<'a> {
        Session {
            server,
            c: server.conn(),
            waiters: Vec::new(),
            last_token: 0,
            history,
        }
    }
}

impl Session<'_> {
    /// Waiter `id` leaves, the way `rng` picks: it disconnects, is cancelled through `key`
    /// (`RLOCK.CANCEL key owner`, which must take one entry) or, when blocked, is unblocked
    /// (`CLIENT UNBLOCK`). The last two join `refused` (a blocked one hears nil). Returns
    /// false when nothing happened (an unblock picked for a `NOTIFY` waiter).
    pub fn depart(
        &mut self,
        rng: &mut Rng,
        id: usize,
        key: &str,
        refused: &mut Vec<usize>,
    ) -> Result<bool, String> {
        let w = self.waiters[id].as_ref().expect("a live waiter");
        let (owner, via, client) = (w.owner.clone(), w.via, w.client_id);
        match rng.below(3) {
            0 => {
                self.history.push(format!("{owner}: disconnect"));
                // Closed by the server inside this call (CLIENT KILL frees it there, the module's
                // disconnect handling with it), so the next command sees it gone, as the model
                // does; a socket only dropped is noticed whenever the server next reads it, and
                // a command on another connection could come first (a seed failed so, at load).
                self.c.q(&format!("CLIENT KILL ID {client}"));
                self.waiters[id] = None;
                return Ok(true);
            }
            1 => {
                self.history.push(format!("{owner}: RLOCK.CANCEL {key}"));
                let took = self.c.q(&format!("RLOCK.CANCEL {key} {owner}")).int();
                if took != 1 {
                    return Err(format!("cancel of {owner} on {key} took {took}"));
                }
            }
            _ if via == Via::Blocked => {
                self.history.push(format!("{owner}: CLIENT UNBLOCK"));
                self.c.q(&format!("CLIENT UNBLOCK {client}"));
            }
            _ => return Ok(false),
        }
        refused.push(id);
        Ok(true)
    }
}

/// How many events each family runs: `RLOCK_MODEL_EVENTS`, else `default`.
pub fn events(default: usize) -> usize {
    std::env::var("RLOCK_MODEL_EVENTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// The seeds to run: `RLOCK_MODEL_SEED` alone, else a few fixed ones plus one from the clock.
pub fn seeds() -> Vec<u64> {
    if let Some(seed) = std::env::var("RLOCK_MODEL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return vec![seed];
    }
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    vec![1, 2, clock]
}

/// Runs `check` for each seed, printing the seed and the event history when it fails.
pub fn run_seeds(
    family: &str,
    per_seed: usize,
    check: impl Fn(u64, usize, &mut Vec<String>) -> Result<(), String>,
) {
    for seed in seeds() {
        let mut history = Vec::new();
        if let Err(why) = check(seed, per_seed, &mut history) {
            let shown = history.len().saturating_sub(
                std::env::var("RLOCK_MODEL_SHOW")
                    .ok()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(40),
            );
            panic!(
                "{family}: the server disagrees with the model: {why}\n\
                 replay: RLOCK_MODEL_SEED={seed} RLOCK_MODEL_EVENTS={per_seed} cargo test --release --test model {family}\n\
                 last events ({} of {}):\n  {}",
                history.len() - shown,
                history.len(),
                history[shown..].join("\n  ")
            );
        }
    }
}

/// The waiters the model let in hear a grant (returned: their tokens), those it refused hear
/// nil (blocked ones; a cancelled `NOTIFY` waiter is told nothing), and those it keeps waiting
/// hear nothing. Answered waiters are dropped.
pub fn outcomes(
    waiters: &mut [Option<Waiter>],
    granted: &[usize],
    refused: &[usize],
    waiting: &[usize],
) -> Result<Vec<i64>, String> {
    Ok(outcomes_each(waiters, granted, refused, waiting)?.concat())
}

/// As `outcomes`, with each granted waiter's tokens apart (one per key of its request).
pub fn outcomes_each(
    waiters: &mut [Option<Waiter>],
    granted: &[usize],
    refused: &[usize],
    waiting: &[usize],
) -> Result<Vec<Vec<i64>>, String> {
    let mut tokens = Vec::new();
    for id in granted {
        let w = waiters[*id].as_mut().expect("a live waiter");
        match w.read(Duration::from_secs(3)) {
            Some(Told::Granted(t)) => tokens.push(vec![t]),
            Some(Told::GrantedAll(t)) => tokens.push(t),
            other => {
                return Err(format!(
                    "{} should have been let in, got {other:?}",
                    w.owner
                ))
            }
        }
        waiters[*id] = None;
    }
    for id in refused {
        let w = waiters[*id].as_mut().expect("a live waiter");
        if w.via == Via::Blocked && w.read(Duration::from_secs(3)) != Some(Told::NotGranted) {
            return Err(format!("{} should have been answered nil", w.owner));
        }
        waiters[*id] = None;
    }
    for id in waiting {
        let w = waiters[*id].as_mut().expect("a live waiter");
        if let Some(told) = w.read(Duration::from_millis(1)) {
            return Err(format!(
                "{} still waits in the model, but was told {told:?}",
                w.owner
            ));
        }
    }
    Ok(tokens)
}

/// Polls `server` until it equals `model` (3 s at most: a lease end takes its timer's turn).
pub fn agree<T: PartialEq + std::fmt::Debug>(
    mut server: impl FnMut() -> T,
    model: T,
) -> Result<(), String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    loop {
        let seen = server();
        if seen == model {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("server {seen:?}, model {model:?}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Tokens of new holdings only go up.
pub fn rising(last: &mut i64, tokens: &[i64]) -> Result<(), String> {
    for t in tokens {
        if *t <= *last {
            return Err(format!("token {t} not above {last}"));
        }
        *last = *t;
    }
    Ok(())
}
