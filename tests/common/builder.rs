//! Building a test server: its settings, its directory, and the port it starts on.

use super::{wait_until, Server};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

static NEXT_DIR: AtomicUsize = AtomicUsize::new(0);

pub struct ServerBuilder {
    pub(super) files_from: Option<PathBuf>,
    pub(super) module: bool,
    pub(super) module_args: Vec<String>,
    pub(super) args: Vec<String>,
    pub(super) bin: String,
    pub(super) port: Option<u16>,
    pub(super) env: Vec<(String, String)>,
}

impl ServerBuilder {
    /// Without the module: a plain Redis, as a replica or AOF reader would be.
    pub fn without_module(mut self) -> Self {
        self.module = false;
        self
    }

    pub fn module_args(mut self, args: &[&str]) -> Self {
        self.module_args = args.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Extra `--name value` settings.
    pub fn arg(mut self, name: &str, value: &str) -> Self {
        self.args.push(format!("--{name}"));
        self.args.push(value.to_string());
        self
    }

    /// Starts from a copy of another server's data directory (its RDB or AOF).
    pub fn files_from(mut self, dir: &Path) -> Self {
        self.files_from = Some(dir.to_path_buf());
        self
    }

    /// Starts a replica of `master` and waits until its link is up. The master should have
    /// been started with `master()` so the first sync starts at once.
    pub fn replica_of(self, master: &Server) -> Server {
        let replica = self
            .arg("replicaof", &format!("127.0.0.1 {}", master.port))
            .start();
        let (mut r, mut m) = (replica.conn(), master.conn());
        wait_until("replica in sync", || {
            r.q("INFO replication")
                .text()
                .contains("master_link_status:up")
        });
        // The master counts the replica online only after its first ACK (FAILOVER needs that).
        let me = format!("port={},state=online", replica.port);
        wait_until("master sees the replica online", || {
            m.q("INFO replication").text().contains(&me)
        });
        replica
    }

    /// A master that syncs new replicas without Redis's default 5 s diskless delay.
    pub fn master(self) -> Server {
        self.arg("repl-diskless-sync-delay", "0").start()
    }

    /// An environment variable of the server process (e.g. `LD_PRELOAD`).
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    pub fn bin(mut self, bin: &str) -> Self {
        self.bin = bin.to_string();
        self
    }

    /// On this port rather than a free one; another process holding it fails the start.
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    pub fn start(self) -> Server {
        self.start_picking(free_port)
    }

    /// Starts on a port from `pick` (unless one was given), and on another one when another
    /// process took it between the pick and the bind (test suites run side by side).
    pub fn start_picking(self, mut pick: impl FnMut() -> u16) -> Server {
        let dir = std::env::temp_dir().join(format!(
            "rlock-test-{}-{}",
            std::process::id(),
            NEXT_DIR.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        if let Some(from) = &self.files_from {
            copy_dir(from, &dir);
        }
        let given = self.port;
        let mut server = Server {
            port: 0,
            dir,
            child: None,
            builder: self,
        };
        for attempt in 1..=START_ATTEMPTS {
            server.port = given.unwrap_or_else(&mut pick);
            match server.launch() {
                Ok(()) => return server,
                Err(NotStarted::PortTaken(why)) if given.is_none() && attempt < START_ATTEMPTS => {
                    eprintln!("{why}; starting on another port")
                }
                Err(NotStarted::PortTaken(why) | NotStarted::Failed(why)) => panic!("{why}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }
}

/// Starts on a new free port when another process took the last one first.
const START_ATTEMPTS: usize = 5;

/// Why a server did not come up, with its log.
pub(super) enum NotStarted {
    /// Another process holds its port or its cluster bus port (`port + 10000`).
    PortTaken(String),
    Failed(String),
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            std::fs::create_dir_all(&dst).expect("mkdir");
            copy_dir(&src, &dst);
        } else if entry.file_name() != "redis.log" {
            std::fs::copy(&src, &dst).expect("copy");
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}
