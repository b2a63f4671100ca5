//! The helpers' shared vocabulary, checked against their code: docs/clients.md's step table
//! ("Where each helper does each step") names, for each step and each helper, the files that do
//! it and the symbols in them. Every named file must exist under its helper's source folder and
//! every named symbol must appear in the file it is named with, so the guide cannot drift from
//! the code (a rename fails here until the table follows it). Read from the document itself, as
//! `tests/layers.rs` reads its layer table. No Redis needed.
//!
//! Each helper's README ends with the same short source map: the five pieces and the spec
//! runner, each with the files (and symbols) that are it. Every file it names must exist.

use std::fs;
use std::path::{Path, PathBuf};

const GUIDE: &str = "docs/clients.md";
const TABLE_HEADING: &str = "### Where each helper does each step";
const SOURCE_EXTENSIONS: [&str; 6] = [".py", ".rs", ".ts", ".java", ".go", ".php"];
const HELPERS: [&str; 6] = ["python", "rust", "node", "java", "go", "php"];
const MAP_HEADING: &str = "## Source map";
/// The rows of every source map, in this order: the five pieces, then the spec runner.
const PIECES: [&str; 6] = [
    "Family",
    "Session",
    "Dispatcher",
    "Router",
    "Holding",
    "spec runner",
];

/// One helper's column: its name and the folder its file names are relative to.
struct Column {
    helper: String,
    root: PathBuf,
}

#[test]
fn every_file_and_symbol_the_step_table_names_exists() {
    let guide = read(Path::new(GUIDE));
    let rows = table_under(&guide, TABLE_HEADING, GUIDE);
    assert!(
        rows.len() > 1,
        "{GUIDE}: no step table under {TABLE_HEADING:?}"
    );
    let columns = columns(&rows[0]);
    let mut problems = Vec::new();
    let mut checked = 0;
    for row in &rows[1..] {
        let step = row.first().map(String::as_str).unwrap_or("?");
        for (column, cell) in columns.iter().zip(row.iter().skip(1)) {
            let place = format!("{step} / {}", column.helper);
            checked += check_cell(&place, &column.root, cell, &mut problems);
        }
    }
    assert!(
        checked > 20,
        "{GUIDE}: the step table names only {checked} files"
    );
    assert!(
        problems.is_empty(),
        "\n{GUIDE} names what the code lacks:\n{}\n",
        problems.join("\n")
    );
}

#[test]
fn every_helper_readme_ends_with_a_source_map_of_files_that_exist() {
    let mut problems = Vec::new();
    for helper in HELPERS {
        let root = PathBuf::from("clients").join(helper);
        let readme = root.join("README.md");
        let text = read(&readme);
        let name = readme.display().to_string();
        let rows = table_under(&text, MAP_HEADING, &name);
        let start = text.find(MAP_HEADING).unwrap_or_default();
        if text[start + MAP_HEADING.len()..].contains("\n## ") {
            problems.push(format!("{name}: {MAP_HEADING:?} is not its last section"));
        }
        let pieces: Vec<String> = rows.iter().skip(1).map(|row| piece(&row[0])).collect();
        if pieces != PIECES {
            problems.push(format!(
                "{name}: the map's rows are {pieces:?}, not {PIECES:?}"
            ));
        }
        for row in rows.iter().skip(1) {
            let cell = row.get(1).map(String::as_str).unwrap_or_default();
            let place = format!("{name} / {}", piece(&row[0]));
            let files = check_cell(&place, &root, cell, &mut problems);
            if files == 0 && !cell.starts_with('—') {
                problems.push(format!("{place}: names no file (\"—\" if none)"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "\nthe READMEs' source maps name what the code lacks:\n{}\n",
        problems.join("\n")
    );
}

/// The piece a source map row is about: its first cell up to the colon, without backticks.
fn piece(cell: &str) -> String {
    let name = cell.split(':').next().unwrap_or_default();
    name.replace('`', "").trim().to_string()
}

/// Checks the files `cell` names (relative to `root`) and their symbols, adding what is
/// missing to `problems` under `place`; returns how many files it names.
fn check_cell(place: &str, root: &Path, cell: &str, problems: &mut Vec<String>) -> usize {
    let named = references(cell);
    for (file, symbols) in &named {
        let path = root.join(file);
        let Ok(text) = fs::read_to_string(&path) else {
            problems.push(format!("{place}: no file {}", path.display()));
            continue;
        };
        for symbol in symbols {
            if !contains_word(&text, symbol) {
                problems.push(format!("{place}: `{symbol}` is not in {}", path.display()));
            }
        }
    }
    named.len()
}

#[test]
fn the_reader_finds_files_symbols_and_the_symbol_before_in() {
    let cell =
        "`acquire.ts` (one key or all), `holder.ts` (`give`, `take`); `Family` in `options.ts`";
    assert_eq!(
        references(cell),
        vec![
            ("acquire.ts".to_string(), vec![]),
            (
                "holder.ts".to_string(),
                vec!["give".to_string(), "take".to_string()]
            ),
            ("options.ts".to_string(), vec!["Family".to_string()]),
        ]
    );
    assert!(references("—").is_empty());
    assert!(contains_word("fn owner_id()", "owner_id"));
    assert!(!contains_word("fn owner_ids()", "owner_id"));
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rows of the first table after `heading` in `text` (the document `name`), each as its
/// cells (the separator row left out).
fn table_under(text: &str, heading: &str, name: &str) -> Vec<Vec<String>> {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("{name}: no heading {heading:?}"));
    text[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .filter(|line| !line.starts_with("|---"))
        .map(|line| {
            line.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// The helpers' columns from the header row: "Python (`src/rlock/`)" is clients/python/src/rlock/;
/// a header without a folder ("Go") is the helper's own folder.
fn columns(header: &[String]) -> Vec<Column> {
    header[1..]
        .iter()
        .map(|cell| {
            let helper = cell
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string();
            let base = PathBuf::from("clients").join(helper.to_lowercase());
            let folder = backticked(cell).into_iter().next().unwrap_or_default();
            Column {
                helper,
                root: base.join(folder),
            }
        })
        .collect()
}

/// The backticked names of a cell, in order.
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The files a cell names, each with the symbols named with it: symbols after a file (in its
/// parentheses) belong to it, and "`Symbol` in `file`" names a symbol of the file after it.
fn references(cell: &str) -> Vec<(String, Vec<String>)> {
    let mut found: Vec<(String, Vec<String>)> = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let pieces: Vec<&str> = cell.split('`').collect();
    for (i, name) in pieces.iter().enumerate().skip(1).step_by(2) {
        let followed_by_in = pieces.get(i + 1).is_some_and(|after| after.trim() == "in");
        if SOURCE_EXTENSIONS.iter().any(|ext| name.ends_with(ext)) {
            found.push((name.to_string(), std::mem::take(&mut pending)));
        } else if followed_by_in || found.is_empty() {
            pending.push(name.to_string());
        } else if let Some((_, symbols)) = found.last_mut() {
            symbols.push(name.to_string());
        }
    }
    found
}

/// Whether `word` stands in `text` as a whole identifier.
fn contains_word(text: &str, word: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}
