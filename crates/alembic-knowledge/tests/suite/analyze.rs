//! `analyze_code`: guard check and related recipes in one call; a failed half is reported,
//! never swallowed (the reference turned every failure into "0 violations, 0 recipes").

use std::sync::Arc;

use alembic_knowledge::tools::TOOL_NAMES;
use alembic_knowledge::{KnowledgeService, register_tools};
use alembic_safety::tools::SafetyServices;
use alembic_tools::{Allowlist, Caller, OutcomeStatus, Pipeline, ToolCall, ToolRegistry};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::Harness;

const CODE: &str = "fn load(path: &str) -> Config {\n    let text = std::fs::read_to_string(path).unwrap();\n    parse_config(&text)\n}\n";

async fn publish_config_recipe(h: &Harness) -> String {
    let args = json!({
        "title": "Config loading with parse_config",
        "description": "How the project reads its config file",
        "content": {"markdown": "Config is read once and parsed with `parse_config` in `src/config.rs`.",
                    "pattern": "let config = parse_config(&read_to_string(path)?)?;"},
        "kind": "pattern",
        "sources": ["src/config.rs"],
    });
    let id = h.ok("submit_knowledge", args).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    h.ok("approve_candidate", json!({"candidateId": id})).await;
    h.ok("publish_recipe", json!({"recipeId": id})).await;
    id
}

fn rule_ids(data: &Value) -> Vec<&str> {
    data["guard"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["ruleId"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn both_halves_answer_for_a_snippet() {
    let h = Harness::new();
    let id = publish_config_recipe(&h).await;
    let data = h
        .ok("analyze_code", json!({"code": CODE, "language": "rust"}))
        .await;
    assert_eq!(data["status"], json!("ok"));
    assert_eq!(data["filePath"], json!("(inline)"));
    assert_eq!(rule_ids(&data), vec!["rust-unwrap"]);
    assert_eq!(data["relatedRecipes"]["total"], json!(1));
    assert_eq!(data["relatedRecipes"]["results"][0]["id"], json!(id));
    assert_eq!(data["errors"], json!([]));
}

#[tokio::test]
async fn a_project_file_is_read_through_the_guard() {
    let h = Harness::new();
    h.write("src/config.rs", CODE);
    let data = h
        .ok("analyze_code", json!({"filePath": "src/config.rs"}))
        .await;
    assert_eq!(
        (&data["filePath"], &data["language"]),
        (&json!("src/config.rs"), &json!("rust"))
    );
    assert_eq!(rule_ids(&data), vec!["rust-unwrap"]);
    let out = h
        .call("analyze_code", json!({"filePath": "../outside.rs"}))
        .await;
    assert_eq!(
        out.status,
        OutcomeStatus::Blocked,
        "{}",
        out.text_for_model()
    );
    let err = h.err("analyze_code", json!({})).await;
    assert!(
        err.contains("give \"code\" (a snippet) or \"filePath\""),
        "{err}"
    );
}

#[tokio::test]
async fn a_failing_guard_check_is_reported_and_the_recipes_still_come() {
    let h = Harness::new();
    publish_config_recipe(&h).await;
    h.write(
        ".alembic/guard-rules.toml",
        "[[rule]]\nid = \"broken\npattern = ",
    );
    let out = h
        .call("analyze_code", json!({"code": CODE, "language": "rust"}))
        .await;
    assert!(out.is_ok(), "{}", out.text_for_model());
    let text = out.text_for_model();
    assert!(text.starts_with("⚠ guard check failed: "), "{text}");
    let data = out.output.unwrap().data;
    assert_eq!(data["status"], json!("partial"));
    assert!(
        data["guard"]["error"]
            .as_str()
            .unwrap()
            .contains("guard-rules.toml")
    );
    assert_eq!(data["relatedRecipes"]["total"], json!(1));
    assert_eq!(data["errors"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn the_call_fails_when_both_halves_fail() {
    let dir = tempfile::tempdir().unwrap();
    // The knowledge base cannot open: its database path is a directory.
    std::fs::create_dir_all(dir.path().join(".alembic/alembic.db")).unwrap();
    let registry = Arc::new(ToolRegistry::new());
    let kb = Arc::new(KnowledgeService::for_project(dir.path()));
    let safety = Arc::new(SafetyServices::for_root(dir.path()).unwrap());
    register_tools(&registry, kb, safety).unwrap();
    let pipeline = Pipeline::builder(registry, dir.path()).build();
    let caller = Caller::new("agent", Allowlist::only(TOOL_NAMES.iter().copied()));
    let out = pipeline
        .execute(ToolCall::new("analyze_code", json!({"code": CODE}), caller))
        .await;
    assert_eq!(out.status, OutcomeStatus::Error);
    let text = out.text_for_model();
    assert!(
        text.contains("analysis failed: guard check: ") && text.contains("; related recipes: "),
        "{text}"
    );
}
