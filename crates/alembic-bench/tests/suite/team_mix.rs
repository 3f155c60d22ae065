//! A tiny configuration of the `team-mix` benchmark, in debug, against the test PostgreSQL
//! server (`ALEMBIC_TEST_PG_URL`; unset is a failure), so that it cannot rot: both backends
//! run the whole mix without errors and every acknowledged write is found afterwards.

use assert_cmd::Command;
use pretty_assertions::assert_eq;
use serde_json::Value;

#[test]
fn a_small_team_mix_runs_without_errors_or_lost_writes() {
    let url = std::env::var("ALEMBIC_TEST_PG_URL")
        .expect("ALEMBIC_TEST_PG_URL is not set: run `export ALEMBIC_TEST_PG_URL=$(scripts/setup-postgres)`");
    let out = Command::cargo_bin("alembic-bench")
        .unwrap()
        .args(["team-mix", "--team-url", &url, "--memories", "1000"])
        .args(["--clients", "3", "--ops", "20", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    for backend in ["postgres", "sqlite"] {
        let b = &r[backend];
        let ops = b["retrieve"]["count"].as_u64().unwrap() + b["add"]["count"].as_u64().unwrap();
        assert_eq!(ops, 60, "{backend}: {b}");
        assert!(b["add"]["count"].as_u64().unwrap() > 0, "{backend}: {b}");
        assert_eq!(
            (b["errors"].as_u64(), b["lost_writes"].as_u64()),
            (Some(0), Some(0)),
            "{backend}: {b}"
        );
        assert!(
            b["acknowledged_writes"].as_u64().unwrap() > 0,
            "{backend}: {b}"
        );
        assert!(b["rows_after"].as_u64().unwrap() >= 1000, "{backend}: {b}");
    }
}
