//! Call queries answered from the index's call rows (`CodeService::focused_call_edges`
//! and the call and entity tools on a fresh service, which read only the summaries the
//! rows point to) equal the full graph's answers, for every callable, before and after
//! edits.

use std::collections::BTreeSet;
use std::path::Path;

use alembic_code::{CodeService, ProjectGraph};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::focus::assert_tools_agree;
use super::incremental::{edit, mixed_project, write};

/// Every key the full graph knows as a callable, caller or callee, and a few it does not.
fn every_key(full: &ProjectGraph) -> BTreeSet<String> {
    let mut keys: BTreeSet<String> = full
        .types
        .values()
        .flat_map(|t| t.methods.iter().map(|m| format!("{}.{}", t.name, m.name)))
        .collect();
    keys.extend(full.functions.values().flatten().map(|f| f.key.clone()));
    for e in full.calls.iter() {
        keys.insert(e.caller.clone());
        keys.extend(e.callee.clone());
    }
    keys.extend(["Nope.nothing".to_string(), "nothing".to_string()]);
    keys
}

/// For every key, the focused callers and callees equal the full graph's (same edges,
/// lines, counts, confidences and resolutions, same order). Returns (keys, edges seen,
/// largest number of summaries one key read).
fn assert_focused_edges_match(root: &Path) -> (usize, usize, usize) {
    let full = CodeService::new(root).unwrap().graph().unwrap();
    let service = CodeService::new(root).unwrap();
    let keys = every_key(&full);
    let mut edges = 0;
    let mut most = 0;
    for key in &keys {
        let (callers, callees, loaded) = service.focused_call_edges(key).unwrap();
        let want_callers: Vec<_> = full.callers(key).into_iter().cloned().collect();
        let want_callees: Vec<_> = full.callees(key).into_iter().cloned().collect();
        assert_eq!(callers, want_callers, "callers of {key}");
        assert_eq!(callees, want_callees, "callees of {key}");
        edges += callers.len() + callees.len();
        most = most.max(loaded);
    }
    (keys.len(), edges, most)
}

#[test]
fn focused_call_edges_equal_the_full_graph_for_every_key_after_edits() {
    let dir = mixed_project();
    let root = dir.path();
    let (keys, edges, most) = assert_focused_edges_match(root);
    assert!(keys > 80, "{keys}");
    assert!(edges > 150, "{edges}");
    let files = CodeService::new(root).unwrap().refresh().unwrap().files;
    assert!(most < files, "{most} of {files}");

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
        "from zoo.animals import Animal, Dog\n\nclass Kennel(Animal):\n    def speak(self):\n        return Dog().speak()\n\n    def fill(self):\n        self.speak()\n        helper()\n\ndef helper():\n    return Kennel()\n",
        2,
    );
    write(
        root,
        "go/extra/extra.go",
        "package extra\n\ntype Tile struct{}\n\nfunc (t Tile) Area() float64 { return 1 }\n\nfunc Use() float64 { t := Tile{}; return t.Area() }\n",
        3,
    );
    std::fs::remove_file(root.join("swift/Sources/Shapes/Circle+Extras.swift")).unwrap();
    assert_focused_edges_match(root);
}

#[test]
fn focused_call_edges_equal_the_full_graph_with_import_aliases() {
    let dir = super::fixtures::project("aliases");
    let (keys, _, _) = assert_focused_edges_match(dir.path());
    assert!(keys > 10, "{keys}");
}

