//! Shared helpers: copy a checked-in fixture project to a temporary directory, index it,
//! and describe the resulting graph as plain lines that tests compare whole.

use std::path::{Path, PathBuf};

use alembic_code::{CodeIndex, ProjectGraph, TypeKind};

pub fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A temporary copy of a fixture project (the index writes `.alembic/` into it).
pub fn project(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture_dir(name), dir.path());
    dir
}

pub fn indexed(name: &str) -> (tempfile::TempDir, CodeIndex) {
    let dir = project(name);
    let mut index = CodeIndex::open(dir.path()).unwrap();
    let report = index.refresh(&|_| {}).unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    (dir, index)
}

pub fn graph_of(name: &str) -> ProjectGraph {
    indexed(name).1.graph().unwrap()
}

/// `kind Name : Superclass [Protocols]` for every declared type, plus extensions.
pub fn hierarchy(graph: &ProjectGraph) -> Vec<String> {
    graph
        .types
        .values()
        .map(|t| {
            let mut line = format!("{} {}", t.kind.name(), t.name);
            if !t.declared {
                line = format!("extended {}", t.name);
            }
            if let Some(s) = &t.superclass {
                line.push_str(&format!(" : {s}"));
            }
            if !t.conformances.is_empty() {
                line.push_str(&format!(" [{}]", t.conformances.join(", ")));
            }
            if !t.extensions.is_empty() {
                let ext: Vec<String> = t
                    .extensions
                    .iter()
                    .map(|e| e.category.clone().unwrap_or_else(|| "ext".to_string()))
                    .collect();
                line.push_str(&format!(" +{{{}}}", ext.join(", ")));
            }
            line
        })
        .collect()
}

/// Methods of one type as `+name` (static) / `-name`.
pub fn methods(graph: &ProjectGraph, type_name: &str) -> Vec<String> {
    graph.types[type_name]
        .methods
        .iter()
        .map(|m| format!("{}{}", if m.is_static { "+" } else { "-" }, m.name))
        .collect()
}

/// `Class.method` overrides of `class.method` as `Sub (relation)`.
pub fn overrides(graph: &ProjectGraph, class: &str, method: &str) -> Vec<String> {
    graph
        .overrides_of(class, method)
        .into_iter()
        .map(|o| format!("{} ({})", o.class_name, o.relation))
        .collect()
}

/// Resolved call edges as `caller -> callee (resolution confidence)`, sorted.
pub fn resolved_calls(graph: &ProjectGraph) -> Vec<String> {
    let mut out: Vec<String> = graph
        .calls
        .iter()
        .filter_map(|e| {
            let callee = e.callee.as_ref()?;
            let how = serde_json::to_value(e.resolution).unwrap();
            Some(format!(
                "{} -> {} ({} {})",
                e.caller,
                callee,
                how.as_str().unwrap(),
                e.confidence
            ))
        })
        .collect();
    out.sort();
    out
}

/// Module layers as `layer: modules`.
pub fn layers(graph: &ProjectGraph) -> Vec<String> {
    graph
        .modules
        .layers()
        .into_iter()
        .map(|(l, ms)| format!("{l}: {}", ms.join(", ")))
        .collect()
}

#[allow(dead_code)]
pub fn kinds(graph: &ProjectGraph, kind: TypeKind) -> Vec<&str> {
    graph.type_names_of_kind(kind)
}
