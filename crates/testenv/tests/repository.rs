//! Properties of the repository as a whole: no crate has an import cycle between its
//! top-level modules, nothing refers to a path or a document outside the repository, and no
//! production function is too long to read as one piece.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn files(dir: &Path, ext: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if p.is_dir() {
            if !matches!(name, "target" | "_output" | ".git" | "node_modules") {
                files(&p, ext, out);
            }
        } else if ext.iter().any(|x| name.ends_with(x)) {
            out.push(p);
        }
    }
}

/// Top-level module of `file` inside `src` (`None` for the crate root).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    let stem = last.trim_end_matches(".rs").to_string();
    if !matches!(stem.as_str(), "mod" | "lib" | "main") {
        parts.push(stem);
    }
    parts.into_iter().next()
}

/// `crate::<module>` references of the non-test, non-comment code of each top-level module.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut list = Vec::new();
    files(src, &[".rs"], &mut list);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // A module's `tests.rs` is its `#[cfg(test)] mod tests` in a file of its own.
    for f in list.into_iter().filter(|f| !f.ends_with("tests.rs")) {
        let Some(module) = top_module(src, &f) else {
            continue;
        };
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let code = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
        let deps = graph.entry(module.clone()).or_default();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for part in line.split("crate::").skip(1) {
                let dep: String = part
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                    .collect();
                if !dep.is_empty() && dep != module {
                    deps.insert(dep);
                }
            }
        }
    }
    graph
}

fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        u: &str,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(u.to_string(), 1);
        stack.push(u.to_string());
        for v in g.get(u).into_iter().flatten() {
            if !g.contains_key(v) {
                continue;
            }
            match state.get(v) {
                Some(1) => {
                    let at = stack.iter().position(|s| s == v).unwrap_or(0);
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(v.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(g, v, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(u.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for u in graph.keys() {
        if !state.contains_key(u) {
            let mut stack = Vec::new();
            if let Some(c) = visit(graph, u, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let root = testenv::repo_root();
    let mut srcs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    srcs.push(root.join("hack/bench/src"));
    let mut cycles = Vec::new();
    for src in &srcs {
        if let Some(c) = find_cycle(&module_graph(src)) {
            cycles.push(format!("{}: {}", src.display(), c.join(" -> ")));
        }
    }
    assert!(srcs.len() >= 7, "found the crates: {srcs:?}");
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

/// The detector itself: a cycle is found, a chain is not.
#[test]
fn the_cycle_detector_finds_cycles() {
    let g = |edges: &[(&str, &str)]| {
        let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            m.entry(a.to_string()).or_default().insert(b.to_string());
            m.entry(b.to_string()).or_default();
        }
        m
    };
    assert_eq!(
        find_cycle(&g(&[("a", "b"), ("b", "c"), ("c", "a")])),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(find_cycle(&g(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
}

#[test]
fn nothing_refers_outside_the_repository() {
    let root = testenv::repo_root();
    let mut list = Vec::new();
    files(
        &root,
        &[".rs", ".md", ".sh", ".go", ".yaml", ".yml", ".toml", ".tpl"],
        &mut list,
    );
    // Spelled in pieces so that this file does not find itself.
    let outside = ["../", "shared"].concat();
    let section = '\u{a7}';
    let mut found = Vec::new();
    for f in &list {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if line.contains(&outside) || line.contains(section) {
                found.push(format!("{}:{}: {line}", f.display(), i + 1));
            }
        }
    }
    assert!(
        list.len() > 100,
        "read the repository: {} files",
        list.len()
    );
    assert!(
        found.is_empty(),
        "references outside the repository:\n{}",
        found.join("\n")
    );
}

/// The most lines a production function may have: longer ones are split into steps.
const MAX_FUNCTION_LINES: usize = 100;

/// Where the production code and the bench are, from the repository root; `*` stands for
/// every directory at that place.
const FUNCTION_LENGTH_ROOTS: &[&str] = &["crates/*/src", "hack/bench/src"];

/// Source roots the limit leaves out: test support.
const FUNCTION_LENGTH_EXEMPT: &[&str] = &["crates/testenv/src"];

/// The directories a [`FUNCTION_LENGTH_ROOTS`] entry names.
fn expand_root(root: &Path, pattern: &str) -> Vec<PathBuf> {
    let Some((parent, rest)) = pattern.split_once("/*/") else {
        return vec![root.join(pattern)];
    };
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join(parent))
        .unwrap()
        .flatten()
        .map(|e| e.path().join(rest))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Whether `line` opens a function item (`pub(crate) async fn name`, not a comment).
fn opens_function(line: &str) -> bool {
    let mut words = line.split_whitespace().skip_while(|w| {
        matches!(*w, "pub" | "const" | "async" | "unsafe" | "default") || w.starts_with("pub(")
    });
    words.next() == Some("fn") && words.next().is_some()
}

/// `(first line, name, lines)` of every function in `text` outside `#[cfg(test)] mod` blocks,
/// as rustfmt lays them out: a function ends at the first later line that is its
/// indentation followed by `}` (without one, at the end of the file). Declarations (the
/// signature ends in `;`) are not functions.
fn function_lengths(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let next = lines.get(i + 1).map_or("", |l| l.trim());
        if line.trim() == "#[cfg(test)]" && next.starts_with("mod ") && next.ends_with('{') {
            let close = format!("{}}}", &line[..indent(line)]);
            i += lines[i..]
                .iter()
                .position(|l| *l == close)
                .unwrap_or(lines.len());
            continue;
        }
        i += 1;
        if !opens_function(line) {
            continue;
        }
        let signature_end = lines[i - 1..]
            .iter()
            .map(|l| l.trim_end())
            .find(|l| l.ends_with(['{', ';', '}']));
        if signature_end.is_some_and(|l| l.ends_with(';')) {
            continue;
        }
        let close = format!("{}}}", &line[..indent(line)]);
        let length = if line.trim_end().ends_with('}') {
            1
        } else {
            lines[i..]
                .iter()
                .position(|l| *l == close)
                .map_or(lines.len() + 1 - i, |k| k + 2)
        };
        let name = line.split("fn ").nth(1).unwrap_or_default();
        let name: String = name
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        found.push((i, name, length));
    }
    found
}

#[test]
fn no_production_function_is_over_the_limit() {
    let root = testenv::repo_root();
    let exempt: Vec<PathBuf> = FUNCTION_LENGTH_EXEMPT
        .iter()
        .map(|e| root.join(e))
        .collect();
    let mut list = Vec::new();
    for pattern in FUNCTION_LENGTH_ROOTS {
        for src in expand_root(&root, pattern) {
            if !exempt.contains(&src) {
                files(&src, &[".rs"], &mut list);
            }
        }
    }
    list.retain(|f| !f.ends_with("tests.rs"));
    let mut long = Vec::new();
    for f in &list {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (line, name, length) in function_lengths(&text) {
            if length > MAX_FUNCTION_LINES {
                let at = f.strip_prefix(&root).unwrap_or(f).display();
                long.push(format!("{at}:{line}: {name} has {length} lines"));
            }
        }
    }
    assert!(list.len() > 100, "read the sources: {} files", list.len());
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them into steps):\n{}",
        long.join("\n")
    );
}

/// The scan itself: a function counts from its first line to its closing brace; comments,
/// declarations and test modules are no functions.
#[test]
fn the_function_scan_measures_rustfmt_layout() {
    let text = "\
fn one() {}
pub(crate) async fn two(
    a: u8,
) -> u8 {
    a
}
trait T {
    fn declared(
        &self,
    ) -> u8;
}
// fn in_a_comment() {
#[cfg(test)]
mod tests {
    fn hidden() {
        let _ = 1;
    }
}
";
    assert_eq!(
        function_lengths(text),
        vec![(1, "one".to_string(), 1), (2, "two".to_string(), 5)]
    );
}
