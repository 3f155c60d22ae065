//! `alembic memory …` end to end (lexical retrieval: ALEMBIC_EMBEDDINGS=none).

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::alembic;

fn memory(dir: &std::path::Path, args: &[&str]) -> assert_cmd::assert::Assert {
    alembic(dir)
        .env("ALEMBIC_EMBEDDINGS", "none")
        .arg("memory")
        .args(args)
        .assert()
}

fn stdout(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(a.get_output().stdout.clone()).unwrap()
}

fn json(a: &assert_cmd::assert::Assert) -> Value {
    serde_json::from_slice(&a.get_output().stdout).unwrap()
}

#[test]
fn add_consolidates_and_search_explains() {
    let dir = super::project_dir();
    let p = dir.path();
    let out = stdout(
        &memory(
            p,
            &[
                "add",
                "The Payment module uses the Coordinator + Repository pattern",
                "--importance",
                "8",
            ],
        )
        .success(),
    );
    assert!(out.starts_with("added smem_"), "{out}");
    let out = stdout(
        &memory(
            p,
            &[
                "add",
                "The Payment module uses the Coordinator + Repository pattern.",
            ],
        )
        .success(),
    );
    assert!(out.starts_with("updated smem_"), "{out}");
    memory(
        p,
        &[
            "add",
            "CI runs on GitHub Actions",
            "--type",
            "insight",
            "--ttl-days",
            "30",
        ],
    )
    .success();

    let v = json(&memory(p, &["search", "payment pattern", "--json", "--explain"]).success());
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["type"], "fact");
    assert_eq!(results[0]["importance"], 8.0);
    assert!(results[0]["score"].as_f64().unwrap() > 0.5);
    for part in ["recency", "importance", "relevance"] {
        assert!(results[0]["explain"][part].is_number(), "{v}");
    }
    let text = stdout(&memory(p, &["search", "payment pattern", "--explain", "-k", "3"]).success());
    assert!(
        text.contains("recency 1.000 (w 0.2) + importance 0.800 (w 0.3) + relevance 1.000 (w 0.5)"),
        "{text}"
    );
    // nothing relevant → empty list, exit 0
    let v = json(&memory(p, &["search", "kubernetes", "--json"]).success());
    assert_eq!(v, serde_json::json!({"results": []}));
}

#[test]
fn changes_go_through_the_pipeline_as_cli_and_are_audited() {
    let dir = super::project_dir();
    let p = dir.path();
    let out = stdout(
        &memory(
            p,
            &["add", "Releases are tagged on Fridays", "--scope", "team"],
        )
        .success(),
    );
    let id = out.split_whitespace().nth(1).unwrap().to_string();
    let file = p.join("mem.jsonl");
    memory(p, &["export", "--output", file.to_str().unwrap()]).success();
    memory(p, &["import", file.to_str().unwrap()]).success();
    memory(p, &["gc"]).success();
    memory(p, &["forget", &id]).success();
    let shown = alembic(p)
        .args(["audit", "tail", "-n", "10", "--json"])
        .assert()
        .success();
    let rows: Vec<Value> = serde_json::from_slice(&shown.get_output().stdout).unwrap();
    let calls: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["caller"].as_str().unwrap(),
                r["tool"].as_str().unwrap(),
                r["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("cli", "memory_remember", "ok"),
            ("cli", "memory_import", "ok"),
            ("cli", "memory_gc", "ok"),
            ("cli", "memory_forget", "ok"),
        ]
    );
    alembic(p)
        .args(["audit", "verify"])
        .assert()
        .success()
        .stdout(predicates::str::contains("ok: 4 records"));
}

#[test]
fn contradiction_keeps_history_and_forget_removes_it() {
    let dir = super::project_dir();
    let p = dir.path();
    memory(p, &["add", "We use CocoaPods to manage dependencies"]).success();
    let out = stdout(
        &memory(
            p,
            &["add", "We no longer use CocoaPods to manage dependencies"],
        )
        .success(),
    );
    assert!(
        out.starts_with("replaced smem_") && out.contains("(supersedes smem_"),
        "{out}"
    );
    let id = out.split_whitespace().nth(1).unwrap().to_string();

    let listed = json(&memory(p, &["list", "--json"]).success());
    assert_eq!(listed["memories"].as_array().unwrap().len(), 1);
    let shown = json(&memory(p, &["show", &id, "--history", "--json"]).success());
    let history = shown["history"].as_array().unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0]["superseded_by"], Value::String(id.clone()));
    assert_eq!(
        history[1]["content"],
        "We no longer use CocoaPods to manage dependencies"
    );

    memory(p, &["forget", &id]).success();
    let stats = json(&memory(p, &["stats", "--json"]).success());
    assert_eq!(
        (stats["current"].as_u64(), stats["history"].as_u64()),
        (Some(0), Some(0))
    );
    let err = memory(p, &["forget", &id]).code(2);
    assert!(String::from_utf8_lossy(&err.get_output().stderr).contains("no memory with id"));
}

#[test]
fn export_import_gc_and_usage_errors() {
    let (a, b) = (super::project_dir(), super::project_dir());
    memory(
        a.path(),
        &["add", "Builds use Bazel remote cache", "--scope", "team"],
    )
    .success();
    memory(
        a.path(),
        &[
            "add",
            "Prefer tabs in Makefiles",
            "--type",
            "preference",
            "--scope",
            "user",
        ],
    )
    .success();
    let file = a.path().join("mem.jsonl");
    memory(a.path(), &["export", "--output", file.to_str().unwrap()]).success();
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 2);
    let out = stdout(&memory(b.path(), &["import", file.to_str().unwrap()]).success());
    assert_eq!(out.trim(), "imported 2, skipped 0 already present");
    let out = stdout(&memory(b.path(), &["import", file.to_str().unwrap()]).success());
    assert_eq!(out.trim(), "imported 0, skipped 2 already present");
    let gc = json(&memory(b.path(), &["gc", "--json"]).success());
    assert_eq!(
        gc,
        serde_json::json!({"expired": 0, "forgotten": 0, "archived": 0, "remaining": 2})
    );

    let err = memory(b.path(), &["add", "some text", "--type", "opinion"]).code(2);
    let stderr = String::from_utf8_lossy(&err.get_output().stderr).to_string();
    assert!(
        stderr.contains("unknown type \"opinion\"; accepted: fact insight preference"),
        "{stderr}"
    );
    let err = memory(b.path(), &["add", "some text", "--importance", "42"]).code(2);
    assert!(
        String::from_utf8_lossy(&err.get_output().stderr)
            .contains("expected a number from 1 to 10")
    );
}

#[test]
fn the_memory_section_of_the_config_is_read() {
    let dir = super::project_dir();
    let p = dir.path();
    std::fs::create_dir_all(p.join(".alembic")).unwrap();
    let config = p.join(".alembic/config.toml");
    std::fs::write(&config, "[memory]\nmax_memories = 1\n").unwrap();
    memory(p, &["add", "Builds use Bazel remote cache"]).success();
    memory(p, &["add", "Releases are tagged on Fridays"]).success();
    let listed = json(&memory(p, &["list", "--json"]).success());
    let contents: Vec<&str> = listed["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["Releases are tagged on Fridays"]);

    std::fs::write(&config, "[memory]\nmax_memories = \"many\"\n").unwrap();
    let err = memory(p, &["list"]).failure();
    let stderr = String::from_utf8_lossy(&err.get_output().stderr).to_string();
    assert!(
        stderr.contains("[memory] max_memories = \"many\": accepted a whole number of at least 1"),
        "{stderr}"
    );
}
