//! The shared topology harness (`clients/harness/topology.py`) run as a child process: it
//! starts a standalone server, a primary with a replica, the same under three Sentinels, or a
//! Cluster of three primaries with a replica each, prints the topology as one JSON line, then
//! answers one JSON command per line (failover, kill, pause, ...). Killed on drop (and EOF on
//! its stdin tears everything down if this process dies first).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

pub struct Topology {
    child: Child,
    io: Mutex<(ChildStdin, BufReader<ChildStdout>)>,
    /// The topology as last described.
    pub described: Mutex<Value>,
}

/// A data node or a sentinel: its host and port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub host: String,
    pub port: u16,
}

impl Node {
    fn of(value: &Value) -> Node {
        Node {
            host: value["host"].as_str().expect("host").to_string(),
            port: value["port"].as_u64().expect("port") as u16,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://{}:{}/", self.host, self.port)
    }

    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).expect("client")
    }

    /// A plain connection for looking at the node's state (as admin).
    pub fn conn(&self) -> redis::Connection {
        self.client()
            .get_connection()
            .expect("connection to a node")
    }
}

impl Topology {
    /// Starts `kind` ("standalone", "replicated", "sentinel", "cluster") with the module.
    pub fn start(kind: &str) -> Topology {
        super::use_workspace_module();
        let module = std::env::var("RLOCK_MODULE").expect("RLOCK_MODULE");
        let mut child = Command::new("python3")
            .arg(harness())
            .arg(kind)
            .arg("--module")
            .arg(module)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the topology harness");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let described = read_json(&mut stdout);
        assert!(
            described.get("ok") != Some(&Value::Bool(false)),
            "the harness could not start {kind}: {described}"
        );
        Topology {
            child,
            io: Mutex::new((stdin, stdout)),
            described: Mutex::new(described),
        }
    }

    /// Sends one command and returns the topology it answers with (panics on an error).
    pub fn send(&self, command: Value) -> Value {
        let mut io = self.io.lock().expect("harness io");
        writeln!(io.0, "{command}").expect("write to the harness");
        io.0.flush().expect("flush to the harness");
        let answer = read_json(&mut io.1);
        assert_eq!(answer["ok"], json!(true), "{command} failed: {answer}");
        let topology = answer["topology"].clone();
        *self.described.lock().expect("described") = topology.clone();
        topology
    }

    pub fn describe(&self) -> Value {
        self.described.lock().expect("described").clone()
    }

    /// SENTINEL FAILOVER, or CLUSTER FAILOVER on the replica of the primary of `key`'s slot;
    /// returns once every sentinel or node agrees on the new primary.
    pub fn failover(&self, key: Option<&str>) -> Value {
        self.send(json!({"op": "failover", "key": key}))
    }

    pub fn kill(&self, node: &Node) -> Value {
        self.send(json!({"op": "kill", "port": node.port}))
    }

    /// After a kill of the primary: until a replica was promoted and everyone agrees.
    pub fn await_promotion(&self, key: Option<&str>) -> Value {
        self.send(json!({"op": "await_promotion", "key": key}))
    }

    pub fn pause(&self, node: &Node) -> Value {
        self.send(json!({"op": "pause", "port": node.port}))
    }

    pub fn resume(&self, node: &Node) -> Value {
        self.send(json!({"op": "resume", "port": node.port}))
    }

    /// The primary (replicated, sentinel).
    pub fn primary(&self) -> Node {
        Node::of(&self.describe()["primary"])
    }

    pub fn replicas(&self) -> Vec<Node> {
        self.listed("replicas")
    }

    pub fn sentinels(&self) -> Vec<Node> {
        self.listed("sentinels")
    }

    /// The nodes of a list in the description (`replicas`, `sentinels`).
    fn listed(&self, list: &str) -> Vec<Node> {
        let described = self.describe();
        let nodes = described[list].as_array().cloned().unwrap_or_default();
        nodes.iter().map(Node::of).collect()
    }

    /// Every live data node with its role ("primary" or "replica").
    pub fn nodes(&self) -> Vec<(Node, String)> {
        let described = self.describe();
        let nodes = described["nodes"].as_array().cloned().unwrap_or_default();
        nodes
            .iter()
            .filter(|node| node["alive"] == json!(true) && node["paused"] != json!(true))
            .map(|node| {
                (
                    Node::of(node),
                    node["role"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    /// The Cluster primary that serves `key`'s slot now.
    pub fn primary_for(&self, key: &str) -> Node {
        let slot = keyslot(&self.nodes()[0].0, key);
        let described = self.describe();
        let nodes = described["nodes"].as_array().cloned().unwrap_or_default();
        let owner = nodes
            .iter()
            .filter(|node| node["role"] == json!("primary"))
            .find(|node| {
                node["slots"].as_array().into_iter().flatten().any(|range| {
                    let (a, b) = (range[0].as_i64().unwrap(), range[1].as_i64().unwrap());
                    (a..=b).contains(&slot)
                })
            });
        Node::of(owner.expect("a primary serves every slot"))
    }

    /// The replica of the Cluster primary `primary`.
    pub fn replica_of(&self, primary: &Node) -> Node {
        let described = self.describe();
        let nodes = described["nodes"].as_array().cloned().unwrap_or_default();
        let id = nodes
            .iter()
            .find(|node| Node::of(node) == *primary)
            .map(|node| node["id"].clone())
            .expect("the primary is a node");
        let replica = nodes.iter().find(|node| node["primary_id"] == id);
        Node::of(replica.expect("the primary has a replica"))
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        if let Ok(io) = self.io.get_mut() {
            let _ = writeln!(io.0, "{}", json!({"op": "stop"}));
            let _ = io.0.flush();
        }
        // The harness tears down on "stop" or EOF; give it a moment, then make sure.
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_json(stdout: &mut BufReader<ChildStdout>) -> Value {
    let mut line = String::new();
    let read = stdout.read_line(&mut line).expect("read from the harness");
    assert!(
        read > 0,
        "the topology harness ended without answering (see its stderr)"
    );
    serde_json::from_str(&line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"))
}

/// `CLUSTER KEYSLOT key` asked of `node`.
fn keyslot(node: &Node, key: &str) -> i64 {
    redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(&mut node.conn())
        .expect("CLUSTER KEYSLOT")
}

/// `clients/harness/topology.py` of the workspace (or `RLOCK_TOPOLOGY`).
fn harness() -> PathBuf {
    if let Some(path) = std::env::var_os("RLOCK_TOPOLOGY") {
        return PathBuf::from(path);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../harness/topology.py")
}
