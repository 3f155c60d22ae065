//! The top-level modules of alembic-tools form a directed acyclic graph: the value types sit
//! low, the pipeline sits on top, and no module reaches back up. A cycle between files means
//! two ideas that cannot be read (or changed) apart, so this test fails on the first one.
//!
//! A module's dependencies are the `crate::<module>` paths in its files (the `#[cfg(test)]`
//! tail of a file excluded); `crate::<Item>` through lib.rs's re-exports counts as the module
//! that defines the item.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file belongs to: `src/audit.rs` → `audit`, `src/pipeline/execute.rs` → `pipeline`.
fn top_module(src: &Path, file: &Path) -> String {
    let first = file.strip_prefix(src).unwrap().components().next().unwrap();
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

/// The code of a file without comments and without its trailing test module.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .map(|l| l.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segment of each item in `crate::{a::b, c, d::{e, f}}` (text after `{`).
fn brace_heads(s: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut at_item_start = true;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item_start = true,
            c if at_item_start && (c.is_alphanumeric() || c == '_') => {
                heads.push(ident_at(&s[i..]).to_string());
                at_item_start = false;
            }
            _ => {}
        }
    }
    heads
}

/// Every `crate::` head segment in the code.
fn crate_refs(code: &str) -> Vec<String> {
    code.match_indices("crate::")
        .flat_map(|(i, m)| {
            let rest = code[i + m.len()..].trim_start();
            match rest.strip_prefix('{') {
                Some(group) => brace_heads(group),
                None => vec![ident_at(rest).to_string()],
            }
        })
        .filter(|h| !h.is_empty())
        .collect()
}

/// Item name → defining module, from lib.rs's `pub use module::{...}` lines.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut items = BTreeMap::new();
    for stmt in code_of(lib).split(';') {
        let Some(path) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module = ident_at(path);
        let rest = &path[module.len()..];
        let names = match rest.strip_prefix("::{") {
            Some(group) => brace_heads(group),
            None => vec![rest.rsplit("::").next().unwrap_or_default().to_string()],
        };
        for name in names {
            items.insert(name, module.to_string());
        }
    }
    items
}

fn module_graph() -> Graph {
    let src = src_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| top_module(&src, f))
        .filter(|m| m != "lib")
        .collect();
    let reexports = root_reexports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut graph: Graph = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for file in &files {
        let from = top_module(&src, file);
        if from == "lib" {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        for head in crate_refs(&code) {
            let to = match reexports.get(&head) {
                Some(m) => m.clone(),
                None if modules.contains(&head) => head,
                None => continue,
            };
            if to != from {
                graph.get_mut(&from).unwrap().insert(to);
            }
        }
    }
    graph
}

/// A cycle as a path `a -> b -> ... -> a`, if there is one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(pos) = path.iter().position(|p| p == node) {
            let mut cycle = path[pos..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_parser_sees_grouped_and_reexported_paths() {
    let code = code_of(
        "use crate::a::{X, Y};\nuse crate::{b::Z, c};\n// crate::commented\nfn f() { crate::Item::new() }\n#[cfg(test)]\nuse crate::d;",
    );
    assert_eq!(crate_refs(&code), ["a", "b", "c", "Item"]);
    let lib = "pub mod a;\npub use a::{X, Y as W};\npub use b::Z;\npub use schemars;";
    let map = root_reexports(lib);
    assert_eq!(map.get("Y").map(String::as_str), Some("a"));
    assert_eq!(map.get("Z").map(String::as_str), Some("b"));
    let mut g = Graph::new();
    g.insert("a".into(), ["b".to_string()].into());
    g.insert("b".into(), ["a".to_string()].into());
    assert_eq!(
        find_cycle(&g),
        Some(vec!["a".to_string(), "b".to_string(), "a".to_string()])
    );
}

#[test]
fn the_modules_of_alembic_tools_form_no_cycle() {
    let graph = module_graph();
    assert!(graph.contains_key("pipeline") && graph.contains_key("audit"));
    if let Some(cycle) = find_cycle(&graph) {
        let edges: Vec<String> = graph
            .iter()
            .map(|(m, deps)| format!("  {m} -> {deps:?}"))
            .collect();
        panic!(
            "module cycle: {}\nmodule graph:\n{}",
            cycle.join(" -> "),
            edges.join("\n")
        );
    }
}
