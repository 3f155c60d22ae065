//! Queries about a type whose descendants and conformers are declared in more files than
//! one query reads (`[index] max_query_files`): impact answers from counts, the type
//! queries refuse with the names to ask about instead, and a search loads the names it
//! lists first. Under the limit, every answer is the exact one.

use std::sync::Arc;

use alembic_code::CodeService;
use alembic_tools::ToolError;
use serde_json::{Value, json};

use super::direct::run_tool;

const IMPLEMENTORS: usize = 12;

/// A trait `Duplicate` implemented in twelve files, one file calling `duplicate`, and a
/// `Debug`-like parent `Shown` that no file declares but every type implements.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "pub trait Duplicate {\n    fn duplicate(&self) -> Self;\n}\n",
    )
    .unwrap();
    for i in 0..IMPLEMENTORS {
        std::fs::write(
            src.join(format!("t{i:02}.rs")),
            format!(
                "use crate::Duplicate;\npub struct Copy{i:02};\n\
                 impl Duplicate for Copy{i:02} {{\n    fn duplicate(&self) -> Self {{ Copy{i:02} }}\n}}\n\
                 impl Shown for Copy{i:02} {{}}\n"
            ),
        )
        .unwrap();
    }
    std::fs::write(
        src.join("callers.rs"),
        "pub fn twice(a: &Copy00) {\n    a.duplicate();\n}\n\
         pub fn thrice(b: &Copy01) {\n    b.duplicate();\n}\n",
    )
    .unwrap();
    dir
}

fn service(dir: &tempfile::TempDir, limit: Option<usize>) -> Arc<CodeService> {
    let s = CodeService::new(dir.path()).unwrap();
    Arc::new(match limit {
        Some(n) => s.with_max_query_files(n),
        None => s,
    })
}

fn impact(s: &Arc<CodeService>, id: &str) -> Value {
    run_tool(
        s,
        "query_code_graph",
        &json!({"action": "impact", "entity_id": id}),
    )
    .unwrap()
    .data
}

#[test]
fn impact_of_a_type_too_wide_to_load_answers_from_counts() {
    let dir = project();
    let wide = impact(&service(&dir, Some(5)), "Duplicate");
    assert_eq!(wide["bounded"], json!(true), "{wide}");
    assert_eq!(wide["limit"], json!(5));
    assert_eq!(wide["typeCount"], json!(IMPLEMENTORS));
    let first: Vec<String> = (0..10).map(|i| format!("Copy{i:02}")).collect();
    assert_eq!(wide["types"], json!(first));
    assert_eq!(
        wide["filesCallingMethodNames"],
        json!([{"method": "duplicate", "files": 1}])
    );

    // Under the limit the same question gets the exact answer: every conformer and its
    // file (the calls resolve to the implementations, not to the trait's method).
    let exact = impact(&service(&dir, None), "Duplicate");
    assert_eq!(exact.get("bounded"), None, "{exact}");
    assert_eq!(exact["types"].as_array().unwrap().len(), IMPLEMENTORS);
    assert_eq!(exact["files"].as_array().unwrap().len(), IMPLEMENTORS);
    assert_eq!(exact["callers"], json!([]));
}

#[test]
fn type_queries_too_wide_to_load_name_the_limit_and_what_to_ask() {
    let dir = project();
    let s = service(&dir, Some(5));
    for (tool, args) in [
        ("get_protocol_info", json!({"protocolName": "Duplicate"})),
        (
            "query_code_graph",
            json!({"action": "conformances", "entity_id": "Duplicate"}),
        ),
    ] {
        match run_tool(&s, tool, &args) {
            Err(ToolError::Invalid(msg)) => {
                assert!(
                    msg.contains("Duplicate and its 12 descendants and conformers")
                        && msg.contains("more than 5 files")
                        && msg.contains("max_query_files = 5")
                        && msg.contains("ask about one of them (Copy00, Copy01,"),
                    "{tool}: {msg}"
                );
            }
            other => panic!("{tool}: expected a refusal, got {other:?}"),
        }
    }
    // One implementor's questions stay exact: its closure is its own file.
    let one = run_tool(
        &s,
        "query_code_graph",
        &json!({"action": "conformances", "entity_id": "Copy03"}),
    )
    .unwrap();
    assert_eq!(one.data["protocols"], json!(["Duplicate", "Shown"]));
    // A parent nobody declares reads nothing, however many types name it.
    let shown = run_tool(&s, "get_protocol_info", &json!({"protocolName": "Shown"}));
    assert!(
        matches!(&shown, Err(ToolError::Failed(m) | ToolError::NotFound(m)) if !m.contains("max_query_files")),
        "{shown:?}"
    );
}

#[test]
fn a_search_too_wide_to_load_lists_what_it_read_first_and_says_so() {
    let dir = project();
    let args = json!({"action": "search", "entity_id": "copy"});
    let exact = run_tool(&service(&dir, None), "query_code_graph", &args).unwrap();
    assert_eq!(exact.data["total"], json!(IMPLEMENTORS));
    assert_eq!(exact.data.get("namesLeftOut"), None);

    let bounded = run_tool(&service(&dir, Some(4)), "query_code_graph", &args).unwrap();
    assert_eq!(bounded.data["total"], json!(4), "{}", bounded.text);
    assert_eq!(bounded.data["namesLeftOut"], json!(IMPLEMENTORS - 4));
    assert!(
        bounded
            .text
            .starts_with("at least 4 entities match \"copy\" (8 more"),
        "{}",
        bounded.text
    );
    let names: Vec<&str> = bounded.data["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Copy00", "Copy01", "Copy02", "Copy03"]);
}
