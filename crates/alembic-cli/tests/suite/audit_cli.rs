use predicates::prelude::*;
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::alembic;

#[test]
fn every_call_is_audited_and_the_chain_verifies() {
    let dir = super::project_dir();
    let p = dir.path();
    alembic(p)
        .args([
            "tools",
            "call",
            "get_tool_details",
            "--args",
            r#"{"toolName": "plan_task"}"#,
        ])
        .assert()
        .success();
    alembic(p).args(["tools", "call", "nope"]).assert().code(2);
    alembic(p)
        .args([
            "tools",
            "call",
            "plan_task",
            "--preset",
            "bootstrap-producer",
        ])
        .assert()
        .code(3);
    let out = alembic(p)
        .args(["audit", "tail", "-n", "10", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let rows: Vec<Value> = serde_json::from_slice(&out).unwrap();
    let verdicts: Vec<&str> = rows
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["ok", "unknown_tool", "blocked"]);
    assert_eq!(rows[2]["rule"], "allowlist");
    assert_eq!(rows[0]["caller"], "cli");
    alembic(p)
        .args(["audit", "verify"])
        .assert()
        .success()
        .stdout(predicate::str::contains("ok: 3 records"));
}

/// Three audited calls, then `tamper` (SQL) on the database: verify must fail naming #2.
fn assert_tamper_breaks_record_2(tamper: &str) {
    let dir = super::project_dir();
    let p = dir.path();
    for _ in 0..3 {
        alembic(p)
            .args([
                "tools",
                "call",
                "get_tool_details",
                "--args",
                r#"{"toolName": "plan_task"}"#,
            ])
            .assert()
            .success();
    }
    let conn = alembic_runtime::store::rusqlite::Connection::open(
        alembic_runtime::store::project_db_path(p),
    )
    .unwrap();
    assert_eq!(conn.execute(tamper, []).unwrap(), 1);
    drop(conn);
    alembic(p)
        .args(["audit", "verify"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("broken at record #2"));
}

#[test]
fn verify_names_the_first_bad_record_and_fails() {
    assert_tamper_breaks_record_2("update audit_log set caller = 'someone-else' where seq = 2");
}

#[test]
fn verify_fails_on_whitespace_appended_to_stored_args() {
    assert_tamper_breaks_record_2("update audit_log set args = args || ' ' where seq = 2");
}

#[test]
fn tail_without_a_log_says_what_to_do() {
    let dir = super::project_dir();
    alembic(dir.path())
        .args(["audit", "tail"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no audit log"));
}
