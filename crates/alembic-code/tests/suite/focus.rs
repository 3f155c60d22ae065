//! A graph focused on one type name (`CodeService::graph_around`, built from the few
//! summaries the index's declaration rows point to) answers every question about that
//! name exactly as the full graph does, before and after edits.

use std::collections::BTreeSet;
use std::path::Path;

use alembic_code::{CodeIndex, CodeService, ProjectGraph, Reach, TypeInfo};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::direct::run_tool;

use super::incremental::{edit, mixed_project, write};

/// What the type tools read about the types named `name`, as far as `reach`.
#[derive(Debug, PartialEq)]
struct Answers {
    types: Vec<TypeInfo>,
    chains: Vec<Vec<String>>,
    ancestry: Vec<Vec<String>>,
    lookups: Vec<Option<(String, String, usize)>>,
    subclasses: Vec<Option<Vec<String>>>,
    descendants: Vec<Vec<(String, usize)>>,
    conformers: Vec<Vec<String>>,
    overrides: Vec<String>,
}

fn answers(g: &ProjectGraph, name: &str, reach: Reach) -> Answers {
    let depth = reach.depth;
    let types: Vec<TypeInfo> = g.types_named(name).into_iter().cloned().collect();
    let key_names: Vec<String> = types.iter().map(|t| t.name.clone()).collect();
    let keys: Vec<&str> = key_names.iter().map(String::as_str).collect();
    let methods: BTreeSet<String> = keys
        .iter()
        .flat_map(|k| g.ancestry(k, true))
        .filter_map(|a| g.types.get(&a))
        .flat_map(|t| t.methods.iter().map(|m| m.name.clone()))
        .chain(["missing".to_string()])
        .collect();
    let mut a = Answers {
        chains: keys.iter().map(|k| g.inheritance_chain(k)).collect(),
        ancestry: keys.iter().map(|k| g.ancestry(k, true)).collect(),
        lookups: keys
            .iter()
            .flat_map(|k| methods.iter().map(move |m| (*k, m)))
            .map(|(k, m)| {
                g.lookup_method(k, m)
                    .map(|(t, m)| (t.name.clone(), m.file.clone(), m.line))
            })
            .collect(),
        types,
        subclasses: Vec::new(),
        descendants: Vec::new(),
        conformers: Vec::new(),
        overrides: Vec::new(),
    };
    if depth != Some(0) {
        a.subclasses = keys.iter().map(|k| g.subclasses.get(*k).cloned()).collect();
    }
    if let Some(d) = depth.filter(|d| *d > 1) {
        a.descendants = keys.iter().map(|k| g.descendants(k, d)).collect();
    }
    if depth.is_none() {
        a.descendants = keys.iter().map(|k| g.descendants(k, usize::MAX)).collect();
    }
    if reach.conformers {
        a.conformers = keys.iter().map(|k| g.all_conformers(k)).collect();
        let all_methods: BTreeSet<&str> = g
            .types
            .values()
            .flat_map(|t| t.methods.iter().map(|m| m.name.as_str()))
            .collect();
        a.overrides = keys
            .iter()
            .flat_map(|k| all_methods.iter().map(move |m| (*k, *m)))
            .flat_map(|(k, m)| g.overrides_of(k, m))
            .map(|o| format!("{o:?}"))
            .collect();
    }
    a
}

fn full_graph(root: &Path) -> ProjectGraph {
    let mut index = CodeIndex::open(root).unwrap();
    index.refresh(&|_| {}).unwrap();
    index.graph().unwrap()
}

/// Every simple name and key of the full graph, asked for subclasses at depths 0, 1, 10 and
/// unlimited, and for subclasses and conformers.
pub(super) fn assert_focused_answers_match(root: &Path) -> usize {
    let full = full_graph(root);
    // A fresh service never loads the full graph, so every answer comes from a focus.
    let service = CodeService::new(root).unwrap();
    let keys: BTreeSet<String> = full.types.keys().cloned().collect();
    assert_eq!(service.type_keys().unwrap(), keys);
    let names: BTreeSet<String> = full
        .types
        .values()
        .map(|t| t.simple_name.clone())
        .chain(keys)
        .chain(["NoSuchType".to_string()])
        .collect();
    for name in &names {
        let depths = [Some(0), Some(1), Some(10), None];
        for reach in depths
            .map(Reach::subclasses)
            .into_iter()
            .chain([Reach::all()])
        {
            let focused = service.graph_around(name, reach).unwrap();
            assert!(focused.types.len() <= full.types.len());
            assert_eq!(
                answers(&focused, name, reach),
                answers(&full, name, reach),
                "{name} as far as {reach:?}"
            );
        }
    }
    names.len()
}

#[test]
fn focused_graphs_answer_like_the_full_graph_after_edits() {
    let dir = mixed_project();
    let root = dir.path();
    let n = assert_focused_answers_match(root);
    assert!(n > 40);

    edit(
        root,
        "python/zoo/animals.py",
        "class Puppy(Dog):",
        "class Puppy(Animal):",
        1,
    );
    write(
        root,
        "python/zoo/kennel.py",
        "from zoo.animals import Animal\n\nclass Dog(Animal):\n    def speak(self):\n        return 1\n",
        2,
    );
    // A Go struct, alone in its package, that satisfies an interface of another package
    // only by its method set.
    write(
        root,
        "go/extra/extra.go",
        "package extra\n\ntype Tile struct{}\n\nfunc (t Tile) Area() float64 { return 1 }\n",
        3,
    );
    std::fs::remove_file(root.join("swift/Sources/Shapes/Circle+Extras.swift")).unwrap();
    assert_focused_answers_match(root);
}

