//! The import graph of `src/`: every path from one file to another (`use crate::...`,
//! `crate::a::b` in code, `super::`, a module's own children, and names bound to modules by a
//! `use`) must run down the layers of `docs/architecture.md` or stay on its floor, and close no
//! circle, and no file outside a family's folder but the family table may name a family. The
//! layer table is read from that document, so the map and the check are one thing. No Redis
//! needed.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// A file of `src/`, by its path there ("queue/mod.rs").
type File = String;

#[test]
fn imports_run_down_the_layers_and_close_no_circle() {
    let problems = problems(&layer_table(), &source_files());
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

/// The check catches what it is for: a shared room that names a family by its folder (as
/// `deadlock.rs` and `scan/` did before the family contract answered their questions).
#[test]
fn a_family_named_outside_its_folder_is_refused() {
    let layers = layer_table();
    for (room, line) in [
        ("deadlock.rs", "use crate::families::lock::rules::WANT;"),
        ("scan/mod.rs", "use crate::families::lock::store::Holder;"),
        (
            "upkeep/mod.rs",
            "use crate::families::rwlock::family::ReadWrite;",
        ),
        (
            "queue/serve.rs",
            "fn f() { crate::families::latch::serve::admit(); }",
        ),
    ] {
        let mut files = source_files();
        let text = files.get_mut(room).expect("the room exists");
        text.insert_str(0, &format!("{line}\n"));
        let found = problems(&layers, &files);
        let named = found
            .iter()
            .any(|p| p.starts_with(&format!("by name: {room} names the family file families/")));
        assert!(named, "{room} with `{line}` passed: {found:?}");
    }
}
#[test]
fn no_source_file_is_past_a_sitting() {
    const MAX_LINES: usize = 400;
    let long: Vec<String> = source_files()
        .iter()
        .map(|(file, text)| (file, text.lines().count()))
        .filter(|&(_, lines)| lines > MAX_LINES)
        .map(|(file, lines)| format!("{file}: {lines} lines"))
        .collect();
    assert!(long.is_empty(), "over {MAX_LINES} lines: {long:?}");
}

/// The problems of `files` against the layer table: a file in no layer, an upward import, a
/// family named outside its own folder (but in the family table), an import across families,
/// and circles.
fn problems(layers: &[(usize, Vec<String>)], files: &BTreeMap<File, String>) -> Vec<String> {
    let mut problems = Vec::new();
    let layer_of: BTreeMap<&File, usize> = files
        .keys()
        .filter_map(|file| match layer(layers, file) {
            Some(n) => Some((file, n)),
            None => {
                problems.push(format!("{file}: in no layer of docs/architecture.md"));
                None
            }
        })
        .collect();
    let graph = import_graph(files);
    for (from, targets) in &graph {
        for to in targets {
            let (Some(&a), Some(&b)) = (layer_of.get(from), layer_of.get(to)) else {
                continue;
            };
            if b < a {
                problems.push(format!(
                    "upward: {from} (layer {a}) imports {to} (layer {b})"
                ));
            }
            // A shared room reaches a family through the family contract, so that adding a
            // family touches its folder and the table's one line, nothing else.
            if family(from).is_none() && from != FAMILY_TABLE && family(to).is_some() {
                problems.push(format!("by name: {from} names the family file {to}"));
            }
            if family(from).zip(family(to)).is_some_and(|(x, y)| x != y) {
                problems.push(format!("across families: {from} imports {to}"));
            }
        }
    }
    for (circle, files) in circles(&graph) {
        let (circle, files) = (circle.join(" -> "), files.join(", "));
        problems.push(format!("circle: {circle} (files in it: {files})"));
    }
    problems
}

/// The one file outside the families' folders that names them: the family table.
const FAMILY_TABLE: &str = "families/mod.rs";

/// The family whose folder holds `file` ("lock" for "families/lock/serve.rs").
fn family(file: &str) -> Option<&str> {
    let mut parts = file.strip_prefix("families/")?.split('/');
    let (name, rest) = (parts.next()?, parts.next());
    rest.map(|_| name)
}

/// The rows of the layer table between `<!-- layers -->` and `<!-- /layers -->` in
/// docs/architecture.md, top (1) to bottom: `| n | name | `pattern`, `pattern` ... |`.
fn layer_table() -> Vec<(usize, Vec<String>)> {
    let doc = fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let table = doc
        .split("<!-- layers -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- /layers -->").next())
        .expect("docs/architecture.md has no <!-- layers --> table");
    let rows: Vec<_> = table
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
            let n = cells.first()?.trim().parse().ok()?;
            let patterns = cells.last()?.split('`').skip(1).step_by(2);
            Some((n, patterns.map(str::to_string).collect()))
        })
        .collect();
    assert!(!rows.is_empty(), "the layer table has no rows");
    rows
}