/// A Python and TypeScript tree made for name-only resolution: method and function names
/// shared by more and by fewer than `MAX_CANDIDATES` (5) callables, inherited
/// constructors, same-named types in several files, `super` and implicit `self` calls.
fn crowded_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for i in 0..7 {
        // Seven `run` methods and seven `helper` functions: too many to pick by name.
        write(
            root,
            &format!("py/w{i}.py"),
            &format!(
                "class Worker{i}:\n    def run(self):\n        return helper()\n\n    def rare{}(self):\n        return self.run()\n\ndef helper():\n    return thing.run()\n",
                i % 3
            ),
            0,
        );
    }
    write(
        root,
        "py/base.py",
        "class Base:\n    def __init__(self):\n        self.start()\n\n    def start(self):\n        return rare1()\n\nclass Mid(Base):\n    def start(self):\n        super().start()\n        return other.rare0()\n\nclass Leaf(Mid):\n    pass\n\ndef rare1():\n    return Leaf()\n\ndef make():\n    m = Mid()\n    m.start()\n    x.rare2()\n    return helper()\n",
        0,
    );
    write(
        root,
        "py/other/base.py",
        "class Base:\n    def start(self):\n        return make()\n\ndef make():\n    return Base().start()\n",
        0,
    );
    write(
        root,
        "ts/shapes.ts",
        "export class Shape {\n  constructor() { this.draw(); }\n  draw() { return paint(); }\n}\nexport class Square extends Shape {\n  draw() { return super.draw(); }\n}\nfunction paint() { return new Square(); }\nconst s = new Square();\ns.draw();\n",
        0,
    );
    // Implicit self into an inherited method whose name is too common to pick by name,
    // and `this` outside any class (no receiver type: name-only resolution).
    let jobs: String = (1..=6)
        .map(|i| format!("class J{i} {{ void start() {{}} }}\n"))
        .collect();
    write(
        root,
        "java/Jobs.java",
        &format!(
            "class Job {{ void start() {{}} }}\nclass Night extends Job {{ void go() {{ start(); }} }}\n{jobs}"
        ),
        0,
    );
    write(
        root,
        "js/loose.js",
        "function loose() { return this.rare0(); }\nfunction useIt() { return rare2(); }\nclass Pad { rare0() { return 1; } }\n",
        0,
    );
    dir
}

#[test]
fn focused_call_edges_equal_the_full_graph_with_crowded_and_shared_names() {
    let dir = crowded_project();
    let root = dir.path();
    let (keys, edges, _) = assert_focused_edges_match(root);
    assert!(keys > 30, "{keys}");
    assert!(edges > 30, "{edges}");
    edit(root, "py/w6.py", "class Worker6", "class Worker5", 1);
    std::fs::remove_file(root.join("py/w0.py")).unwrap();
    std::fs::remove_file(root.join("py/w1.py")).unwrap();
    // Now five `run` methods: name-only resolution picks among them.
    assert_focused_edges_match(root);
}

/// `query_call_graph` for every method key, bare method and function name, in every
/// direction at depths 1 to 3, and `query_code_graph`'s search, impact and entity edges for
/// every type, method and module, answer the same from the rows as from the full graph.
fn assert_call_tools_agree(root: &Path) -> usize {
    let full = CodeService::new(root).unwrap().graph().unwrap();
    let mut names: BTreeSet<String> = BTreeSet::new();
    for t in full.types.values() {
        names.extend(t.methods.iter().map(|m| format!("{}.{}", t.name, m.name)));
        names.extend(
            t.methods
                .iter()
                .map(|m| format!("{}.{}", t.simple_name, m.name)),
        );
        names.extend(t.methods.iter().map(|m| m.name.clone()));
    }
    names.extend(full.functions.keys().cloned());
    names.extend([
        "Nope.area".to_string(),
        "aera".to_string(),
        "speek".to_string(),
    ]);
    let mut calls: Vec<(&str, serde_json::Value)> = Vec::new();
    for name in &names {
        for depth in 1..=3 {
            // `both` is the callers walk followed by the callees walk.
            calls.push((
                "query_call_graph",
                json!({"methodName": name, "direction": "both", "maxDepth": depth}),
            ));
        }
        for direction in ["impact", "search"] {
            calls.push((
                "query_call_graph",
                json!({"methodName": name, "direction": direction}),
            ));
        }
        calls.push((
            "query_code_graph",
            json!({"action": "entity_edges", "entity_id": name}),
        ));
    }
    let mut entities: BTreeSet<String> = full
        .types
        .values()
        .flat_map(|t| [t.name.clone(), t.simple_name.clone()])
        .collect();
    entities.extend(["Nope".to_string(), "Circl".to_string(), "an".to_string()]);
    for id in &entities {
        for depth in [1, 3] {
            calls.push((
                "query_code_graph",
                json!({"action": "impact", "entity_id": id, "max_depth": depth}),
            ));
        }
        for action in ["search", "entity_edges"] {
            calls.push((
                "query_code_graph",
                json!({"action": action, "entity_id": id}),
            ));
        }
        for kind in ["protocol", "method"] {
            calls.push((
                "query_code_graph",
                json!({"action": "search", "entity_id": id, "entity_type": kind}),
            ));
        }
    }
    // Module questions load the full graph: they come last.
    for m in full.modules.modules.keys() {
        for action in ["impact", "entity_edges"] {
            calls.push((
                "query_code_graph",
                json!({"action": action, "entity_id": m}),
            ));
        }
    }
    assert!(calls.len() > 300, "{}", calls.len());
    assert_tools_agree(root, &calls)
}

