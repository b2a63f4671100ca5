//! The test fixture: real `redis-server` processes with the module loaded, each on a free
//! port in its own temporary directory, killed (and their directory removed) on drop.
#![allow(dead_code)]

mod builder;
pub mod cluster;
pub mod redisson;
pub mod resp;

use builder::NotStarted;
pub use builder::ServerBuilder;
pub use resp::{Conn, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

/// The server binary: `$REDIS_SERVER`, else Debian's `redis-server` on the PATH.
pub fn redis_server_bin() -> String {
    std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into())
}

fn newest_source(dir: &Path) -> SystemTime {
    let mut newest = SystemTime::UNIX_EPOCH;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let time = if path.is_dir() {
            newest_source(&path)
        } else {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH)
        };
        newest = newest.max(time);
    }
    newest
}

/// `target/release/librlock.so`, built first when missing or older than the sources
/// (`cargo test` alone builds no cdylib). `$RLOCK_MODULE` overrides the path.
pub fn module_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Ok(path) = std::env::var("RLOCK_MODULE") {
            return PathBuf::from(path);
        }
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let so = root.join("target/release/librlock.so");
        let built = so.metadata().and_then(|m| m.modified()).ok();
        let sources = newest_source(&root.join("src")).max(newest_source(&root.join("Cargo.toml")));
        if built.is_none_or(|built| built < sources) {
            let status = Command::new(env!("CARGO"))
                .args(["build", "--release", "--lib", "--quiet"])
                .current_dir(&root)
                .status()
                .expect("run cargo build");
            assert!(status.success(), "building librlock.so failed");
        }
        so
    })
    .clone()
}

pub struct Server {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    builder: ServerBuilder,
}

