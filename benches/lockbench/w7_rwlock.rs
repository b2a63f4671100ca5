//! W7: the read-write lock. RWLOCK against Redisson's RReadWriteLock as Redisson runs it (its
//! read and write scripts through EVALSHA, waiting on `redisson_rwlock:{k}`), on one hot lock:
//! a read-mostly mix of blocking clients, then one writer against a stream of readers, which
//! RWLOCK queues behind the writer and Redisson's scripts keep letting in.

use crate::common::redisson::rw;
use crate::common::{wait_until, Conn, Server, Value};
use crate::driver::{
    clients_for_run, evalsha, percentile, redisson_lock, reset, total_calls, Impl, Rng, Rounds,
    Shas, Table, ROUNDS,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const SIDES: [Impl; 2] = [Impl::Rlock, Impl::Redisson];
const LEASE: &str = "10000";
/// Client-side work while holding: a sleep, so the clients leave the two cores to the server.
const WORK: Duration = Duration::from_micros(100);
const CLIENTS: usize = 64;
const WRITE_PERCENT: u64 = 5;
/// How long a reader or a read-mostly client waits: RWLOCK's WAIT, Redisson's tryLock time.
const WAIT: Duration = Duration::from_secs(5);
const READERS: usize = 32;
/// Writer tries per side and round.
const WRITER_TRIES: usize = 4;
/// Redisson's writer may never get in: each try ends here and counts as a timeout.
const WRITER_WAIT: Duration = Duration::from_secs(2);
/// No new writer try after this, per side and round: keeps W7 under a minute when every try
/// times out.
const WRITER_BUDGET: Duration = Duration::from_secs(3);

pub fn run(server: &Server, _shas: &Shas, table: &mut Table) {
    let mut c = server.conn();
    let shas = RwShas::load(&mut c);
    read_mostly(server, &shas, &mut c, table);
    writer_against_readers(server, &shas, &mut c, table);
    reset(&mut c);
}

#[derive(Clone, Copy)]
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

/// Redisson's read and write lock scripts, loaded for EVALSHA.
struct RwShas {
    read_acquire: String,
    read_release: String,
    write_acquire: String,
    write_release: String,
}

impl RwShas {
    fn load(c: &mut Conn) -> RwShas {
        let mut load = |s: &str| c.cmd(&["SCRIPT", "LOAD", s]).text();
        RwShas {
            read_acquire: load(rw::READ_ACQUIRE),
            read_release: load(rw::READ_RELEASE),
            write_acquire: load(rw::WRITE_ACQUIRE),
            write_release: load(rw::WRITE_RELEASE),
        }
    }
}

/// One client of one side on `key`, with Redisson's pub/sub connection once it waited.
struct Client<'a> {
    server: &'a Server,
    shas: &'a RwShas,
    im: Impl,
    key: &'a str,
    owner: String,
    c: Conn,
    sub: Option<Conn>,
    /// Redisson's names for this owner on `key`: its write-hold field, the prefix of its read
    /// holds' timeout keys, and the channel its waiters listen on.
    write: String,
    timeouts: String,
    channel: String,
    /// Redisson names each unlock's latch key by a fresh request id.
    unlocks: u64,
}

impl<'a> Client<'a> {
    fn new(server: &'a Server, shas: &'a RwShas, im: Impl, key: &'a str, owner: String) -> Self {
        Client {
            server,
            shas,
            im,
            key,
            c: server.conn(),
            sub: None,
            write: format!("{owner}:write"),
            timeouts: format!("{{{key}}}:{owner}:rwlock_timeout"),
            channel: rw::channel(key),
            owner,
            unlocks: 0,
        }
    }

    /// Waits up to `wait` (less once `stop` is set) for a `mode` hold; whether it got one.
    fn acquire(&mut self, mode: Mode, wait: Duration, stop: &AtomicBool) -> bool {
        let (key, owner, shas) = (self.key, self.owner.as_str(), self.shas);
        if self.im == Impl::Rlock {
            let wait = wait.as_millis().to_string();
            let args = [
                "RWLOCK.ACQUIRE",
                key,
                owner,
                mode.word(),
                "PX",
                LEASE,
                "WAIT",
                &wait,
            ];
            return match self.c.cmd(&args) {
                Value::Int(_) => true,
                Value::Nil => false,
                other => panic!("{args:?}: {other:?}"),
            };
        }
        let acquire = match mode {
            Mode::Read => evalsha(
                &shas.read_acquire,
                &[key, &self.timeouts],
                &[LEASE, owner, &self.write],
            ),
            Mode::Write => evalsha(&shas.write_acquire, &[key], &[LEASE, &self.write]),
        };
        let deadline = Some(Instant::now() + wait);
        let (c, sub) = (&mut self.c, &mut self.sub);
        redisson_lock(self.server, c, sub, &acquire, &self.channel, stop, deadline)
    }

