//! The shared behaviour specification (clients/spec): every scenario run through
//! rlock_client's public API against a real server, each reported by name
//! (`cargo test -p rlock-client --test spec -- --nocapture` shows every line; `SPEC_ONLY=text`
//! runs the scenarios whose name contains `text`). The steps' meaning is
//! clients/spec/README.md; the op table is ops.rs.

#[path = "../../../../tests/common/mod.rs"]
#[allow(clippy::type_complexity)] // the shared fixture, linted where it lives
mod common;
mod files;
mod json;
mod ops;
#[path = "../support/mod.rs"]
mod support;
mod topology;

use json::{matches, Json};
use ops::Actor;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// Capabilities this runner has (README: `requires`).
const SUPPORTED: &[&str] = &["cancel", "confirmation", "drop_reply"];
/// Known drifts (README): scenario -> what the helper does instead.
const DRIFTS: &[(&str, &str)] = &[];
const AWAIT_DEFAULT_MS: i64 = 5000;

/// An admin reply as the spec's JSON: maps as objects, `INFO` text as an object of fields.
pub fn from_redis(value: redis::Value) -> Json {
    use redis::Value as V;
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    match value {
        V::Nil => Json::Null,
        V::Int(n) => Json::Int(n),
        V::BulkString(bytes) => Json::Str(text(&bytes)),
        V::SimpleString(s) => Json::Str(s),
        V::Okay => Json::Str("OK".into()),
        V::Boolean(b) => Json::Bool(b),
        V::VerbatimString { text, .. } => Json::Str(text),
        V::Array(items) | V::Set(items) => Json::Arr(items.into_iter().map(from_redis).collect()),
        V::Map(pairs) => Json::Obj(
            pairs
                .into_iter()
                .map(|(k, v)| match from_redis(k) {
                    Json::Str(key) => (key, from_redis(v)),
                    other => (format!("{other:?}"), from_redis(v)),
                })
                .collect(),
        ),
        other => Json::Str(format!("{other:?}")),
    }
}

/// A command of its words.
pub fn command(words: &[String]) -> redis::Cmd {
    let mut command = redis::cmd(&words[0]);
    for word in &words[1..] {
        command.arg(word);
    }
    command
}

fn info_fields(text: &str) -> Json {
    let field = |line: &str| {
        let (name, value) = line.split_once(':')?;
        let value = value
            .trim()
            .parse()
            .map(Json::Int)
            .unwrap_or_else(|_| Json::Str(value.trim().into()));
        Some((name.to_string(), value))
    };
    Json::Obj(text.lines().filter_map(field).collect())
}

struct Run {
    admin: redis::aio::MultiplexedConnection,
    actors: HashMap<String, Arc<Actor>>,
    saved: HashMap<String, Json>,
    background: HashMap<String, (JoinHandle<ops::Outcome>, Instant)>,
    topology: Option<Arc<std::sync::Mutex<topology::Topology>>>,
}

impl Run {
    async fn admin(&mut self, args: &[String]) -> Result<Json, String> {
        let reply: redis::Value = command(args)
            .query_async(&mut self.admin)
            .await
            .map_err(|e| e.to_string())?;
        Ok(
            match (args[0].eq_ignore_ascii_case("INFO"), from_redis(reply)) {
                (true, Json::Str(text)) => info_fields(&text),
                (_, other) => other,
            },
        )
    }

