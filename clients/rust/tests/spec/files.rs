//! Reading clients/spec: the scenario files that must pass (the top level) and those that must
//! fail (`valid-fail/`), each refused when its schemaVersion is newer than this runner reads
//! (clients/spec/CONTRACT.md R1), after check.py has found them well-formed.

use crate::json::{parse, Json};
use std::path::{Path, PathBuf};

/// The newest scenario-file version this runner reads.
pub const SCHEMA_VERSION: (u64, u64) = (1, 0);

pub fn spec_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../spec")
}

/// A scenario file's content, or why it is refused: no schemaVersion, an unreadable one, or
/// one newer than `SCHEMA_VERSION` (never run, never skipped).
pub fn read_spec_file(file: &Path) -> Result<Json, String> {
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let text = std::fs::read_to_string(file).map_err(|e| format!("{name}: {e}"))?;
    let content = parse(&text).map_err(|e| format!("{name}: {e}"))?;
    let version = content.str("schemaVersion");
    let parsed = version
        .and_then(|v| v.split_once('.'))
        .and_then(|(major, minor)| Some((major.parse().ok()?, minor.parse().ok()?)));
    match parsed {
        None => Err(format!(
            "{name}: refused: schemaVersion {version:?} is not <major>.<minor>"
        )),
        Some(found) if found > SCHEMA_VERSION => {
            let (major, minor) = SCHEMA_VERSION;
            let version = version.unwrap_or_default();
            Err(format!(
                "{name}: refused: schemaVersion {version} is newer than {major}.{minor}"
            ))
        }
        Some(_) => Ok(content),
    }
}

/// Every scenario of the scenario files in `dir`, named `<file stem>.<name>`; panics on a
/// malformed or refused file.
pub fn scenarios_in(dir: &Path) -> Vec<(String, Json)> {
    let checked = std::process::Command::new("python3")
        .arg(spec_dir().join("check.py"))
        .output()
        .expect("python3");
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && !p.ends_with("schema.json"))
        .collect();
    files.sort();
    let mut all = Vec::new();
    for file in files {
        let content = read_spec_file(&file).unwrap_or_else(|e| panic!("{e}"));
        let stem = file.file_stem().unwrap().to_string_lossy().to_string();
        for scenario in content.items("scenarios") {
            all.push((
                format!("{stem}.{}", scenario.str("name").unwrap()),
                scenario,
            ));
        }
    }
    all
}
