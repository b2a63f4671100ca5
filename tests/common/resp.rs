//! A small blocking Redis client speaking RESP2 and RESP3: enough for tests and the benchmark
//! to drive real servers, pipeline, and keep a blocked call open.

use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Nil,
    Int(i64),
    Bulk(Vec<u8>),
    Simple(String),
    Error(String),
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
    Double(String),
    Bool(bool),
}

impl Value {
    pub fn int(&self) -> i64 {
        match self {
            Value::Int(n) => *n,
            Value::Bulk(b) => String::from_utf8_lossy(b)
                .parse()
                .unwrap_or_else(|_| panic!("not an integer: {self:?}")),
            other => panic!("expected an integer, got {other:?}"),
        }
    }

    pub fn text(&self) -> String {
        match self {
            Value::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            Value::Simple(s) | Value::Error(s) | Value::Double(s) => s.clone(),
            Value::Int(n) => n.to_string(),
            other => panic!("expected a string, got {other:?}"),
        }
    }

    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    pub fn err(&self) -> String {
        match self {
            Value::Error(e) => e.clone(),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    pub fn items(&self) -> Vec<Value> {
        match self {
            Value::Array(items) => items.clone(),
            Value::Map(pairs) => pairs
                .iter()
                .flat_map(|(k, v)| [k.clone(), v.clone()])
                .collect(),
            Value::Nil => vec![],
            other => panic!("expected an array, got {other:?}"),
        }
    }

    /// Field/value pairs of a RESP3 map or a flat RESP2 array, as text.
    pub fn pairs(&self) -> Vec<(String, Value)> {
        self.items()
            .chunks(2)
            .map(|p| (p[0].text(), p[1].clone()))
            .collect()
    }

    pub fn field(&self, name: &str) -> Value {
        self.pairs()
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("no field {name} in {self:?}"))
    }
}

pub struct Conn {
    /// One socket for both directions (writes go through `get_ref`), so 10,000 connections
    /// need 10,000 file descriptors, not twice that.
    reader: BufReader<TcpStream>,
}

impl Conn {
    pub fn connect(port: u16) -> io::Result<Conn> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Conn {
            reader: BufReader::new(stream),
        })
    }

    pub fn set_read_timeout(&self, timeout: Option<Duration>) {
        self.reader
            .get_ref()
            .set_read_timeout(timeout)
            .expect("set timeout");
    }

    pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
        out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        (&mut self.reader.get_ref()).write_all(bytes)
    }

    pub fn send<S: AsRef<[u8]>>(&mut self, args: &[S]) -> io::Result<()> {
        let mut out = Vec::new();
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_ref()).collect();
        Self::encode(&mut out, &args);
        self.send_raw(&out)
    }

    /// Sends a command and reads its reply; panics on I/O errors (tests want that).
    pub fn cmd<S: AsRef<[u8]>>(&mut self, args: &[S]) -> Value {
        self.try_cmd(args).expect("command round trip")
    }

    /// Sends a command and reads its reply, returning I/O errors.
    pub fn try_cmd<S: AsRef<[u8]>>(&mut self, args: &[S]) -> io::Result<Value> {
        self.send(args)?;
        self.read()
    }

    /// A command given as one space-separated string (no quoting).
    pub fn q(&mut self, line: &str) -> Value {
        self.cmd(&line.split_whitespace().collect::<Vec<_>>())
    }

    pub fn read(&mut self) -> io::Result<Value> {
        let mut line = Vec::new();
        self.reader.read_until(b'\n', &mut line)?;
        if line.len() < 3 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        let body = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
        let count = || body.parse::<i64>().unwrap_or(-1);
        Ok(match line[0] {
            b'+' => Value::Simple(body),
            b'-' => Value::Error(body),
            b':' => Value::Int(count()),
            b'_' => Value::Nil,
            b',' | b'(' => Value::Double(body),
            b'#' => Value::Bool(body == "t"),
            b'$' | b'=' | b'!' => match count() {
                -1 => Value::Nil,
                n => {
                    let mut buf = vec![0; n as usize + 2];
                    io::Read::read_exact(&mut self.reader, &mut buf)?;
                    buf.truncate(n as usize);
                    if line[0] == b'!' {
                        Value::Error(String::from_utf8_lossy(&buf).into_owned())
                    } else {
                        Value::Bulk(buf)
                    }
                }
            },
            b'*' | b'~' | b'>' => match count() {
                -1 => Value::Nil,
                n => Value::Array((0..n).map(|_| self.read()).collect::<io::Result<_>>()?),
            },
            b'%' | b'|' => {
                let mut pairs = Vec::new();
                for _ in 0..count() {
                    pairs.push((self.read()?, self.read()?));
                }
                if line[0] == b'|' {
                    return self.read(); // attributes precede the real reply
                }
                Value::Map(pairs)
            }
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad type byte {other}"),
                ))
            }
        })
    }
}