    fn release(&mut self, mode: Mode) {
        let (key, owner, shas) = (self.key, self.owner.as_str(), self.shas);
        let reply = if self.im == Impl::Rlock {
            self.c.cmd(&["RWLOCK.RELEASE", key, owner, mode.word()])
        } else {
            self.unlocks += 1;
            let latch = format!("redisson_unlock_latch:{{{key}}}:{owner}:{}", self.unlocks);
            // As RedissonReadLock and RedissonWriteLock pass them: the message published when
            // the lock frees (its UNLOCK and READ_UNLOCK messages), the lease a re-entered
            // writer keeps, the latch's lifetime.
            let args = match mode {
                Mode::Read => evalsha(
                    &shas.read_release,
                    &[
                        key,
                        &self.channel,
                        &self.timeouts,
                        &format!("{{{key}}}"),
                        &latch,
                    ],
                    &["0", owner, "publish", "30000"],
                ),
                Mode::Write => evalsha(
                    &shas.write_release,
                    &[key, &self.channel, &latch],
                    &["1", "30000", &self.write, "publish", "30000"],
                ),
            };
            let reply = self.c.cmd(&args);
            // Redisson deletes the latch once the unlock has replied.
            self.c.cmd(&["DEL", &latch]);
            reply
        };
        // Nil: the hold was gone before its release, which no lease here allows.
        assert!(
            matches!(reply, Value::Int(_)),
            "{} {} release of {key} by {owner}: {reply:?}",
            self.im.name(),
            mode.word()
        );
    }
}

/// One read-mostly run: its rate and sorted acquire latencies.
struct Mix {
    acquires_per_s: f64,
    reads_ms: Vec<f64>,
    writes_ms: Vec<f64>,
    timeouts: u64,
    commands_per_acquire: f64,
}

/// Part 1: `CLIENTS` blocking clients on one lock, `WRITE_PERCENT` of the holds writes;
/// `ROUNDS` runs of `RUN` for each side, interleaved.
fn read_mostly(server: &Server, shas: &RwShas, c: &mut Conn, table: &mut Table) {
    let workload = format!("W7 RW lock, {CLIENTS} clients, {WRITE_PERCENT}% writes");
    let mut rounds = Rounds::new("w7.mix");
    for _ in 0..ROUNDS {
        for im in SIDES {
            let mix = mixed_run(server, shas, c, im);
            let (reads, writes) = (&mix.reads_ms, &mix.writes_ms);
            rounds.push(
                im.name(),
                &[
                    ("acquires_per_s", mix.acquires_per_s),
                    ("read_p50_ms", percentile(reads, 0.5)),
                    ("read_p99_ms", percentile(reads, 0.99)),
                    ("write_p50_ms", percentile(writes, 0.5)),
                    ("write_p99_ms", percentile(writes, 0.99)),
                    ("timeouts", mix.timeouts as f64),
                    ("commands_per_acquire", mix.commands_per_acquire),
                ],
            );
        }
    }
    for im in SIDES {
        let name = im.name();
        let timeouts: f64 = rounds.get(name, "timeouts").iter().sum();
        table.add(
            &workload,
            &format!("{name} acquires/s; cmds/acquire"),
            rounds.shows(name, &[("acquires_per_s", 0), ("commands_per_acquire", 1)]),
            format!("{timeouts:.0} waits of {WAIT:?} timed out"),
        );
        table.add(
            &workload,
            &format!("{name} read p50; p99 ms; write p50; p99 ms"),
            rounds.shows(
                name,
                &[
                    ("read_p50_ms", 2),
                    ("read_p99_ms", 1),
                    ("write_p50_ms", 2),
                    ("write_p99_ms", 1),
                ],
            ),
            String::new(),
        );
    }
    rounds.finish_against_redisson(table, &workload, String::new());
}

fn mixed_run(server: &Server, shas: &RwShas, c: &mut Conn, im: Impl) -> Mix {
    reset(c);
    let key = format!("w7:mix:{}", im.name());
    let started = Instant::now();
    let clients = clients_for_run(CLIENTS, |id, stop| {
        let client = Client::new(server, shas, im, &key, format!("client-{id}"));
        mixed_client(client, Rng::for_thread(id), stop)
    });
    let elapsed = started.elapsed().as_secs_f64();
    let (mut reads_ms, mut writes_ms, mut timeouts) = (Vec::new(), Vec::new(), 0);
    for (reads, writes, t) in clients {
        reads_ms.extend(reads);
        writes_ms.extend(writes);
        timeouts += t;
    }
    reads_ms.sort_by(|a, b| a.total_cmp(b));
    writes_ms.sort_by(|a, b| a.total_cmp(b));
    let acquired = (reads_ms.len() + writes_ms.len()) as f64;
    Mix {
        acquires_per_s: acquired / elapsed,
        commands_per_acquire: total_calls(c) as f64 / acquired.max(1.0),
        reads_ms,
        writes_ms,
        timeouts,
    }
}

