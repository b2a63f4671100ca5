//! A three-master Redis Cluster of real servers with the module, and a client that routes by
//! slot and follows MOVED and ASK redirects.

use super::resp::{Conn, Value};
use super::{wait_until, Server};
use std::collections::HashMap;
use std::process::Command;

pub struct Cluster {
    pub nodes: Vec<Server>,
}

impl Cluster {
    pub fn start() -> Cluster {
        let nodes: Vec<Server> = (0..3)
            .map(|_| {
                Server::builder()
                    .arg("cluster-enabled", "yes")
                    .arg("cluster-config-file", "nodes.conf")
                    .arg("cluster-node-timeout", "5000")
                    .start()
            })
            .collect();
        let output = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
            .args(["--cluster-yes"])
            .output()
            .expect("run redis-cli --cluster create");
        assert!(
            output.status.success(),
            "cluster create: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        for node in &nodes {
            let mut c = node.conn();
            wait_until("cluster ok", || {
                c.q("CLUSTER INFO").text().contains("cluster_state:ok")
                    && c.q("CLUSTER SLOTS").items().len() == 3
            });
        }
        Cluster { nodes }
    }

    pub fn client(&self) -> ClusterClient {
        ClusterClient {
            ports: self.nodes.iter().map(|n| n.port).collect(),
            conns: HashMap::new(),
            slots: HashMap::new(),
            redirects: 0,
        }
    }

    pub fn node_id(&self, port: u16) -> String {
        self.node(port).conn().q("CLUSTER MYID").text()
    }

    pub fn node(&self, port: u16) -> &Server {
        self.nodes.iter().find(|n| n.port == port).expect("node")
    }
}

pub struct ClusterClient {
    ports: Vec<u16>,
    conns: HashMap<u16, Conn>,
    slots: HashMap<u16, u16>,
    pub redirects: usize,
}

/// CRC16/XMODEM of the key's hash tag, modulo 16384: Redis Cluster's key slot.
pub fn key_slot(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let tagged = key.find('{').and_then(|open| {
        key[open + 1..]
            .find('}')
            .filter(|len| *len > 0)
            .map(|len| &bytes[open + 1..open + 1 + len])
    });
    let mut crc: u16 = 0;
    for &b in tagged.unwrap_or(bytes) {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

impl ClusterClient {
    fn conn(&mut self, port: u16) -> &mut Conn {
        self.conns
            .entry(port)
            .or_insert_with(|| Conn::connect(port).expect("connect"))
    }

    /// Sends a command whose key is argv[1] to the node serving its slot.
    pub fn cmd(&mut self, args: &[&str]) -> Value {
        let slot = key_slot(args[1]);
        let mut port = self.slots.get(&slot).copied().unwrap_or(self.ports[0]);
        let mut asking = false;
        for _ in 0..5 {
            let conn = self.conn(port);
            if std::mem::take(&mut asking) {
                conn.q("ASKING");
            }
            let reply = conn.cmd(args);
            let Value::Error(e) = &reply else {
                return reply;
            };
            let mut words = e.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some(kind @ ("MOVED" | "ASK")), Some(_slot), Some(addr)) => {
                    self.redirects += 1;
                    port = addr
                        .rsplit(':')
                        .next()
                        .and_then(|p| p.parse().ok())
                        .expect("redirect port");
                    if kind == "MOVED" {
                        self.slots.insert(slot, port);
                    } else {
                        asking = true;
                    }
                }
                _ => return reply,
            }
        }
        panic!("too many redirects for {args:?}");
    }

    pub fn port_of(&mut self, key: &str) -> u16 {
        self.cmd(&["RLOCK.INFO", key]);
        let slot = key_slot(key);
        self.slots.get(&slot).copied().unwrap_or(self.ports[0])
    }
}
