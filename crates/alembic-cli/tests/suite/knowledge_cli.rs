//! `alembic knowledge`: an agent's submission (through `tools call`) reviewed and published
//! from the command line, then listed, searched, shown and counted.

use predicates::prelude::*;
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::alembic;

fn json_out(cmd: &mut assert_cmd::Command) -> Value {
    let out = cmd.assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn a_submission_is_reviewed_and_published_from_the_cli() {
    let dir = super::project_dir();
    let p = dir.path();
    alembic(p)
        .args(["knowledge", "list"])
        .assert()
        .success()
        .stdout("no knowledge entries\n");
    assert!(
        !p.join(".alembic/alembic.db").exists(),
        "reading creates nothing"
    );

    let submitted = json_out(alembic(p).args([
        "tools",
        "call",
        "submit_knowledge",
        "--json",
        "--args",
        r#"{"title": "Retry requests with backoff", "content": {"markdown": "Client.send retries 3 times", "pattern": "retry(3) { send() }"}, "sources": ["src/client.rs"]}"#,
    ]));
    let id = submitted["output"]["data"]["id"]
        .as_str()
        .unwrap()
        .to_string();

    alembic(p)
        .args(["knowledge", "publish", &id])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "allowed next states from submitted are approved, rejected",
        ));
    alembic(p)
        .args(["knowledge", "reject", &id])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("a reason is required"));
    alembic(p)
        .args([
            "knowledge",
            "approve",
            &id,
            "--reason",
            "checked against the client",
        ])
        .assert()
        .success();
    // The review went through the pipeline as caller `cli` and was audited.
    let tail = json_out(alembic(p).args(["audit", "tail", "--json"]));
    let approvals: Vec<&Value> = tail
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tool"] == "approve_candidate")
        .collect();
    assert_eq!(approvals.len(), 1, "{tail:#}");
    assert_eq!(approvals[0]["caller"], "cli");
    assert_eq!(approvals[0]["verdict"], "ok");
    assert_eq!(approvals[0]["args"]["candidateId"], id.as_str());
    alembic(p)
        .args(["audit", "verify"])
        .assert()
        .success()
        .stdout(predicate::str::contains("chain intact"));
    alembic(p)
        .args(["knowledge", "publish", &id])
        .assert()
        .success()
        .stdout(predicate::str::contains("published"));

    let listed =
        json_out(alembic(p).args(["knowledge", "list", "--status", "published", "--json"]));
    assert_eq!(listed["entries"][0]["id"], id.as_str());
    assert_eq!(listed["entries"][0]["language"], "rust");
    let found = json_out(alembic(p).args(["knowledge", "search", "backoff", "--json"]));
    assert_eq!(found["results"][0]["entry"]["id"], id.as_str());
    let shown = json_out(alembic(p).args(["knowledge", "show", &id, "--json"]));
    let by: Vec<&str> = shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["by"].as_str().unwrap())
        .collect();
    assert_eq!(by, vec!["cli", "cli", "cli"]);
    assert_eq!(shown["history"][1]["reason"], "checked against the client");
    let stats = json_out(alembic(p).args(["knowledge", "stats", "--json"]));
    assert_eq!(stats["recipes"], 1);
    alembic(p)
        .args(["knowledge", "show", "k-missing"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "knowledge entry 'k-missing' not found",
        ));
}