/// Loops hold -> work -> release until `stop`; returns read and write acquire latencies (ms)
/// and the waits that timed out before `stop`.
fn mixed_client(mut client: Client, mut rng: Rng, stop: &AtomicBool) -> (Vec<f64>, Vec<f64>, u64) {
    let (mut reads, mut writes, mut timeouts) = (Vec::new(), Vec::new(), 0);
    while !stop.load(Ordering::Relaxed) {
        let mode = if rng.next() % 100 < WRITE_PERCENT {
            Mode::Write
        } else {
            Mode::Read
        };
        let started = Instant::now();
        if !client.acquire(mode, WAIT, stop) {
            // A Redisson waiter gives up at `stop`: that is the run ending, no timeout.
            timeouts += u64::from(!stop.load(Ordering::Relaxed));
            continue;
        }
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        match mode {
            Mode::Read => reads.push(ms),
            Mode::Write => writes.push(ms),
        }
        std::thread::sleep(WORK);
        client.release(mode);
    }
    (reads, writes, timeouts)
}

/// Sets its flag when dropped, so worker threads end even when the thread running them panics
/// (a scope would otherwise wait for them forever).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Part 2: `READERS` readers take short read holds back to back while one writer tries
/// `WRITER_TRIES` times a round, each try starting while readers hold the lock.
fn writer_against_readers(server: &Server, shas: &RwShas, c: &mut Conn, table: &mut Table) {
    let mut rounds = Rounds::new("w7.writer");
    for round in 0..ROUNDS {
        for im in SIDES {
            let figures = writer_round(server, shas, c, im, round);
            rounds.push(im.name(), &figures);
        }
    }
    for im in SIDES {
        let name = im.name();
        let timeouts: f64 = rounds.get(name, "timeouts").iter().sum();
        let tries: f64 = rounds.get(name, "tries").iter().sum();
        let note = match im {
            Impl::Rlock => "fair: new readers queue behind the writer".to_string(),
            _ => format!("reader-preferring; a try ends at {WRITER_WAIT:?}"),
        };
        table.add(
            &format!("W7 one writer, {READERS} readers"),
            &format!("{name} writer wait p50; max ms ({WRITER_TRIES} tries a round); reads/s"),
            rounds.shows(
                name,
                &[("wait_p50_ms", 1), ("wait_max_ms", 1), ("reads_per_s", 0)],
            ),
            format!("{timeouts:.0} of {tries:.0} tries timed out; {note}"),
        );
    }
    rounds.finish(table);
}

/// One round of part 2 for one side; returns its figures.
fn writer_round(
    server: &Server,
    shas: &RwShas,
    c: &mut Conn,
    im: Impl,
    round: usize,
) -> [(&'static str, f64); 5] {
    reset(c);
    let key = format!("w7:stream:{}:{round}", im.name());
    let (stop, reads) = (AtomicBool::new(false), AtomicU64::new(0));
    let started = Instant::now();
    let mut waits_ms = Vec::new();
    let mut timeouts = 0;
    std::thread::scope(|s| {
        let _stop = StopOnDrop(&stop);
        for id in 0..READERS {
            let (stop, reads, key) = (&stop, &reads, key.as_str());
            s.spawn(move || {
                let mut reader = Client::new(server, shas, im, key, format!("reader-{id}"));
                while !stop.load(Ordering::Relaxed) {
                    if reader.acquire(Mode::Read, WAIT, stop) {
                        reads.fetch_add(1, Ordering::Relaxed);
                        std::thread::sleep(WORK);
                        reader.release(Mode::Read);
                    }
                }
            });
        }
        let mut writer = Client::new(server, shas, im, &key, "writer".into());
        let never = AtomicBool::new(false);
        while waits_ms.len() < WRITER_TRIES && started.elapsed() < WRITER_BUDGET {
            // Each try meets readers that hold: the stream has taken the lock back.
            wait_until(
                "readers hold the lock",
                || matches!(c.cmd(&["HGET", &key, "mode"]), Value::Bulk(m) if m == b"read"),
            );
            let asked = Instant::now();
            let granted = writer.acquire(Mode::Write, WRITER_WAIT, &never);
            waits_ms.push(asked.elapsed().as_secs_f64() * 1000.0);
            if granted {
                std::thread::sleep(WORK);
                writer.release(Mode::Write);
            } else {
                timeouts += 1;
            }
        }
    });
    let reads_per_s = reads.into_inner() as f64 / started.elapsed().as_secs_f64();
    let tries = waits_ms.len() as f64;
    waits_ms.sort_by(|a, b| a.total_cmp(b));
    [
        ("wait_p50_ms", percentile(&waits_ms, 0.5)),
        ("wait_max_ms", percentile(&waits_ms, 1.0)),
        ("timeouts", timeouts as f64),
        ("tries", tries),
        ("reads_per_s", reads_per_s),
    ]
}
