//! JSON for the spec runner: the scenario files, results and admin replies as one value type,
//! and the spec's matching (clients/spec/README.md, "Comparing"). A small parser of its own, so
//! the crate needs no dependency for its tests (numbers are integers: the spec has no others).

use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub fn get(&self, name: &str) -> Option<&Json> {
        match self {
            Json::Obj(fields) => fields.iter().find(|(key, _)| key == name).map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn str(&self, name: &str) -> Option<&str> {
        match self.get(name) {
            Some(Json::Str(text)) => Some(text),
            _ => None,
        }
    }
    pub fn int(&self, name: &str) -> Option<i64> {
        match self.get(name) {
            Some(Json::Int(n)) => Some(*n),
            _ => None,
        }
    }
    pub fn items(&self, name: &str) -> Vec<Json> {
        match self.get(name) {
            Some(Json::Arr(items)) => items.clone(),
            _ => Vec::new(),
        }
    }
    pub fn strings(&self, name: &str) -> Vec<String> {
        let text = |item: Json| match item {
            Json::Str(text) => text,
            other => panic!("{name}: a string expected, not {other:?}"),
        };
        self.items(name).into_iter().map(text).collect()
    }
}

pub fn parse(text: &str) -> Result<Json, String> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        at: 0,
    };
    let value = parser.value()?;
    parser.space();
    match parser.at == parser.bytes.len() {
        true => Ok(value),
        false => Err(format!("trailing text at byte {}", parser.at)),
    }
}

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while self.at < self.bytes.len() && self.bytes[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }
    fn eat(&mut self, byte: u8) -> bool {
        self.space();
        let found = self.bytes.get(self.at) == Some(&byte);
        self.at += found as usize;
        found
    }
    fn word(&mut self, word: &str, value: Json) -> Result<Json, String> {
        match self.bytes[self.at..].starts_with(word.as_bytes()) {
            true => {
                self.at += word.len();
                Ok(value)
            }
            false => Err(format!("unexpected text at byte {}", self.at)),
        }
    }
    fn value(&mut self) -> Result<Json, String> {
        self.space();
        match self.bytes.get(self.at) {
            Some(b'{') => self.sequence(b'}', |parser| {
                let key = match parser.value()? {
                    Json::Str(key) => key,
                    _ => return Err(format!("a key expected at byte {}", parser.at)),
                };
                match parser.eat(b':') {
                    true => Ok(Json::Obj(vec![(key, parser.value()?)])),
                    false => Err(format!("':' expected at byte {}", parser.at)),
                }
            }),
            Some(b'[') => self.sequence(b']', |parser| Ok(Json::Arr(vec![parser.value()?]))),
            Some(b'"') => self.string().map(Json::Str),
            Some(b't') => self.word("true", Json::Bool(true)),
            Some(b'f') => self.word("false", Json::Bool(false)),
            Some(b'n') => self.word("null", Json::Null),
            _ => self.number(),
        }
    }
    /// `{...}` or `[...]`: items parsed by `item` (each a one-entry object or array), merged.
    fn sequence(
        &mut self,
        close: u8,
        item: impl Fn(&mut Self) -> Result<Json, String>,
    ) -> Result<Json, String> {
        self.at += 1;
        let (mut fields, mut items) = (Vec::new(), Vec::new());
        if !self.eat(close) {
            loop {
                match item(self)? {
                    Json::Obj(mut one) => fields.append(&mut one),
                    Json::Arr(mut one) => items.append(&mut one),
                    _ => unreachable!(),
                }
                if self.eat(close) {
                    break;
                }
                if !self.eat(b',') {
                    return Err(format!("',' expected at byte {}", self.at));
                }
            }
        }
        Ok(if close == b'}' {
            Json::Obj(fields)
        } else {
            Json::Arr(items)
        })
    }
    fn string(&mut self) -> Result<String, String> {
        let mut out = Vec::new();
        self.at += 1;
        while let Some(&byte) = self.bytes.get(self.at) {
            self.at += 1;
            match byte {
                b'"' => return String::from_utf8(out).map_err(|e| e.to_string()),
                b'\\' => {
                    let escaped = self.bytes.get(self.at).copied().ok_or("cut escape")?;
                    self.at += 1;
                    out.push(match escaped {
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'"' | b'\\' | b'/' => escaped,
                        _ => return Err(format!("unsupported escape at byte {}", self.at)),
                    });
                }
                _ => out.push(byte),
            }
        }
        Err("unterminated string".into())
    }
    fn number(&mut self) -> Result<Json, String> {
        let start = self.at;
        while matches!(self.bytes.get(self.at), Some(b'-' | b'0'..=b'9')) {
            self.at += 1;
        }
        let text = std::str::from_utf8(&self.bytes[start..self.at]).unwrap();
        text.parse()
            .map(Json::Int)
            .map_err(|_| format!("an integer expected at byte {start}"))
    }
}

/// Whether `actual` matches the spec's `expected` (`$name` looked up in `saved`).
pub fn matches(expected: &Json, actual: &Json, saved: &HashMap<String, Json>) -> bool {
    let value = |v: &Json| match v {
        Json::Str(name) if name.starts_with('$') => {
            saved.get(&name[1..]).cloned().unwrap_or(Json::Null)
        }
        other => other.clone(),
    };
    match expected {
        Json::Obj(fields)
            if !fields.is_empty() && fields.iter().all(|(k, _)| k.starts_with('$')) =>
        {
            fields.iter().all(|(operator, operand)| {
                match (operator.as_str(), actual, value(operand)) {
                    ("$type", _, Json::Str(kind)) => kind == type_name(actual),
                    ("$len", Json::Arr(items), Json::Int(n)) => items.len() as i64 == n,
                    (operator, Json::Int(a), Json::Int(b)) => match operator {
                        "$gt" => *a > b,
                        "$gte" => *a >= b,
                        "$lt" => *a < b,
                        "$lte" => *a <= b,
                        "$ne" => *a != b,
                        "$eq" => *a == b,
                        _ => false,
                    },
                    _ => false,
                }
            })
        }
        Json::Obj(fields) => fields
            .iter()
            .all(|(key, want)| actual.get(key).is_some_and(|got| matches(want, got, saved))),
        Json::Arr(items) => match actual {
            Json::Arr(got) => {
                got.len() == items.len() && items.iter().zip(got).all(|(e, a)| matches(e, a, saved))
            }
            _ => false,
        },
        literal => value(literal) == *actual,
    }
}

fn type_name(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Int(_) => "integer",
        Json::Str(_) => "string",
        Json::Arr(_) => "array",
        Json::Obj(_) => "object",
    }
}
