//! `rlock-hold`, the crate's holding binary, run as a process of its own that a test can kill
//! with SIGKILL.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// `rlock-hold` holding `what` at `key` in a process of its own; killed on drop.
pub struct HoldingProcess {
    child: Child,
    pub token: u64,
}

impl HoldingProcess {
    pub fn start(redis: &crate::common::Server, what: &str, key: &str) -> HoldingProcess {
        let url = format!("redis://127.0.0.1:{}/", redis.port);
        let mut child = Command::new(env!("CARGO_BIN_EXE_rlock-hold"))
            .args([url.as_str(), what, key])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start rlock-hold");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout");
        BufReader::new(stdout).read_line(&mut line).expect("read");
        let token = line
            .strip_prefix("held ")
            .and_then(|token| token.trim().parse().ok())
            .unwrap_or_else(|| panic!("rlock-hold {what} {key} said {line:?}"));
        HoldingProcess { child, token }
    }

    /// SIGKILL: the process gets no chance to release; its connection closes.
    pub fn kill9(&mut self) {
        self.child.kill().expect("kill -9");
        self.child.wait().expect("reaped");
    }
}

impl Drop for HoldingProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
