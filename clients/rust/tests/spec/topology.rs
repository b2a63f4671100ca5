//! The shared topology harness (clients/harness/topology.py) as a child process speaking JSON
//! lines, for the scenarios of topology `replicated`.

use crate::json::{parse, Json};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

pub struct Topology {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    pub primary: u16,
    replicas: Vec<u16>,
    paused: Vec<u16>,
}

impl Topology {
    pub fn start(kind: &str) -> Result<Topology, String> {
        let harness = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../harness/topology.py");
        let module = std::env::var("RLOCK_MODULE").map_err(|_| "RLOCK_MODULE is not set")?;
        let mut child = Command::new("python3")
            .arg(harness)
            .args([kind, "--module", &module])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("python3 topology.py: {e}"))?;
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let mut topology = Topology {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            primary: 0,
            replicas: Vec::new(),
            paused: Vec::new(),
        };
        let view = topology.answer()?;
        let port = |node: &Json| node.int("port").map(|p| p as u16);
        topology.primary = view
            .get("primary")
            .and_then(port)
            .ok_or(format!("no primary in {view:?}"))?;
        topology.replicas = view.items("replicas").iter().filter_map(port).collect();
        Ok(topology)
    }

    fn answer(&mut self) -> Result<Json, String> {
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let answer = parse(&line)?;
        match answer.get("ok") {
            Some(Json::Bool(false)) => Err(format!("topology.py: {line}")),
            _ => Ok(answer),
        }
    }

    fn send(&mut self, op: &str, port: u16) -> Result<(), String> {
        writeln!(self.stdin, "{{\"op\":\"{op}\",\"port\":{port}}}").map_err(|e| e.to_string())?;
        self.answer().map(drop)
    }

    pub fn pause_replicas(&mut self) -> Result<(), String> {
        for port in self.replicas.clone() {
            self.send("pause", port)?;
            self.paused.push(port);
        }
        Ok(())
    }

    pub fn resume_replicas(&mut self) -> Result<(), String> {
        while let Some(port) = self.paused.pop() {
            self.send("resume", port)?;
        }
        Ok(())
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        let _ = self.resume_replicas();
        let _ = writeln!(self.stdin, "{{\"op\":\"stop\"}}");
        let _ = self.child.wait();
    }
}
