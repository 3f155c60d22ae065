//! `alembic bootstrap`: end to end on a fixture with planted patterns, the `--json` shape,
//! re-runs, and resuming after a real `kill -9`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use super::alembic;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

pub(super) fn planted() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("planted");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../alembic-bootstrap/tests/fixtures/planted");
    copy_dir(&fixture, &root);
    // A project marker: alembic refuses a directory that is none.
    std::fs::create_dir_all(root.join(".alembic")).unwrap();
    (dir, root)
}

fn json_of(args: &[&str], dir: &Path) -> Value {
    let out = alembic(dir)
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out)))
}

fn statuses(report: &Value) -> Vec<(String, String)> {
    report["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["id"].as_str().unwrap().to_string(),
                d["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn bootstrap_writes_candidates_for_review_and_prints_the_json_shape() {
    let (_dir, root) = planted();
    let report = json_of(&["bootstrap", "--no-llm", "--json"], &root);
    // the database is ignored exactly as after `alembic init`, so it never shows as untracked
    assert_eq!(
        std::fs::read_to_string(root.join(".alembic/.gitignore")).unwrap(),
        alembic_runtime::store::layout::GITIGNORE
    );
    let keys: Vec<&str> = report
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "project",
            "dimensions",
            "candidates",
            "memories",
            "llm",
            "elapsedMs"
        ]
    );
    assert_eq!(report["llm"], false);
    assert!(
        report["project"]["languages"]
            .as_array()
            .unwrap()
            .contains(&"swift".into())
    );
    assert!(report["project"]["frameworks"].is_array());
    for d in report["dimensions"].as_array().unwrap() {
        assert_eq!(d["status"], "done", "{d}");
        assert!(d["tier"].as_u64().is_some_and(|t| (1..=3).contains(&t)));
        assert!(d["candidates"].is_u64());
        assert!(d.get("error").is_none());
    }
    let candidates = report["candidates"].as_array().unwrap();
    assert!(candidates.len() >= 10, "{}", candidates.len());
    for c in candidates {
        for key in ["id", "title", "dimension", "knowledgeType"] {
            assert!(c[key].is_string(), "{key} in {c}");
        }
        let e = &c["evidence"][0];
        let text = std::fs::read_to_string(root.join(e["file"].as_str().unwrap())).unwrap();
        assert!(e["line"].as_u64().unwrap() as usize <= text.lines().count());
    }
    assert!(report["memories"].as_u64().unwrap() >= 3);
    // the review commands see them as submitted candidates
    let listed = json_of(
        &[
            "knowledge",
            "list",
            "--status",
            "submitted",
            "--limit",
            "500",
            "--json",
        ],
        &root,
    );
    assert_eq!(
        listed["entries"].as_array().unwrap().len(),
        candidates.len()
    );
    // the run was a tool call by the cli, audited
    let rows = json_of(&["audit", "tail", "-n", "5", "--json"], &root);
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool"] == "bootstrap_knowledge")
        .unwrap();
    assert_eq!(
        (row["caller"].as_str(), row["verdict"].as_str()),
        (Some("cli"), Some("ok"))
    );
    // a second run skips every dimension and adds nothing; the table says so
    let out = alembic(&root)
        .args(["bootstrap", "--no-llm"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let table = String::from_utf8(out).unwrap();
    assert!(
        table.contains("design-patterns") && table.contains("skipped"),
        "{table}"
    );
    assert!(table.contains("0 new candidates"), "{table}");
}

#[test]
fn bad_arguments_are_usage_errors_and_help_lists_the_options() {
    let (_dir, root) = planted();
    let out = alembic(&root)
        .args(["bootstrap", "--help"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let help = String::from_utf8(out).unwrap();
    for flag in [
        "--project",
        "--dimensions",
        "--no-llm",
        "--resume",
        "--force",
        "--json",
    ] {
        assert!(help.contains(flag), "{flag} missing from {help}");
    }
    let out = alembic(&root)
        .args(["bootstrap", "--no-llm", "--dimensions", "architecture,nope"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    assert!(err.contains("unknown dimension \"nope\""), "{err}");
    let out = alembic(&root)
        .args(["bootstrap", "--no-llm", "--resume"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(
        String::from_utf8(out)
            .unwrap()
            .contains("no interrupted bootstrap run")
    );
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test needs the child's pid to kill -9 it mid-run"
)]
fn a_run_killed_after_a_checkpoint_resumes_without_redoing_or_half_writing() {
    let (_dir, root) = planted();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("alembic"))
        .current_dir(&root)
        .args(["bootstrap", "--no-llm", "--json"])
        .env("ALEMBIC_LOG", "warn")
        .env("ALEMBIC_BOOTSTRAP_PAUSE_AFTER", "error-resilience")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let paused = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.contains("ALEMBIC_BOOTSTRAP_PAUSE_AFTER"));
    assert!(paused, "the test hook never paused");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // what the killed run committed: tiers 1 and 2 and the first dimension of tier 3 (which
    // runs one dimension at a time, so the order is fixed), each whole
    let listed = json_of(&["knowledge", "list", "--limit", "500", "--json"], &root);
    let before = listed["entries"].as_array().unwrap().len();
    let report = json_of(&["bootstrap", "--no-llm", "--resume", "--json"], &root);
    let st = statuses(&report);
    let status = |id: &str| {
        st.iter()
            .find(|(d, _)| d == id)
            .map(|(_, s)| s.as_str())
            .unwrap()
    };
    assert_eq!(status("architecture"), "resumed");
    assert_eq!(status("coding-standards"), "resumed");
    assert_eq!(status("design-patterns"), "resumed");
    assert_eq!(status("error-resilience"), "resumed");
    assert_eq!(status("concurrency-async"), "done");
    assert!(
        st.iter().all(|(_, s)| s == "resumed" || s == "done"),
        "{st:?}"
    );
    let resumed: u64 = report["dimensions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["status"] == "resumed")
        .map(|d| d["candidates"].as_u64().unwrap())
        .sum();
    assert_eq!(
        resumed as usize, before,
        "the killed run left a partial dimension"
    );
    let after = json_of(&["knowledge", "list", "--limit", "500", "--json"], &root);
    let new = report["candidates"].as_array().unwrap().len();
    assert_eq!(after["entries"].as_array().unwrap().len(), before + new);
    // the resumed run finished: nothing left to resume
    alembic(&root)
        .args(["bootstrap", "--no-llm", "--resume"])
        .assert()
        .code(2);
}

/// `kill -9` at 20 points spread over a whole run (the scan, the migrations, between and
/// inside dimensions, after the end): `--resume` then either finishes the run or names why
/// there is nothing to resume, and a later plain run always works.
#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test needs the child's pid to kill -9 it at chosen moments"
)]
fn a_kill_at_any_point_leaves_a_resumable_or_explained_state() {
    let bin = assert_cmd::cargo::cargo_bin("alembic");
    let spawn = |root: &Path| {
        std::process::Command::new(&bin)
            .current_dir(root)
            .args(["bootstrap", "--no-llm", "--json"])
            .env("ALEMBIC_LOG", "error")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // How long one whole run takes here: the kill points spread over 0..1.2 of it.
    let (_timing_dir, timing_root) = planted();
    let started = std::time::Instant::now();
    assert!(spawn(&timing_root).wait().unwrap().success());
    let whole = started.elapsed().as_micros().max(1);
    let mut seed: u64 = 0x5eed_1e55;
    let (mut resumed, mut explained) = (0, 0);
    for point in 0..20u32 {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        // Every fifth point is very early (the first milliseconds, before any checkpoint).
        let frac = if point % 5 == 0 {
            (seed >> 33) % 50
        } else {
            (seed >> 33) % 1200
        };
        let delay = std::time::Duration::from_micros(
            u64::try_from(whole).unwrap() * frac / if point % 5 == 0 { 10_000 } else { 1000 },
        );
        let (_dir, root) = planted();
        let mut child = spawn(&root);
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL; an error means it already finished
        child.wait().unwrap();
        let out = alembic(&root)
            .args(["bootstrap", "--no-llm", "--resume", "--json"])
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .unwrap();
        match out.status.code() {
            Some(0) => {
                let report: Value = serde_json::from_slice(&out.stdout).unwrap();
                let st = statuses(&report);
                assert!(!st.is_empty(), "point {point}: resumed nothing");
                assert!(
                    st.iter()
                        .all(|(_, s)| matches!(s.as_str(), "resumed" | "done" | "skipped")),
                    "point {point} ({delay:?}): {st:?}"
                );
                resumed += 1;
            }
            Some(2) => {
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(
                    err.contains("no bootstrap run was ever started")
                        || err.contains("finished and left nothing to continue"),
                    "point {point} ({delay:?}): {err}"
                );
                explained += 1;
            }
            code => panic!(
                "point {point} ({delay:?}): --resume exited {code:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        }
        let report = json_of(&["bootstrap", "--no-llm", "--json"], &root);
        assert!(
            !statuses(&report).is_empty(),
            "point {point}: a later plain run did nothing"
        );
        // Nothing is left half done: the later run finished, so there is nothing to resume.
        alembic(&root)
            .args(["bootstrap", "--no-llm", "--resume"])
            .assert()
            .code(2);
    }
    eprintln!("kill points: {resumed} resumed, {explained} explained (whole run {whole} µs)");
    assert!(resumed > 0, "no kill point was resumed");
}
