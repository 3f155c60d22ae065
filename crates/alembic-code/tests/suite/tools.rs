//! The tools' rendered outputs (insta snapshots) and their behaviour through the real
//! registry and pipeline.

use std::sync::Arc;

use alembic_code::{CodeService, register_tools};
use alembic_tools::{Allowlist, Caller, Pipeline, ToolCall, ToolError, ToolRegistry};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::direct::run_tool;
use super::fixtures::project;

fn service(name: &str) -> (tempfile::TempDir, Arc<CodeService>) {
    let dir = project(name);
    let service = Arc::new(CodeService::new(dir.path()).unwrap());
    (dir, service)
}

fn text(service: &Arc<CodeService>, tool: &str, args: Value) -> String {
    match run_tool(service, tool, &args) {
        Ok(out) => out.text,
        Err(e) => format!("error: {e}"),
    }
}

/// Several calls rendered one after another, for one snapshot per fixture.
fn transcript(service: &Arc<CodeService>, calls: &[(&str, Value)]) -> String {
    calls
        .iter()
        .map(|(tool, args)| format!("### {tool} {args}\n{}\n", text(service, tool, args.clone())))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn swift_ast_graph_tools() {
    let (_dir, s) = service("swift");
    insta::assert_snapshot!(transcript(
        &s,
        &[
            ("get_project_overview", json!({})),
            ("get_class_hierarchy", json!({})),
            ("get_class_hierarchy", json!({"className": "Ring"})),
            ("get_class_info", json!({"className": "Circle"})),
            ("get_class_info", json!({"className": "Cirle"})),
            ("get_protocol_info", json!({"protocolName": "Shape"})),
            ("get_protocol_info", json!({"protocolName": "Circle"})),
            (
                "get_method_overrides",
                json!({"className": "Base", "methodName": "area"})
            ),
            ("get_category_map", json!({})),
            ("get_category_map", json!({"className": "Circle"})),
        ]
    ));
}

#[test]
fn swift_graph_queries() {
    let (_dir, s) = service("swift");
    insta::assert_snapshot!(transcript(
        &s,
        &[
            (
                "query_code_graph",
                json!({"action": "search", "entity_id": "circ"})
            ),
            (
                "query_code_graph",
                json!({"action": "inheritance_chain", "entity_id": "Ring"})
            ),
            (
                "query_code_graph",
                json!({"action": "descendants", "entity_id": "Base"})
            ),
            (
                "query_code_graph",
                json!({"action": "conformances", "entity_id": "Ring"})
            ),
            (
                "query_code_graph",
                json!({"action": "conformances", "entity_id": "Shape"})
            ),
            (
                "query_code_graph",
                json!({"action": "impact", "entity_id": "Base"})
            ),
            ("query_code_graph", json!({"action": "topology"})),
            (
                "query_code_graph",
                json!({"action": "entity_edges", "entity_id": "Circle"})
            ),
            (
                "query_code_graph",
                json!({"action": "entity_edges", "entity_id": "Sources/Shapes"})
            ),
            (
                "query_call_graph",
                json!({"methodName": "Base.area", "direction": "callers"})
            ),
            (
                "query_call_graph",
                json!({"methodName": "run", "direction": "callees", "maxDepth": 1})
            ),
            ("query_call_graph", json!({"methodName": "describe"})),
            (
                "query_call_graph",
                json!({"methodName": "Base.area", "direction": "impact"})
            ),
            (
                "query_call_graph",
                json!({"methodName": "scale", "direction": "search"})
            ),
            ("query_call_graph", json!({"methodName": "nothing"})),
        ]
    ));
}

#[test]
fn objc_rust_go_protocols_and_categories() {
    let (_o, objc) = service("objc");
    let (_r, rust) = service("rust");
    let (_g, go) = service("go");
    let mut out = transcript(
        &objc,
        &[
            ("get_class_info", json!({"className": "Circle"})),
            ("get_protocol_info", json!({"protocolName": "Drawable"})),
            ("get_category_map", json!({"className": "Circle"})),
            (
                "query_call_graph",
                json!({"methodName": "Shape.draw", "direction": "both"}),
            ),
        ],
    );
    out.push_str(&transcript(
        &rust,
        &[
            ("get_category_map", json!({"className": "Circle"})),
            ("get_protocol_info", json!({"protocolName": "Shape"})),
            (
                "get_method_overrides",
                json!({"className": "Shape", "methodName": "area"}),
            ),
        ],
    ));
    out.push_str(&transcript(
        &go,
        &[
            ("get_protocol_info", json!({"protocolName": "Shape"})),
            ("get_class_info", json!({"className": "Circle"})),
        ],
    ));
    insta::assert_snapshot!(out);
}

#[test]
fn file_summaries_of_every_language() {
    let files = [
        ("swift", "Sources/Shapes/Shape.swift"),
        ("objc", "Shapes/Shape.h"),
        ("rust", "src/shapes/mod.rs"),
        ("python", "zoo/animals.py"),
        ("typescript", "src/models/shape.ts"),
        ("typescript", "src/main.tsx"),
        ("javascript", "lib/animals.js"),
        ("go", "shapes/shapes.go"),
        ("java", "src/com/example/shapes/Base.java"),
        ("kotlin", "src/shapes/Shapes.kt"),
        ("c", "src/list.h"),
        ("cpp", "src/shapes.hpp"),
    ];
    let mut out = String::new();
    for (fixture, path) in files {
        let (_dir, s) = service(fixture);
        out.push_str(&format!(
            "### {fixture}/{path}\n{}\n\n",
            text(&s, "get_file_summary", json!({"filePath": path}))
        ));
    }
    insta::assert_snapshot!(out);
}

#[test]
fn project_access_tools() {
    let (_dir, s) = service("swift");
    insta::assert_snapshot!(transcript(
        &s,
        &[
            (
                "search_project_code",
                json!({"pattern": "area", "contextLines": 1, "maxResults": 3})
            ),
            (
                "search_project_code",
                json!({"patterns": ["Circle(", "describe"], "maxResults": 2, "contextLines": 0})
            ),
            (
                "search_project_code",
                json!({"pattern": "func \\w+\\(\\)", "isRegex": true, "fileFilter": ".swift", "maxResults": 4, "contextLines": 0})
            ),
            (
                "search_project_code",
                json!({"pattern": "area", "fileFilter": "kt", "contextLines": 0})
            ),
            (
                "search_project_code",
                json!({"pattern": "(unclosed", "isRegex": true})
            ),
            (
                "read_project_file",
                json!({"filePath": "Sources/Shapes/Shape.swift", "startLine": 27, "endLine": 40, "maxLines": 5})
            ),
            (
                "read_project_file",
                json!({"filePaths": ["Sources/App/main.swift", "missing.swift"]})
            ),
            ("read_project_file", json!({"filePath": "../../etc/passwd"})),
            ("read_project_file", json!({"filePath": "/etc/passwd"})),
            (
                "read_project_file",
                json!({"filePath": "Sources/App/main.swift", "startLine": 500})
            ),
            ("list_project_structure", json!({})),
            (
                "list_project_structure",
                json!({"directory": "Sources", "depth": 1, "includeStats": false})
            ),
            (
                "semantic_search_code",
                json!({"query": "scaled circle radius"})
            ),
            (
                "semantic_search_code",
                json!({"query": "describe", "language": "kotlin"})
            ),
        ]
    ));
}

#[test]
fn search_ranks_all_matches_before_cutting() {
    let dir = tempfile::tempdir().unwrap();
    // Declarations come first in walk order; the one call is last.
    std::fs::write(
        dir.path().join("a.rs"),
        "fn widget() {}\nfn widget_b() {}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("b.rs"), "struct Widget;\n").unwrap();
    std::fs::write(dir.path().join("z.rs"), "fn main() { widget(); }\n").unwrap();
    std::fs::write(dir.path().join("blob.bin"), b"widget\0\x01\x02").unwrap();
    let s = Arc::new(CodeService::new(dir.path()).unwrap());
    let out = run_tool(
        &s,
        "search_project_code",
        &json!({"pattern": "widget", "maxResults": 1, "contextLines": 0}),
    )
    .unwrap();
    assert_eq!(out.data["total"], json!(4));
    assert_eq!(out.data["matches"][0]["file"], json!("z.rs"));
    assert_eq!(out.data["matches"][0]["score"], json!(2));
    assert_eq!(out.data["searchedFiles"], json!(4));
}

#[test]
fn symlinks_out_of_the_project_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "token").unwrap();
    let (dir, s) = service("c");
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("link.txt"),
    )
    .unwrap();
    let err = run_tool(&s, "read_project_file", &json!({"filePath": "link.txt"})).unwrap_err();
    assert!(matches!(err, ToolError::Refused { .. }), "{err:?}");
}