#[test]
fn a_focused_type_query_reads_only_the_files_it_needs() {
    let dir = mixed_project();
    let root = dir.path();
    let full = full_graph(root);
    let service = CodeService::new(root).unwrap();
    let focused = service.graph_around("Puppy", Reach::all()).unwrap();
    let files: BTreeSet<&str> = focused.types.values().map(|t| t.file.as_str()).collect();
    // Puppy and its ancestors (Dog and Animal in Python and JavaScript).
    assert_eq!(
        files,
        BTreeSet::from(["javascript/lib/animals.js", "python/zoo/animals.py"])
    );
    assert!(focused.types.len() * 4 < full.types.len());
}

/// A parent the project does not declare (a library trait many types implement) loads
/// nothing: there is no type of that name to answer about.
#[test]
fn a_query_about_an_undeclared_parent_reads_no_summary() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (file, ty) in [("a.rs", "A"), ("b.rs", "B")] {
        let code = format!(
            "pub struct {ty};\nimpl std::fmt::Display for {ty} {{\n    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {{ Ok(()) }}\n}}\n"
        );
        write(root, file, &code, 1);
    }
    let service = CodeService::new(root).unwrap();
    // Types of every file read would be in the graph.
    let around = service.graph_around("Display", Reach::all()).unwrap();
    assert_eq!(around.types.len(), 0);
    let declared = service.graph_around("A", Reach::all()).unwrap();
    assert_eq!(declared.types.keys().collect::<Vec<_>>(), ["A"]);
    let full = full_graph(root);
    assert!(full.types_named("Display").is_empty());
    assert_eq!(full.types.len(), 2);
}

/// The type tools answer the same, errors and suggestions included, whether the service
/// builds focused graphs (fresh) or already holds the full graph.
#[test]
fn type_tools_answer_the_same_from_focused_and_full_graphs() {
    let dir = mixed_project();
    let names = [
        "Puppy", "Dog", "Shape", "Circle", "Base", "Drawable", "Circl", "Nope",
    ];
    let errors = assert_type_tools_agree(dir.path(), &names);
    // Not-found suggestions, ambiguity and kind errors were compared too.
    assert!(errors > 10, "{errors}");
}

/// Parents written through import aliases and qualified names (`tests/fixtures/aliases`)
/// resolve the same in focused and full graphs, for every name and through the tools.
#[test]
fn aliased_parents_answer_the_same_from_focused_and_full_graphs() {
    let dir = super::fixtures::project("aliases");
    let root = dir.path();
    assert!(assert_focused_answers_match(root) > 30);
    let full = full_graph(root);
    let names: Vec<&str> = full
        .types
        .values()
        .flat_map(|t| [t.name.as_str(), t.simple_name.as_str()])
        .chain(["SansioBlueprint", "OtherBase", "ZetaBase"])
        .collect();
    let errors = assert_type_tools_agree(root, &names);
    assert!(errors > 10, "{errors}");
}

/// Runs every type tool for each name against a fresh service (focused graphs) and one
/// holding the full graph, asserts equal answers and returns how many were errors.
fn assert_type_tools_agree(root: &Path, names: &[&str]) -> usize {
    let mut calls: Vec<(&str, serde_json::Value)> = Vec::new();
    for name in names {
        calls.extend([
            ("get_class_hierarchy", json!({"className": name})),
            ("get_class_info", json!({"className": name})),
            ("get_protocol_info", json!({"protocolName": name})),
            (
                "get_method_overrides",
                json!({"className": name, "methodName": "area"}),
            ),
            ("get_category_map", json!({"className": name})),
        ]);
        for action in ["inheritance_chain", "descendants", "conformances"] {
            calls.push((
                "query_code_graph",
                json!({"action": action, "entity_id": name}),
            ));
        }
    }
    assert_tools_agree(root, &calls)
}

/// Runs each tool call against a fresh service (answers from the index's rows and focused
/// graphs) and one holding the full graph; asserts equal answers (text and data, errors
/// included) and returns how many were errors.
pub(super) fn assert_tools_agree(root: &Path, calls: &[(&str, serde_json::Value)]) -> usize {
    let focused = std::sync::Arc::new(CodeService::new(root).unwrap());
    let full = std::sync::Arc::new(CodeService::new(root).unwrap());
    full.graph().unwrap();
    // Nothing changes during the comparison: watched services skip the walk per call (a
    // tree that cannot be watched is walked per call, with the same answers).
    focused.watch();
    full.watch();
    let render = |service: &std::sync::Arc<CodeService>, name: &str, args: &serde_json::Value| {
        match run_tool(service, name, args) {
            Ok(out) => format!("{}\n{}", out.text, out.data),
            Err(e) => format!("error: {e}"),
        }
    };
    let mut errors = 0;
    for (name, args) in calls {
        let answer = render(&focused, name, args);
        errors += usize::from(answer.starts_with("error: "));
        assert_eq!(answer, render(&full, name, args), "{name} {args}");
    }
    errors
}
