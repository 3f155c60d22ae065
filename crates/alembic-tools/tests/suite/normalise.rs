//! Table tests for argument normalisation, validation and coercion.

use std::sync::Arc;

use alembic_tools::*;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::*;

async fn run(args: Value) -> ToolOutcome {
    let registry = Arc::new(ToolRegistry::new());
    registry
        .register(echo_tool(&Journal::default(), EffectClass::ReadOnly))
        .unwrap();
    let pipeline = Pipeline::builder(registry, ".").build();
    pipeline
        .execute(ToolCall::new("echo_args", args, trusted_caller("test")))
        .await
}

fn check(input: Value, expected: Value) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcome = rt.block_on(run(input.clone()));
    match expected.get("error").and_then(Value::as_str) {
        Some(err) => {
            assert_eq!(
                outcome.status,
                OutcomeStatus::InvalidArguments,
                "input {input}"
            );
            assert_eq!(outcome.error.as_deref(), Some(err), "input {input}");
        }
        None => {
            assert_eq!(
                outcome.status,
                OutcomeStatus::Ok,
                "input {input}: {:?}",
                outcome.error
            );
            assert_eq!(
                outcome.output.unwrap().data,
                expected["args"],
                "input {input}"
            );
            if let Some(r) = expected.get("renames") {
                let got: Vec<Value> = outcome
                    .metadata
                    .renames
                    .iter()
                    .map(|r| json!([r.from, r.to]))
                    .collect();
                assert_eq!(Value::Array(got), *r, "renames for {input}");
            }
            if let Some(c) = expected.get("coercions") {
                let got: Vec<Value> = outcome
                    .metadata
                    .coercions
                    .iter()
                    .map(|c| json!([c.path, c.from, c.to]))
                    .collect();
                assert_eq!(Value::Array(got), *c, "coercions for {input}");
            }
        }
    }
}

#[test]
fn normalisation_table() {
    let cases = [
        // exact names stay
        (
            json!({"filePath": "a.rs"}),
            json!({"args": {"filePath": "a.rs"}, "renames": []}),
        ),
        // snake_case -> camelCase
        (
            json!({"max_results": 5}),
            json!({"args": {"maxResults": 5}, "renames": [["max_results", "maxResults"]]}),
        ),
        (
            json!({"file_path": "a.rs"}),
            json!({"args": {"filePath": "a.rs"}, "renames": [["file_path", "filePath"]]}),
        ),
        // alias table
        (
            json!({"file": "a.rs"}),
            json!({"args": {"filePath": "a.rs"}, "renames": [["file", "filePath"]]}),
        ),
        (
            json!({"path": "a.rs"}),
            json!({"args": {"filePath": "a.rs"}, "renames": [["path", "filePath"]]}),
        ),
        (
            json!({"filename": "a.rs"}),
            json!({"args": {"filePath": "a.rs"}, "renames": [["filename", "filePath"]]}),
        ),
        (
            json!({"query": "foo"}),
            json!({"args": {"pattern": "foo"}, "renames": [["query", "pattern"]]}),
        ),
        (
            json!({"search_text": "foo"}),
            json!({"args": {"pattern": "foo"}, "renames": [["search_text", "pattern"]]}),
        ),
        // exact name wins over an alias carrying the same value
        (
            json!({"pattern": "x", "query": "x"}),
            json!({"args": {"pattern": "x"}, "renames": []}),
        ),
        // unknown keys pass through
        (
            json!({"color": "red"}),
            json!({"args": {"color": "red"}, "renames": []}),
        ),
        // null means no arguments; a double-encoded object is accepted
        (Value::Null, json!({"args": {}})),
        (
            json!("{\"pattern\": \"a\"}"),
            json!({"args": {"pattern": "a"}}),
        ),
        // safe coercions
        (
            json!({"maxResults": "20"}),
            json!({"args": {"maxResults": 20}, "coercions": [["maxResults", "string", "integer"]]}),
        ),
        (
            json!({"isRegex": "true"}),
            json!({"args": {"isRegex": true}, "coercions": [["isRegex", "string", "boolean"]]}),
        ),
        (
            json!({"filePaths": "a.rs"}),
            json!({"args": {"filePaths": ["a.rs"]}, "coercions": [["filePaths", "string", "array"]]}),
        ),
        (
            json!({"maxResults": 5.0}),
            json!({"args": {"maxResults": 5}}),
        ),
        // refusals name the path, the expectation and what came
        (
            json!({"maxResults": "many"}),
            json!({"error": "argument \"maxResults\": expected integer 1..=200, got \"many\""}),
        ),
        (
            json!({"maxResults": 500}),
            json!({"error": "argument \"maxResults\": expected integer 1..=200, got 500"}),
        ),
        (
            json!({"mode": "slow"}),
            json!({"error": "argument \"mode\": expected one of \"fast\", \"full\", got \"slow\""}),
        ),
        (
            json!({"isRegex": "yes"}),
            json!({"error": "argument \"isRegex\": expected boolean, got \"yes\""}),
        ),
        (
            json!({"filePaths": [1]}),
            json!({"error": "argument \"filePaths[0]\": expected string, got 1"}),
        ),
        (
            json!([1, 2]),
            json!({"error": "argument \"\": expected a JSON object of named arguments, got [1,2]"}),
        ),
        (
            json!({"file": "a", "path": "b"}),
            json!({"error": "argument \"path\": expected only one of the names for \"filePath\", got both \"path\" and \"filePath\" with different values"}),
        ),
    ];
    for (input, expected) in cases {
        check(input, expected);
    }
}

#[test]
fn required_arguments_are_reported_by_name() {
    let registry = Arc::new(ToolRegistry::new());
    meta::register_tools(&registry).unwrap();
    let pipeline = Pipeline::builder(registry, ".").build();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let o = rt.block_on(pipeline.execute(ToolCall::new(
        "get_tool_details",
        json!({}),
        trusted_caller("t"),
    )));
    assert_eq!(o.status, OutcomeStatus::InvalidArguments);
    assert_eq!(
        o.error.as_deref(),
        Some(
            "argument \"toolName\": expected string of at least 1 characters, got nothing (it is required)"
        )
    );
}

#[test]
fn the_alias_table_has_the_reference_entries() {
    assert_eq!(PARAM_ALIASES.len(), 22);
    let to_file = PARAM_ALIASES
        .iter()
        .filter(|(_, t)| *t == "filePath")
        .count();
    let to_pattern = PARAM_ALIASES
        .iter()
        .filter(|(_, t)| *t == "pattern")
        .count();
    assert_eq!((to_file, to_pattern), (6, 6));
}

#[test]
fn snake_to_camel_conversion() {
    assert_eq!(args::snake_to_camel("max_results"), "maxResults");
    assert_eq!(args::snake_to_camel("a_b_c"), "aBC");
    assert_eq!(args::snake_to_camel("x_1"), "x_1");
    assert_eq!(args::snake_to_camel("already"), "already");
}