#[test]
fn graph_follows_edits_between_calls() {
    let (dir, s) = service("python");
    let before = run_tool(&s, "get_class_hierarchy", &json!({"className": "Puppy"})).unwrap();
    assert_eq!(before.data["chain"], json!(["Puppy", "Dog", "Animal"]));
    let path = dir.path().join("zoo/animals.py");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("class Puppy(Dog):", "class Puppy(Animal):");
    std::fs::write(&path, text).unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(10))
        .unwrap();
    let after = run_tool(&s, "get_class_hierarchy", &json!({"className": "Puppy"})).unwrap();
    assert_eq!(after.data["chain"], json!(["Puppy", "Animal"]));
}

#[test]
fn tools_run_through_the_registry_and_pipeline_with_aliases() {
    let dir = project("java");
    let registry = Arc::new(ToolRegistry::new());
    let service = Arc::new(CodeService::new(dir.path()).unwrap());
    register_tools(&registry, service).unwrap();
    let mut names = registry.names();
    names.sort();
    let mut expected: Vec<String> = alembic_code::TOOL_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    expected.sort();
    assert_eq!(names, expected);
    let pipeline = Pipeline::builder(registry, dir.path()).build();
    let caller = Caller::new("test", Allowlist::only(alembic_code::TOOL_NAMES));
    let rt = tokio::runtime::Runtime::new().unwrap();
    // `class_name` is normalised to `className`, "2" coerced to an integer.
    let call = ToolCall::new(
        "get_class_info",
        json!({"class_name": "Circle"}),
        caller.clone(),
    );
    let outcome = rt.block_on(pipeline.execute(call));
    assert!(outcome.is_ok(), "{}", outcome.text_for_model());
    assert!(
        outcome
            .text_for_model()
            .starts_with("class Circle — src/com/example/shapes/Circle.java:3"),
        "{}",
        outcome.text_for_model()
    );
    let call = ToolCall::new(
        "query_call_graph",
        json!({"methodName": "Base.make", "direction": "callers", "maxDepth": "2"}),
        caller.clone(),
    );
    let outcome = rt.block_on(pipeline.execute(call));
    assert!(outcome.is_ok(), "{}", outcome.text_for_model());
    // Missing required argument: refused by schema validation before the handler.
    let outcome =
        rt.block_on(pipeline.execute(ToolCall::new("get_protocol_info", json!({}), caller)));
    assert!(!outcome.is_ok());
}