/// The layer of the longest pattern that matches `file` (`*` is one name, `**` any path).
fn layer(layers: &[(usize, Vec<String>)], file: &str) -> Option<usize> {
    layers
        .iter()
        .flat_map(|(n, patterns)| patterns.iter().map(move |p| (p.len(), *n, p)))
        .filter(|(_, _, pattern)| glob(pattern, file))
        .max_by_key(|&(len, _, _)| len)
        .map(|(_, n, _)| n)
}

fn glob(pattern: &str, file: &str) -> bool {
    fn parts(s: &str) -> Vec<&str> {
        s.split('/').collect()
    }
    fn walk(p: &[&str], f: &[&str]) -> bool {
        match (p.first(), f.first()) {
            (None, None) => true,
            (Some(&"**"), _) => walk(&p[1..], f) || (!f.is_empty() && walk(p, &f[1..])),
            (Some(seg), Some(name)) => {
                let matches = match seg.split_once('*') {
                    Some((pre, post)) => name.starts_with(pre) && name.ends_with(post),
                    None => seg == name,
                };
                matches && walk(&p[1..], &f[1..])
            }
            _ => false,
        }
    }
    walk(&parts(pattern), &parts(file))
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under src/, by its path there, with its text.
fn source_files() -> BTreeMap<File, String> {
    fn walk(dir: &Path, out: &mut BTreeMap<File, String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let name = path.strip_prefix(root().join("src")).unwrap();
                let text = fs::read_to_string(&path).unwrap();
                out.insert(name.to_string_lossy().into_owned(), text);
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(&root().join("src"), &mut files);
    files
}

/// The module path a file defines: "queue/mod.rs" and "queue.rs" are ["queue"].
fn module_of(file: &str) -> Vec<String> {
    let mut path: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
        path.pop();
    }
    path
}

/// Who imports whom: for each file, the other files its paths name.
fn import_graph(files: &BTreeMap<File, String>) -> BTreeMap<File, BTreeSet<File>> {
    let modules: BTreeMap<Vec<String>, File> =
        files.keys().map(|f| (module_of(f), f.clone())).collect();
    // The longest module prefix of an absolute path is the file it reaches.
    let file_of = |path: &[String]| -> (File, usize) {
        (0..=path.len())
            .rev()
            .find_map(|n| modules.get(&path[..n]).map(|f| (f.clone(), n)))
            .expect("lib.rs is the module of the empty path")
    };
    let mut graph = BTreeMap::new();
    for (file, text) in files {
        let code = without_tests(&strip_comments(text));
        let here = module_of(file);
        let declared = macro_modules(&code);
        let children: BTreeSet<String> = words_after(&code, "mod ")
            .into_iter()
            .filter(|name| code.contains(&format!("mod {name};")))
            .filter(|name| !name.starts_with('$'))
            .chain(declared.iter().flat_map(|(_, names)| names.clone()))
            .collect();
        let absolute = |path: &[String]| -> Option<Vec<String>> {
            let (first, rest) = path.split_first()?;
            let mut base = match first.as_str() {
                "crate" | "$crate" => vec![],
                "self" => here.clone(),
                "super" => here[..here.len().saturating_sub(1)].to_vec(),
                child if children.contains(child) => {
                    let mut base = here.clone();
                    base.push(child.to_string());
                    base
                }
                _ => return None,
            };
            let mut rest = rest.iter().peekable();
            while rest.peek().is_some_and(|s| *s == "super") {
                base.pop();
                rest.next();
            }
            base.extend(rest.cloned());
            Some(base)
        };
        let mut targets = BTreeSet::new();
        let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (path, alias) in use_paths(&code) {
            let Some(path) = absolute(&path) else {
                continue;
            };
            let (target, used) = file_of(&path);
            if used == path.len() {
                aliases.insert(alias, path.clone());
            }
            targets.insert(target);
        }
        let roots: Vec<String> = ["crate", "$crate", "super", "self"]
            .into_iter()
            .map(String::from)
            .chain(children.iter().cloned())
            .collect();
        let paths = code_paths(&code)
            .into_iter()
            .flat_map(|path| match &declared {
                // A path through the macro's module parameter: one path per module it declares.
                Some((param, names)) if &path[0] == param => names
                    .iter()
                    .map(|name| [std::slice::from_ref(name), &path[1..]].concat())
                    .collect(),
                _ => vec![path],
            });
        for path in paths {
            let (first, rest) = path.split_first().unwrap();
            let path = if roots.contains(first) {
                absolute(&path)
            } else {
                aliases
                    .get(first)
                    .map(|base| [base.clone(), rest.to_vec()].concat())
            };
            if let Some(path) = path {
                targets.insert(file_of(&path).0);
            }
        }
        targets.remove(file);
        graph.insert(file.clone(), targets);
    }
    graph
}

/// A macro of the file that declares modules (`mod $folder;`: the family table), as its
/// parameter and the names its invocation gives it, each the first word of an entry
/// (`lock: Plain,`), so that the modules and the paths the macro builds through them count.
fn macro_modules(code: &str) -> Option<(String, Vec<String>)> {
    let param = words_after(code, "mod ")
        .into_iter()
        .find(|w| w.starts_with('$') && code.contains(&format!("mod {w};")))?;
    let name = words_after(code, "macro_rules! ").into_iter().next()?;
    let call = code
        .split(&format!("{name}! {{"))
        .nth(1)?
        .split('}')
        .next()?;
    let names = call
        .split(',')
        .filter_map(|entry| entry.split(':').next())
        .map(str::trim)
        .filter(|word| !word.is_empty())
        .map(String::from)
        .collect();
    Some((param, names))
}

/// `// ...` and `/* ... */` removed, string literals kept (a `//` inside one stays).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        match (in_string, c, chars.peek()) {
            (true, '\\', _) => {
                out.push(c);
                out.extend(chars.next());
            }
            (_, '"', _) => {
                in_string = !in_string;
                out.push(c);
            }
            (false, '/', Some('/')) => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            (false, '/', Some('*')) => {
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The text before a file's `#[cfg(test)] mod ... { }`: unit tests are not part of the map.
fn without_tests(text: &str) -> String {
    match text.find("#[cfg(test)]\nmod ") {
        Some(at) => text[..at].to_string(),
        None => text.to_string(),
    }
}

fn words_after(code: &str, prefix: &str) -> Vec<String> {
    code.match_indices(prefix)
        .filter(|(at, _)| *at == 0 || !is_word(code[..*at].chars().last().unwrap()))
        .map(|(at, _)| {
            code[at + prefix.len()..]
                .chars()
                .take_while(|&c| is_word(c))
                .collect()
        })
        .collect()
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// Every leaf of every `use` tree, as (path, the name it binds).
fn use_paths(code: &str) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("use ") {
        let before = code[..at].chars().last();
        if before.is_some_and(is_word) {
            continue;
        }
        let tree = &code[at + 4..];
        let Some(end) = tree.find(';') else { continue };
        expand(
            &tree[..end].split_whitespace().collect::<String>(),
            &[],
            &mut out,
        );
    }
    out
}

fn expand(tree: &str, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    if let Some(open) = tree.find('{') {
        let mut path = prefix.to_vec();
        path.extend(
            tree[..open]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from),
        );
        let inner = &tree[open + 1..tree.len() - 1];
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..i], &path, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], &path, out);
        return;
    }
    if tree.is_empty() || tree == "*" {
        out.push((prefix.to_vec(), String::new()));
        return;
    }
    let (path, alias) = match tree.split_once("as") {
        Some((path, alias)) if !path.ends_with(':') && !alias.starts_with(':') => (path, alias),
        _ => (tree, ""),
    };
    let mut full = prefix.to_vec();
    full.extend(path.split("::").map(String::from));
    if full.last().is_some_and(|s| s == "self") {
        full.pop();
    }
    let alias = if alias.is_empty() {
        full.last().cloned().unwrap_or_default()
    } else {
        alias.to_string()
    };
    out.push((full, alias));
}