#[test]
fn call_and_entity_tools_answer_the_same_from_rows_and_full_graph_after_edits() {
    let dir = mixed_project();
    let root = dir.path();
    let errors = assert_call_tools_agree(root);
    assert!(errors > 20, "{errors}");
    edit(
        root,
        "python/zoo/animals.py",
        "class Puppy(Dog):",
        "class Puppy(Animal):",
        1,
    );
    std::fs::remove_file(root.join("swift/Sources/Shapes/Circle+Extras.swift")).unwrap();
    assert_call_tools_agree(root);
}

#[test]
fn call_tools_answer_the_same_with_crowded_and_shared_names() {
    let dir = crowded_project();
    assert_call_tools_agree(dir.path());
}

/// Call rows (callables, call sites) of all files, or of one file, from the project
/// database.
fn call_rows(root: &Path, path: Option<&str>) -> (i64, i64) {
    let conn = alembic_store::open_project(root).unwrap();
    let count = |table: &str| -> i64 {
        conn.query_row(
            &format!("select count(*) from {table} where ?1 is null or path = ?1"),
            [path],
            |r| r.get(0),
        )
        .unwrap()
    };
    (count("code_callables"), count("code_call_sites"))
}

/// A forced rebuild replaces every call row (a second copy would double the counts that
/// decide name-only resolution); a deleted file takes its rows along, also when an older
/// summary format makes the index start over.
#[test]
fn call_rows_are_replaced_by_a_forced_rebuild_and_go_with_their_file() {
    let dir = crowded_project();
    let root = dir.path();
    let service = CodeService::new(root).unwrap();
    service.refresh().unwrap();
    let before = call_rows(root, None);
    assert!(before.0 > 20 && before.1 > 20, "{before:?}");
    service.rebuild(true, &|_| {}).unwrap();
    assert_eq!(call_rows(root, None), before);
    let shapes = call_rows(root, Some("ts/shapes.ts"));
    assert!(shapes.0 > 2 && shapes.1 > 2, "{shapes:?}");
    std::fs::remove_file(root.join("ts/shapes.ts")).unwrap();
    service.refresh().unwrap();
    assert_eq!(call_rows(root, Some("ts/shapes.ts")), (0, 0));
    assert_focused_edges_match(root);

    // An index of an older summary format starts over: rows of files gone meanwhile go too.
    let loose = call_rows(root, Some("js/loose.js"));
    assert!(loose.0 > 0 && loose.1 > 0, "{loose:?}");
    alembic_store::open_project(root)
        .unwrap()
        .execute(
            "update code_index_meta set value = 'old' where key = 'summary_version'",
            [],
        )
        .unwrap();
    std::fs::remove_file(root.join("js/loose.js")).unwrap();
    CodeService::new(root).unwrap().refresh().unwrap();
    assert_eq!(call_rows(root, Some("js/loose.js")), (0, 0));
    assert_focused_edges_match(root);
}

/// A call or entity question reads the index through one refresh: an unwatched service
/// walks the tree once per question.
#[test]
fn a_call_or_entity_question_walks_the_tree_once() {
    let dir = crowded_project();
    let service = std::sync::Arc::new(CodeService::new(dir.path()).unwrap());
    let questions = [
        (
            "query_code_graph",
            json!({"action": "impact", "entity_id": "Mid"}),
        ),
        (
            "query_code_graph",
            json!({"action": "entity_edges", "entity_id": "Mid"}),
        ),
        (
            "query_code_graph",
            json!({"action": "entity_edges", "entity_id": "Mid.start"}),
        ),
        (
            "query_code_graph",
            json!({"action": "search", "entity_id": "rare"}),
        ),
        (
            "query_call_graph",
            json!({"methodName": "start", "direction": "impact"}),
        ),
    ];
    for (n, (tool, args)) in questions.iter().enumerate() {
        super::direct::run_tool(&service, tool, args).unwrap();
        assert_eq!(service.tree_walks(), n as u64 + 1, "{tool} {args}");
    }
}