impl Server {
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            files_from: None,
            module: true,
            module_args: vec![],
            args: vec![],
            bin: redis_server_bin(),
            port: None,
            env: vec![],
        }
    }

    /// A fresh server with the module loaded and default settings.
    pub fn start() -> Server {
        Server::builder().start()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }

    /// Starts the server on `self.port` and waits until it answers there.
    fn launch(&mut self) -> Result<(), NotStarted> {
        let logged_before = self.log().len();
        let mut cmd = Command::new(&self.builder.bin);
        cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--logfile", "redis.log", "--save", "", "--daemonize", "no"])
            .args([
                "--enable-debug-command",
                "yes",
                "--enable-module-command",
                "yes",
            ]);
        if self.builder.module {
            cmd.arg("--loadmodule")
                .arg(module_path())
                .args(&self.builder.module_args);
        }
        cmd.args(&self.builder.args)
            .envs(self.builder.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", self.builder.bin));
        self.child = Some(child);
        if self.wait_ready() {
            return Ok(());
        }
        self.kill();
        let log = self.log();
        // Only this launch's lines: the log of a restarted server holds its earlier ones too.
        if log[logged_before.min(log.len())..].contains("Address already in use") {
            return Err(NotStarted::PortTaken(format!(
                "redis-server: port {} (or its bus port {}) is held by another process; its log:\n{log}",
                self.port,
                u32::from(self.port) + 10000
            )));
        }
        Err(NotStarted::Failed(format!(
            "redis-server on port {} did not start; its log:\n{log}",
            self.port
        )))
    }

    /// Waits for PING from *our* process: with ports chosen concurrently, another test's
    /// server may answer on the same port while ours is still failing to bind it.
    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let Some(child) = self.child.as_mut() else {
                return false;
            };
            if let Ok(Some(_)) = child.try_wait() {
                self.child = None;
                return false;
            }
            let pid = child.id().to_string();
            // Probe errors (refused, reset by a server that is exiting) just mean "not yet"; a
            // foreign listener that never answers must not hold the probe past our child's exit.
            let serving_pid = Conn::connect(self.port).and_then(|mut conn| {
                conn.set_read_timeout(Some(Duration::from_millis(500)));
                match conn.try_cmd(&["PING"])? {
                    Value::Simple(pong) if pong == "PONG" => conn.try_cmd(&["INFO", "server"]),
                    other => Ok(other),
                }
            });
            if let Ok(Value::Bulk(info)) = serving_pid {
                let info = String::from_utf8_lossy(&info).into_owned();
                let serving = info
                    .lines()
                    .find_map(|l| l.strip_prefix("process_id:"))
                    .map(str::trim);
                if serving == Some(pid.as_str()) {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    pub fn conn(&self) -> Conn {
        Conn::connect(self.port).expect("connect")
    }

    /// Kills the server with SIGKILL (no shutdown save) and starts it again on the same
    /// port and directory with the same settings.
    /// A clash on that port (another process took it meanwhile) panics: its clients reconnect
    /// there, so another port would not do.
    pub fn kill9_and_restart(&mut self) {
        self.kill();
        if let Err(NotStarted::PortTaken(why) | NotStarted::Failed(why)) = self.launch() {
            panic!("restart: {why}");
        }
    }

    /// The server's process id, for signals (SIGSTOP/SIGCONT) from a test.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).expect("server running")
    }

    /// Sends a signal (`STOP`, `CONT`, ...) to the server process.
    pub fn signal(&self, name: &str) {
        signal(self.pid(), name);
    }

    /// Panics with the log if the server logged an assertion or a crash report.
    pub fn assert_no_crash(&self) {
        let log = self.log();
        for sign in ["ASSERTION FAILED", "crashed by signal", "BUG REPORT"] {
            assert!(!log.contains(sign), "{sign} in the server log:\n{log}");
        }
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn info(&self, section: &str) -> String {
        self.conn().cmd(&["INFO", section]).text()
    }

    pub fn info_field(&self, section: &str, field: &str) -> String {
        self.info(section)
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
            .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
    }

    pub fn blocked_clients(&self) -> i64 {
        self.info_field("clients", "blocked_clients")
            .trim()
            .parse()
            .expect("number")
    }

    /// A counter of `INFO rlock` (`rlock_<name>`).
    pub fn stat(&self, name: &str) -> i64 {
        self.info_field("rlock", &format!("rlock_{name}"))
            .trim()
            .parse()
            .expect("number")
    }

    /// Waits (up to 10 s) until exactly `n` clients are blocked.
    pub fn wait_blocked(&self, n: i64) {
        wait_until(&format!("{n} blocked clients"), || {
            self.blocked_clients() == n
        });
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("--- redis log ({}) ---\n{}", self.dir.display(), self.log());
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Waits (up to 5 s) until the one replica has everything the master wrote so far, the module's
/// own writes (timers, events) included: `WAIT` waits only up to the calling connection's own
/// last propagated write, so a `PUBLISH` (propagated, changing no data) first brings it up to
/// date. Not while writes are paused (`PUBLISH` waits for the pause to end).
pub fn sync_replica(c: &mut Conn) {
    c.q("PUBLISH rlock-test-sync 1");
    assert_eq!(c.q("WAIT 1 5000").int(), 1, "the replica acknowledged");
}

/// The master's and the replica's snapshots while writes are paused (so the module's renewals
/// hold still), taken once they agree or after 5 s: the caller compares them. (`WAIT` would not
/// do: it waits only for the calling connection's own writes, and nothing may be propagated to
/// bring them up to date while writes are paused.)
pub fn paused_snapshots(c: &mut Conn, replica: &Server) -> (Snapshot, Snapshot) {
    c.q("CLIENT PAUSE 2000 WRITE");
    let mut r = replica.conn();
    let deadline = Instant::now() + Duration::from_secs(5);
    let pair = loop {
        let pair = (snapshot(c), snapshot(&mut r));
        if pair.0 == pair.1 || Instant::now() > deadline {
            break pair;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    c.q("CLIENT UNPAUSE");
    pair
}

/// Sends signal `name` (`STOP`, `CONT`, `KILL`, ...) to process `pid`.
pub fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{name} {pid}");
}

/// Polls `cond` every few ms for up to 10 s; panics naming `what` if it never holds.
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("timed out waiting for {what}");
}

/// A connection that sends one command now and reads its (blocked) reply later.
pub struct Pending {
    pub conn: Conn,
}

impl Pending {
    pub fn send(server: &Server, line: &str) -> Pending {
        let mut conn = server.conn();
        conn.send(&line.split_whitespace().collect::<Vec<_>>())
            .expect("send");
        Pending { conn }
    }

    pub fn reply(mut self) -> Value {
        self.conn.read().expect("blocked reply")
    }

    /// Reads the reply on a thread, noting when it arrived.
    pub fn reply_when(self) -> std::thread::JoinHandle<(Value, Instant)> {
        std::thread::spawn(move || {
            let value = self.reply();
            (value, Instant::now())
        })
    }
}

/// Every key of db 0 with its type, hash contents and absolute expiry, for comparing
/// servers (a replica or an AOF reload against its master).
/// Every key with its type's contents and absolute expiry (see `snapshot`).
pub type Snapshot = Vec<(String, Vec<(String, String)>, i64)>;

pub fn snapshot(conn: &mut Conn) -> Snapshot {
    let mut keys: Vec<String> = conn.q("KEYS *").items().iter().map(Value::text).collect();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let mut fields: Vec<(String, String)> = match conn.cmd(&["TYPE", &k]).text().as_str() {
                "hash" => conn
                    .cmd(&["HGETALL", &k])
                    .pairs()
                    .into_iter()
                    .map(|(f, v)| (f, v.text()))
                    .collect(),
                "string" => vec![("value".into(), conn.cmd(&["GET", &k]).text())],
                other => vec![("type".into(), other.to_string())],
            };
            fields.sort();
            let at = conn.cmd(&["PEXPIRETIME", &k]).int();
            (k, fields, at)
        })
        .collect()
}

/// A separate client process (bash on `/dev/tcp`) that sends one inline command, prints its
/// reply and then sits on the open connection, sending nothing: a holder to SIGKILL or
/// SIGSTOP from a test. Killed on drop.
pub struct ClientProcess {
    child: Child,
    pub reply: String,
}

impl ClientProcess {
    pub fn spawn(server: &Server, command: &str) -> ClientProcess {
        let script = format!(
            "exec 3<>/dev/tcp/127.0.0.1/{}; printf '%s\\r\\n' \"$1\" >&3; head -n 1 <&3; exec sleep 600",
            server.port
        );
        let mut child = Command::new("bash")
            .args(["-c", &script, "client", command])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn bash");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
            .expect("read the reply");
        ClientProcess {
            child,
            reply: line.trim().to_string(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ClientProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