#[test]
fn a_direct_call_parses_arguments_like_the_pipeline_and_names_the_bad_one() {
    let (_dir, s) = service("swift");
    let err = run_tool(
        &s,
        "query_call_graph",
        &json!({"methodName": "Base.area", "direction": "sideways"}),
    )
    .unwrap_err();
    let message = err.to_string();
    assert!(
        message
            .starts_with("invalid arguments: argument \"direction\": unknown variant `sideways`"),
        "{message}"
    );
    assert!(message.contains("`callers`"), "{message}");
    // Blank strings still count as missing.
    let err = run_tool(&s, "get_class_info", &json!({"className": "  "})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid arguments: argument \"className\": expected a non-empty string"
    );
}

#[test]
fn search_counts_every_match_but_keeps_only_what_ranking_can_show() {
    let dir = tempfile::tempdir().unwrap();
    // Per file: declarations (-1), plain mentions (0) and calls (+2), many of each.
    for name in ["a.rs", "b.rs", "c.rs"] {
        let mut text = String::new();
        for i in 0..30 {
            text.push_str(&format!("fn gadget_{i}() {{}}\n// gadget note {i}\n"));
        }
        text.push_str("fn main() { gadget(); gadget(); }\n");
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let s = Arc::new(CodeService::new(dir.path()).unwrap());
    let out = run_tool(
        &s,
        "search_project_code",
        &json!({"pattern": "gadget", "maxResults": 5, "contextLines": 0}),
    )
    .unwrap();
    assert_eq!(out.data["total"], json!(3 * 61));
    let files: Vec<(&str, i64)> = out.data["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["file"].as_str().unwrap(), f["matches"].as_i64().unwrap()))
        .collect();
    assert_eq!(files, vec![("a.rs", 61), ("b.rs", 61), ("c.rs", 61)]);
    // The three calls first (path order), then the first mentions, in path and line order.
    let kept: Vec<(String, i64, i64)> = out.data["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["file"].as_str().unwrap().to_string(),
                m["line"].as_i64().unwrap(),
                m["score"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kept,
        vec![
            ("a.rs".to_string(), 61, 2),
            ("b.rs".to_string(), 61, 2),
            ("c.rs".to_string(), 61, 2),
            ("a.rs".to_string(), 2, 0),
            ("a.rs".to_string(), 4, 0),
        ]
    );
}
