//! The step table of docs/clients.md ("Where each helper does each step") names, for every
//! helper, the files that take each step and the symbols in them: every file it names must
//! exist, and every symbol must be in the file it is given for. The table is read from the
//! document, as `tests/layers.rs` reads the layer table, so the guide and the check are one
//! thing. No Redis needed.

use std::fs;
use std::path::{Path, PathBuf};

/// Where a column's names are, under clients/: the helper's folder and, when the column's
/// heading names one in backticks ("Python (`src/rlock/`)"), that folder inside it.
fn column_roots(header: &str) -> Vec<PathBuf> {
    let clients = root().join("clients");
    cells(header)
        .iter()
        .skip(1)
        .map(|heading| {
            let helper = heading
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_lowercase();
            let helper = helper.trim_matches(|c: char| !c.is_alphanumeric());
            let base = ticked(heading).into_iter().next().unwrap_or_default();
            clients.join(helper).join(base)
        })
        .collect()
}

#[test]
fn every_file_and_symbol_of_the_step_table_exists() {
    let doc = fs::read_to_string(root().join("docs/clients.md")).unwrap();
    let table = doc
        .split("### Where each helper does each step")
        .nth(1)
        .expect("docs/clients.md has no step table");
    let rows: Vec<&str> = table
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .collect();
    assert!(rows.len() > 2, "the step table has no rows");
    let roots = column_roots(rows[0]);
    let (mut problems, mut checked) = (Vec::new(), 0);
    for row in &rows[2..] {
        let cells = cells(row);
        let step = cells[0].clone();
        for (cell, base) in cells.iter().skip(1).zip(&roots) {
            for (name, file) in names(cell) {
                checked += 1;
                let path = base.join(&file);
                match (fs::read_to_string(&path), name) {
                    (Err(_), _) => problems.push(format!("{step}: {} is missing", shown(&path))),
                    (Ok(text), Some(symbol)) if !has_word(&text, &symbol) => {
                        problems.push(format!("{step}: `{symbol}` is not in {}", shown(&path)))
                    }
                    _ => {}
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "\n{}\n({checked} names checked)\n",
        problems.join("\n")
    );
    assert!(
        checked >= 50,
        "only {checked} names read: is the table's shape still the one parsed here?"
    );
}

/// What a cell names: each file (None, the file) and each symbol with the file it is given
/// for (Some(symbol), file): "`core.rs` (`owner_id`)" and "`Family` in `options.ts`". A symbol
/// after a file is that file's; one before any file must be followed by " in `file`".
fn names(cell: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    let mut file: Option<String> = None;
    let parts: Vec<&str> = cell.split('`').collect();
    // Odd parts are in backticks; the even part after a symbol says " in " when a file follows.
    for (at, part) in parts.iter().enumerate().filter(|(at, _)| at % 2 == 1) {
        let part = part.to_string();
        if is_file(&part) {
            out.push((None, part.clone()));
            file = Some(part);
            continue;
        }
        let given_for = parts
            .get(at + 1)
            .filter(|between| between.trim() == "in")
            .and_then(|_| parts.get(at + 2))
            .filter(|next| is_file(next))
            .map(|next| next.to_string());
        match given_for.or_else(|| file.clone()) {
            Some(file) if is_symbol(&part) => out.push((Some(part), file)),
            _ => {}
        }
    }
    out
}

fn is_file(name: &str) -> bool {
    [".py", ".rs", ".ts", ".java", ".go"]
        .iter()
        .any(|ext| name.ends_with(ext))
}

/// A name a program would use (`owner_id`, `Family`), not a phrase or a call with arguments.
fn is_symbol(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
}

fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().last();
        let after = text[at + word.len()..].chars().next();
        let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !part(before) && !part(after)
    })
}

fn cells(row: &str) -> Vec<String> {
    row.trim()
        .trim_matches('|')
        .split('|')
        .map(|cell| cell.trim().to_string())
        .collect()
}

fn ticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The reading of cells the check relies on.
#[test]
fn a_cell_names_files_and_the_symbols_in_them() {
    let named = |cell: &str| -> Vec<(Option<String>, String)> { names(cell) };
    let own = |s: &str, f: &str| (Some(s.to_string()), f.to_string());
    let file = |f: &str| (None, f.to_string());
    assert_eq!(
        named("`core.rs` (`owner_id`)"),
        [file("core.rs"), own("owner_id", "core.rs")]
    );
    assert_eq!(
        named("`acquire.ts` (one key or all), `holder.ts`; `Family` in `options.ts`"),
        [
            file("acquire.ts"),
            file("holder.ts"),
            own("Family", "options.ts"),
            file("options.ts")
        ]
    );
    assert_eq!(named("—"), []);
    assert_eq!(
        named("`session.ts` (`rebind`, `recover`)"),
        [
            file("session.ts"),
            own("rebind", "session.ts"),
            own("recover", "session.ts")
        ]
    );
}