/// Submits, approves and publishes one entry from the command line; returns its id.
fn publish_one(p: &std::path::Path) -> String {
    let submitted = json_out(alembic(p).args([
        "tools",
        "call",
        "submit_knowledge",
        "--json",
        "--args",
        r#"{"title": "Retry requests with backoff", "content": {"markdown": "Client.send retries 3 times", "pattern": "retry(3) { send() }"}, "sources": ["src/client.rs"]}"#,
    ]));
    let id = submitted["output"]["data"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    for step in ["approve", "publish"] {
        alembic(p).args(["knowledge", step, &id]).assert().success();
    }
    id
}

#[test]
fn export_writes_published_knowledge_inside_a_block_idempotently() {
    let dir = super::project_dir();
    let p = dir.path();
    let id = publish_one(p);
    let mine = "# Team notes\n\nRun `make test` before pushing.\n";
    std::fs::write(p.join("AGENTS.md"), mine).unwrap();

    let first =
        json_out(alembic(p).args(["knowledge", "export", "--format", "agents-md", "--json"]));
    assert_eq!(
        first["files"][0],
        serde_json::json!({"path": "AGENTS.md", "status": "updated"})
    );
    assert_eq!(first["entries"], 1);
    let written = std::fs::read_to_string(p.join("AGENTS.md")).unwrap();
    assert!(written.starts_with(mine), "{written}");
    assert!(
        written.contains(&format!(
            "- **Retry requests with backoff** (pattern, `{id}`)"
        )),
        "{written}"
    );
    assert!(
        written
            .trim_end()
            .ends_with("<!-- alembic:end knowledge -->"),
        "{written}"
    );

    alembic(p)
        .args(["knowledge", "export", "--format", "agents-md"])
        .assert()
        .success()
        .stdout("unchanged AGENTS.md (1 published entries)\n");
    assert_eq!(
        std::fs::read_to_string(p.join("AGENTS.md")).unwrap(),
        written
    );

    // The write was a pipeline call as caller `cli`, audited.
    let tail = json_out(alembic(p).args(["audit", "tail", "--json"]));
    let writes: Vec<&Value> = tail
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tool"] == "write_project_file")
        .collect();
    assert_eq!(writes.len(), 1, "{tail:#}");
    assert_eq!(writes[0]["caller"], "cli");

    // A duplicated block is refused, and the file stays as it was.
    let broken = format!("{written}\n{written}");
    std::fs::write(p.join("AGENTS.md"), &broken).unwrap();
    alembic(p)
        .args(["knowledge", "export", "--format", "agents-md"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "the alembic block markers are broken (2 begin markers",
        ));
    assert_eq!(
        std::fs::read_to_string(p.join("AGENTS.md")).unwrap(),
        broken
    );
}

#[test]
fn export_writes_cursor_rules_with_front_matter_and_refuses_paths_outside() {
    let dir = super::project_dir();
    let p = dir.path();
    publish_one(p);
    let out =
        json_out(alembic(p).args(["knowledge", "export", "--format", "cursor-rules", "--json"]));
    let paths: Vec<&str> = out["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            ".cursor/rules/alembic.mdc",
            ".cursor/rules/alembic-rust.mdc"
        ]
    );
    let rust = std::fs::read_to_string(p.join(".cursor/rules/alembic-rust.mdc")).unwrap();
    assert!(rust.starts_with(
        "---\ndescription: Project knowledge from Alembic for rust code\nglobs: **/*.rs\nalwaysApply: false\n---\n"
    ), "{rust}");
    assert!(rust.contains("Retry requests with backoff"));
    let general = std::fs::read_to_string(p.join(".cursor/rules/alembic.mdc")).unwrap();
    assert!(general.contains("alwaysApply: true\n"), "{general}");

    alembic(p)
        .args([
            "knowledge",
            "export",
            "--format",
            "claude-md",
            "--output",
            "/tmp/elsewhere.md",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is outside the project root"));
    alembic(p)
        .args(["knowledge", "export", "--format", "windsurf"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "accepted formats are agents-md, claude-md, cursor-rules",
        ));
}

#[test]
fn guard_overrides_without_a_team_are_kept_in_the_project_database() {
    let dir = super::project_dir();
    let p = dir.path();
    alembic(p).arg("init").assert().success();
    let shown = json_out(alembic(p).args(["knowledge", "guard-overrides", "show", "--json"]));
    assert_eq!(shown, serde_json::json!({"store": "sqlite", "rules": null}));
    std::fs::write(p.join("rules.toml"), "disabled = [\"rust-todo\"]\n").unwrap();
    let set = json_out(alembic(p).args([
        "knowledge",
        "guard-overrides",
        "set",
        "rules.toml",
        "--json",
    ]));
    assert_eq!(set["store"], "sqlite");
    assert_eq!(set["rules"], 0);
    alembic(p)
        .args(["knowledge", "guard-overrides", "show"])
        .assert()
        .success()
        .stdout("disabled = [\"rust-todo\"]\n");
    alembic(p)
        .args(["knowledge", "guard-overrides", "clear"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "removed the guard-rule overrides from sqlite",
        ));
    alembic(p)
        .args(["knowledge", "guard-overrides", "set", "missing.toml"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("missing.toml"));
}