    async fn admin_strs(&mut self, args: &[&str]) -> Result<Json, String> {
        self.admin(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .await
    }

    async fn waiters(&mut self, step: &Json) -> Result<i64, String> {
        let kind = step.str("type").unwrap_or_default();
        if kind == "server" {
            let info = self.admin_strs(&["INFO", "rlock"]).await?;
            return Ok(info.int("rlock_waiters").unwrap_or(0));
        }
        let command = match kind {
            "lock" => "RLOCK.INFO",
            "rwlock" => "RWLOCK.INFO",
            _ => "RSEM.INFO",
        };
        let info = self
            .admin_strs(&[command, step.str("key").unwrap()])
            .await?;
        Ok(match kind {
            _ if info == Json::Null => 0,
            "lock" => info.int("waiters").unwrap_or(0),
            "rwlock" => {
                info.int("waiting_readers").unwrap_or(0) + info.int("waiting_writers").unwrap_or(0)
            }
            _ => info.items("waiters").len() as i64,
        })
    }

    /// Runs one step; Err says why it failed.
    async fn step(&mut self, step: &Json) -> Result<(), String> {
        let op = step.str("op").unwrap_or_default().to_string();
        let mut started = Instant::now();
        let within_from = started;
        let actor = step.str("actor").map(|name| self.actors[name].clone());
        if let Some(name) = step.str("background") {
            let (actor, op, step) = (actor.expect("actor"), op.clone(), step.clone());
            let task = tokio::spawn(async move { actor.run(&op, &step).await });
            self.background.insert(name.into(), (task, started));
            return Ok(());
        }
        let outcome: ops::Outcome = match op.as_str() {
            "join" | "cancel" => {
                let (task, began) = self
                    .background
                    .remove(step.str("name").unwrap())
                    .ok_or("no such background")?;
                started = began;
                if op == "cancel" {
                    task.abort();
                    let _ = task.await;
                    Ok(Json::Null)
                } else {
                    match tokio::time::timeout(Duration::from_secs(30), task).await {
                        Ok(joined) => joined.map_err(|e| e.to_string())?,
                        Err(_) => return Err("the background step did not end within 30 s".into()),
                    }
                }
            }
            "admin" => self.admin(&step.strings("command")).await,
            "sleep" => {
                tokio::time::sleep(Duration::from_millis(step.int("ms").unwrap() as u64)).await;
                Ok(Json::Null)
            }
            "await_waiters" => {
                let deadline = Instant::now()
                    + Duration::from_millis(
                        step.int("within_ms").unwrap_or(AWAIT_DEFAULT_MS) as u64
                    );
                loop {
                    let count = self.waiters(step).await?;
                    if count == step.int("count").unwrap() {
                        break Ok(Json::Null);
                    }
                    if Instant::now() > deadline {
                        return Err(format!(
                            "{count} waiters, not {}",
                            step.int("count").unwrap()
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
            "pause_replicas" | "resume_replicas" => {
                let topology = self
                    .topology
                    .clone()
                    .ok_or("not in a replicated topology")?;
                let mut topology = topology.lock().unwrap();
                match op.as_str() {
                    "pause_replicas" => topology.pause_replicas(),
                    _ => topology.resume_replicas(),
                }
                .map(|()| Json::Null)
            }
            "drop_reply" => {
                // The command runs and the actor's connections close in one transaction,
                // before any reply or message of what it did reaches the actor (R3.1).
                let user = actor.expect("actor").user.clone();
                let mut drop = redis::pipe();
                drop.atomic().add_command(command(&step.strings("command")));
                drop.cmd("CLIENT").arg("KILL").arg("USER").arg(&user);
                let replies: Result<Vec<redis::Value>, _> = drop.query_async(&mut self.admin).await;
                replies
                    .map(|_| Json::Null)
                    .map_err(|e| format!("the drop's transaction failed: {e}"))?;
                Ok(Json::Null)
            }
            "kill_connection" | "crash" => {
                let user = actor.expect("actor").user.clone();
                if op == "crash" {
                    self.admin_strs(&["ACL", "SETUSER", &user, "off"]).await?;
                }
                self.admin_strs(&["CLIENT", "KILL", "USER", &user])
                    .await
                    .map(|_| Json::Null)
            }
            _ => match actor {
                Some(actor) => actor.run(&op, step).await,
                None => return Err(format!("the Rust runner has no op {op:?}")),
            },
        };
        let (result, error) = match outcome {
            Ok(result) => (result, None),
            Err(kind) => (Json::Null, Some(kind)),
        };
        if error.as_deref() != step.str("error") {
            return Err(format!(
                "expected {}, got {}",
                step.str("error").unwrap_or("success"),
                error.unwrap_or_else(|| format!("success ({result:?})"))
            ));
        }
        if let Some(expected) = step.get("expect") {
            if !matches(expected, &result, &self.saved) {
                return Err(format!("expected {expected:?}, got {result:?}"));
            }
        }
        let took = within_from.elapsed().as_millis() as i64;
        if step.int("within_ms").is_some_and(|limit| took > limit) {
            return Err(format!(
                "took {took} ms, more than {} ms",
                step.int("within_ms").unwrap()
            ));
        }
        let waited = started.elapsed().as_millis() as i64;
        if step.int("after_ms").is_some_and(|floor| waited < floor) {
            return Err(format!(
                "ended after {waited} ms, sooner than {} ms",
                step.int("after_ms").unwrap()
            ));
        }
        if let Some(name) = step.str("save") {
            self.saved.insert(name.into(), result);
        }
        Ok(())
    }
}

async fn run_scenario(
    port: u16,
    topology: Option<Arc<std::sync::Mutex<topology::Topology>>>,
    scenario: &Json,
    serial: &mut usize,
) -> Result<(), String> {
    let admin_client =
        redis::Client::open(format!("redis://127.0.0.1:{port}/?protocol=resp3")).unwrap();
    let admin = admin_client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| e.to_string())?;
    let mut run = Run {
        admin,
        actors: HashMap::new(),
        saved: HashMap::new(),
        background: HashMap::new(),
        topology,
    };
    run.admin_strs(&["FLUSHALL"]).await?;
    if let Some(Json::Obj(config)) = scenario.get("server_config") {
        for (name, value) in config {
            let Json::Str(value) = value else {
                return Err("server_config values are strings".into());
            };
            run.admin_strs(&["CONFIG", "SET", name, value]).await?;
        }
    }
    for name in scenario.strings("actors") {
        *serial += 1;
        let user = format!("spec-{serial}-{name}");
        run.admin_strs(&[
            "ACL", "SETUSER", &user, "reset", "on", ">spec", "~*", "&*", "+@all",
        ])
        .await?;
        run.actors.insert(name, Arc::new(Actor::new(port, user)));
    }
    let mut failed = Ok(());
    for (index, step) in scenario.items("steps").iter().enumerate() {
        if let Err(why) = run.step(step).await {
            failed = Err(format!(
                "step {index} ({}): {why}",
                step.str("op").unwrap_or("?")
            ));
            break;
        }
    }
    for (_, (task, _)) in run.background.drain() {
        task.abort();
    }
    if let Some(topology) = &run.topology {
        topology.lock().unwrap().resume_replicas()?;
    }
    let users: Vec<String> = run
        .actors
        .values()
        .map(|actor| actor.user.clone())
        .collect();
    for user in users {
        run.admin_strs(&["ACL", "SETUSER", &user, "off"]).await?;
        run.admin_strs(&["CLIENT", "KILL", "USER", &user]).await?;
        run.admin_strs(&["ACL", "DELUSER", &user]).await?;
    }
    failed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario() {
    let server = support::server();
    let only = std::env::var("SPEC_ONLY").unwrap_or_default();
    let (mut serial, mut report, mut failures) = (0, Vec::new(), Vec::new());
    let mut replicated = None;
    for (name, scenario) in files::scenarios_in(&files::spec_dir())
        .into_iter()
        .filter(|(name, _)| name.contains(&only))
    {
        let requires = scenario.strings("requires");
        let missing: Vec<&String> = requires
            .iter()
            .filter(|r| !SUPPORTED.contains(&r.as_str()))
            .collect();
        if !missing.is_empty() {
            report.push(format!(
                "SKIPPED {name} (the Rust runner does not support {missing:?})"
            ));
            continue;
        }
        let (port, topology) = match scenario.str("topology") {
            Some("replicated") => {
                if replicated.is_none() {
                    let started = topology::Topology::start("replicated").expect("topology");
                    replicated = Some(Arc::new(std::sync::Mutex::new(started)));
                }
                let port = replicated.as_ref().unwrap().lock().unwrap().primary;
                (port, replicated.clone())
            }
            _ => (server.port, None),
        };
        let outcome = run_scenario(port, topology, &scenario, &mut serial).await;
        let drift = DRIFTS
            .iter()
            .find(|(drifting, _)| *drifting == name)
            .map(|(_, why)| why);
        let line = match (outcome, drift) {
            (Ok(()), None) => format!("ok      {name}"),
            (Err(why), Some(drift)) => format!("XFAIL   {name} (known drift: {drift}): {why}"),
            (Ok(()), Some(_)) => format!("FAILED  {name}: passed, but is listed as a known drift"),
            (Err(why), None) => format!("FAILED  {name}: {why}"),
        };
        eprintln!("spec: {line}");
        if line.starts_with("FAILED") {
            failures.push(line.clone());
        }
        report.push(line);
    }
    let count = |prefix: &str| {
        report
            .iter()
            .filter(|line| line.starts_with(prefix))
            .count()
    };
    eprintln!(
        "spec: {} ok, {} skipped, {} xfail, {} failed",
        count("ok"),
        count("SKIPPED"),
        count("XFAIL"),
        failures.len()
    );
    report
        .iter()
        .filter(|line| line.starts_with("SKIPPED"))
        .for_each(|line| eprintln!("spec: {line}"));
    assert!(
        failures.is_empty(),
        "{} of the spec's scenarios failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Scenarios whose expectations are deliberately wrong (CONTRACT.md R2): each must fail here,
/// or the runner has stopped checking something.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_fail_scenarios_fail() {
    let server = support::server();
    let mut serial = 0;
    let mut passed = Vec::new();
    for (name, scenario) in files::scenarios_in(&files::spec_dir().join("valid-fail")) {
        match run_scenario(server.port, None, &scenario, &mut serial).await {
            Err(why) => eprintln!("spec: failed as it must: valid-fail/{name}: {why}"),
            Ok(()) => passed.push(format!("valid-fail/{name}")),
        }
    }
    assert!(
        passed.is_empty(),
        "passed, but their expectations are wrong: {passed:?}"
    );
}

/// A file of a newer schemaVersion (or none) is refused, never run or skipped (R1).
#[test]
fn a_newer_schema_is_refused() {
    let invalid = files::spec_dir().join("invalid");
    let refused = files::read_spec_file(&invalid.join("newer-schema.json")).map(|_| ());
    assert_eq!(
        refused,
        Err("newer-schema.json: refused: schemaVersion 2.0 is newer than 1.0".into())
    );
    for file in std::fs::read_dir(&invalid).unwrap() {
        let file = file.unwrap().path();
        let refused = files::read_spec_file(&file).map(|_| ());
        assert!(
            refused.is_err_and(|e| e.contains("refused: schemaVersion")),
            "{file:?} was read"
        );
    }
}
