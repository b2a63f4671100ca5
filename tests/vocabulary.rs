//! The helpers' shared vocabulary, checked against their code: docs/clients.md's step table
//! ("Where each helper does each step") names, for each step and each helper, the files that do
//! it and the symbols in them. Every named file must exist under its helper's source folder and
//! every named symbol must appear in the file it is named with, so the guide cannot drift from
//! the code (a rename fails here until the table follows it). Read from the document itself, as
//! `tests/layers.rs` reads its layer table. No Redis needed.

use std::fs;
use std::path::{Path, PathBuf};

const GUIDE: &str = "docs/clients.md";
const TABLE_HEADING: &str = "### Where each helper does each step";
const SOURCE_EXTENSIONS: [&str; 6] = [".py", ".rs", ".ts", ".java", ".go", ".php"];

/// One helper's column: its name and the folder its file names are relative to.
struct Column {
    helper: String,
    root: PathBuf,
}

#[test]
fn every_file_and_symbol_the_step_table_names_exists() {
    let guide = read(Path::new(GUIDE));
    let rows = step_table(&guide);
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
            for (file, symbols) in references(cell) {
                checked += 1;
                let path = column.root.join(&file);
                let Ok(text) = fs::read_to_string(&path) else {
                    problems.push(format!(
                        "{step} / {}: no file {}",
                        column.helper,
                        path.display()
                    ));
                    continue;
                };
                for symbol in symbols {
                    if !contains_word(&text, &symbol) {
                        problems.push(format!(
                            "{step} / {}: `{symbol}` is not in {}",
                            column.helper,
                            path.display()
                        ));
                    }
                }
            }
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

/// The table's rows after its heading, each as its cells (the separator row left out).
fn step_table(guide: &str) -> Vec<Vec<String>> {
    let start = guide
        .find(TABLE_HEADING)
        .unwrap_or_else(|| panic!("{GUIDE}: no heading {TABLE_HEADING:?}"));
    guide[start..]
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
