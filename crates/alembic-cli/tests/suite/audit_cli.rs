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

#[test]
fn verify_json_reports_a_truncated_log_and_fails() {
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
    let db = alembic_runtime::store::project_db_path(p);
    let mut key = db.as_os_str().to_os_string();
    key.push("-audit.key");
    assert_eq!(std::fs::read(&key).unwrap().len(), 32);
    // the key and the anchor stay on this machine: git never offers to commit them
    let git = |args: &[&str]| {
        let out = assert_cmd::Command::new("git")
            .args(args)
            .current_dir(p)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    git(&["init", "-q"]);
    let untracked = git(&[
        "status",
        "--porcelain",
        "--untracked-files=all",
        "--ignored=no",
    ]);
    assert!(untracked.contains(".alembic/.gitignore"), "{untracked}");
    assert!(!untracked.contains("alembic.db"), "{untracked}");
    let ignored = git(&[
        "status",
        "--porcelain",
        "--ignored",
        "--untracked-files=all",
    ]);
    assert!(
        ignored.contains("!! .alembic/alembic.db-audit.key"),
        "{ignored}"
    );
    assert!(
        ignored.contains("!! .alembic/alembic.db-audit.anchor"),
        "{ignored}"
    );
    let conn = alembic_runtime::store::rusqlite::Connection::open(&db).unwrap();
    assert_eq!(
        conn.execute("delete from audit_log where seq = 3", [])
            .unwrap(),
        1
    );
    drop(conn);
    let out = alembic(p)
        .args(["audit", "verify", "--json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let report: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(report["intact"], false);
    assert_eq!(report["records"], 2);
    assert_eq!(report["keyed"], 2);
    assert_eq!(report["anchor"]["seq"], 3);
    assert_eq!(report["first_break"]["seq"], 3);
    let reason = report["first_break"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("truncated: anchor says seq 3 hash ")
            && reason.ends_with("table ends at 2"),
        "{reason}"
    );
    alembic(p)
        .args(["audit", "verify"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("broken at record #3: truncated"));
}