fn without_uses(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let starts = at == 0 || !is_word(rest[..at].chars().last().unwrap());
        let end = if starts {
            rest[at..].find(';').map(|e| at + e + 1)
        } else {
            None
        };
        match end {
            Some(end) => {
                out.push_str(&rest[..at]);
                rest = &rest[end..];
            }
            None => {
                out.push_str(&rest[..at + 4]);
                rest = &rest[at + 4..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Every `a::b::c` path in code (outside `use` lines), by its segments.
fn code_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in without_uses(code).lines() {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let starts =
                is_word(chars[i]) && (i == 0 || !(is_word(chars[i - 1]) || chars[i - 1] == ':'));
            if !starts {
                i += 1;
                continue;
            }
            let mut segments = vec![String::new()];
            while i < chars.len() {
                if is_word(chars[i]) {
                    segments.last_mut().unwrap().push(chars[i]);
                    i += 1;
                } else if chars[i] == ':'
                    && chars.get(i + 1) == Some(&':')
                    && chars.get(i + 2).is_some_and(|&c| is_word(c))
                {
                    segments.push(String::new());
                    i += 2;
                } else {
                    break;
                }
            }
            if segments.len() > 1 {
                out.push(segments);
            }
        }
    }
    out
}

/// Each circle of the graph once (one per strongly connected set of files, found by Tarjan's
/// algorithm), as the files along one loop through it.
fn circles(graph: &BTreeMap<File, BTreeSet<File>>) -> Vec<(Vec<File>, Vec<File>)> {
    let mut sets = Vec::new();
    let mut index = BTreeMap::new();
    let mut low = BTreeMap::new();
    let mut stack = Vec::new();
    let mut on_stack = BTreeSet::new();
    fn visit(
        v: &File,
        graph: &BTreeMap<File, BTreeSet<File>>,
        index: &mut BTreeMap<File, usize>,
        low: &mut BTreeMap<File, usize>,
        stack: &mut Vec<File>,
        on_stack: &mut BTreeSet<File>,
        sets: &mut Vec<Vec<File>>,
    ) {
        let n = index.len();
        index.insert(v.clone(), n);
        low.insert(v.clone(), n);
        stack.push(v.clone());
        on_stack.insert(v.clone());
        for w in graph.get(v).into_iter().flatten() {
            if !index.contains_key(w) {
                visit(w, graph, index, low, stack, on_stack, sets);
                low.insert(v.clone(), low[v].min(low[w]));
            } else if on_stack.contains(w) {
                low.insert(v.clone(), low[v].min(index[w]));
            }
        }
        if low[v] == index[v] {
            let mut set = Vec::new();
            while let Some(w) = stack.pop() {
                on_stack.remove(&w);
                set.push(w.clone());
                if &w == v {
                    break;
                }
            }
            if set.len() > 1 {
                sets.push(set);
            }
        }
    }
    for v in graph.keys() {
        if !index.contains_key(v) {
            visit(
                v,
                graph,
                &mut index,
                &mut low,
                &mut stack,
                &mut on_stack,
                &mut sets,
            );
        }
    }
    sets.into_iter()
        .map(|mut set| {
            set.sort();
            (one_loop(graph, &set), set)
        })
        .collect()
}

/// A loop through the first file of a strongly connected `set`, by breadth-first search.
fn one_loop(graph: &BTreeMap<File, BTreeSet<File>>, set: &[File]) -> Vec<File> {
    let start = set.iter().min().unwrap();
    let inside: BTreeSet<&File> = set.iter().collect();
    let mut came_from: BTreeMap<&File, &File> = BTreeMap::new();
    let mut frontier = vec![start];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for v in frontier {
            for w in graph[v].iter().filter(|w| inside.contains(w)) {
                if w == start {
                    let mut path = vec![start.clone()];
                    let mut at = v;
                    while at != start {
                        path.push(at.clone());
                        at = came_from[at];
                    }
                    path.push(start.clone());
                    path.reverse();
                    return path;
                }
                if !came_from.contains_key(w) {
                    came_from.insert(w, v);
                    next.push(w);
                }
            }
        }
        frontier = next;
    }
    set.to_vec()
}
