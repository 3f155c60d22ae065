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
    let dir = tempfile::tempdir().unwrap();
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
