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

/// `--team` seeds a named team once and reuses it after (measuring a change without the
/// seed each time); `--postgres-only` leaves SQLite out.
#[test]
fn a_named_team_is_seeded_once_and_reused() {
    let url = std::env::var("ALEMBIC_TEST_PG_URL")
        .expect("ALEMBIC_TEST_PG_URL is not set: run `export ALEMBIC_TEST_PG_URL=$(scripts/setup-postgres)`");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let team = format!("bench-reuse-{nanos}");
    let run = || -> Value {
        let out = Command::cargo_bin("alembic-bench")
            .unwrap()
            .args(["team-mix", "--team-url", &url, "--memories", "500"])
            .args(["--clients", "2", "--ops", "10", "--team", &team])
            .args(["--postgres-only", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let first = run();
    assert_eq!(first["sqlite"], Value::Null, "{first}");
    let seeded = first["postgres"]["rows_after"].as_u64().unwrap();
    assert!((500..600).contains(&seeded), "{first}");
    // not seeded again: the second run adds at most its own few memories
    let second = run();
    let after = second["postgres"]["rows_after"].as_u64().unwrap();
    assert!(
        (seeded..seeded + 20).contains(&after),
        "{seeded} then {second}"
    );
    assert_eq!(
        second["postgres"]["lost_writes"].as_u64(),
        Some(0),
        "{second}"
    );
}
