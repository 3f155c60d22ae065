//! `bootstrap_knowledge` through the project's pipeline: allowlist, validation, audit.

use alembic_runtime::ProjectRuntime;
use alembic_tools::{OutcomeStatus, ToolCall};
use serde_json::json;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/main.rs"),
        "mod store;\nfn main() {\n    let s = store::Store::shared();\n    println!(\"{}\", s.len());\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("src/store.rs"),
        "pub struct Store { items: Vec<String> }\n\nimpl Store {\n    pub fn shared() -> Store {\n        Store { items: Vec::new() }\n    }\n\n    pub fn len(&self) -> usize {\n        self.items.len()\n    }\n}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\nname = \"p\"\n").unwrap();
    dir
}

#[tokio::test]
async fn bootstrap_knowledge_runs_for_the_cli_and_is_refused_to_agent_presets() {
    let dir = project();
    let rt = ProjectRuntime::open(dir.path()).unwrap();
    // an agent preset does not list the tool: refused before it runs
    let caller = rt.caller("agent", Some("chat")).unwrap();
    let out = rt
        .pipeline()
        .execute(ToolCall::new("bootstrap_knowledge", json!({}), caller))
        .await;
    assert_eq!(out.status, OutcomeStatus::Blocked);
    assert_eq!(out.rule.as_deref(), Some("allowlist"));
    // bad arguments are validation errors naming what is accepted
    let out = rt
        .call_as_cli("bootstrap_knowledge", json!({"maxFiles": 0}))
        .await;
    assert_eq!(
        out.status,
        OutcomeStatus::InvalidArguments,
        "{:?}",
        out.error
    );
    let out = rt
        .call_as_cli("bootstrap_knowledge", json!({"dimensions": ["nope"]}))
        .await;
    assert_eq!(out.status, OutcomeStatus::InvalidArguments);
    assert!(out.error.unwrap().contains("accepted: architecture"));
    // the cli runs it; the summary has the documented shape
    let out = rt.call_as_cli("bootstrap_knowledge", json!({})).await;
    assert!(out.is_ok(), "{:?}", out.error);
    let data = out.output.unwrap().data;
    assert_eq!(data["llm"], false);
    assert_eq!(data["project"]["languages"], json!(["rust"]));
    let ids: Vec<&str> = data["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"architecture") && ids.contains(&"rust-ownership"),
        "{ids:?}"
    );
    assert!(!ids.contains(&"swift-objc-idiom"));
    rt.flush_audit().unwrap();
    let conn = alembic_runtime::store::open_project(dir.path()).unwrap();
    let records = alembic_tools::audit::tail(&conn, 10).unwrap();
    let tools: Vec<(&str, &str, &str)> = records
        .iter()
        .map(|r| {
            (
                r.entry.tool.as_str(),
                r.entry.caller.as_str(),
                r.entry.verdict.as_str(),
            )
        })
        .collect();
    assert_eq!(tools.len(), 4, "{tools:?}");
    assert!(
        tools.contains(&("bootstrap_knowledge", "cli", "ok")),
        "{tools:?}"
    );
    assert!(
        tools.contains(&("bootstrap_knowledge", "agent", "blocked")),
        "{tools:?}"
    );
}
