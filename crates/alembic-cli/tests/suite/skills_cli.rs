//! The skills loop across two checkouts: person A writes a skill (`create_skill`) and
//! promotes a forged tool (`alembic forge promote`), commits; person B clones and loads both.
//! Only the shared part of `.alembic/` is committed (`alembic init`'s .gitignore).

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::alembic;

use super::FIND_WITH_LAYOUT_SPEC as SPEC;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = assert_cmd::Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=Person A",
            "-c",
            "user.email=a@example.invalid",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn call_json(dir: &Path, tool: &str, args: Value) -> Value {
    let args = args.to_string();
    let out = alembic(dir)
        .args(["tools", "call", tool, "--args", args.as_str(), "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{tool}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_committed_skill_is_loaded_in_a_fresh_clone_and_local_state_is_not_committed() {
    let a = super::project_dir();
    let pa = a.path();
    std::fs::create_dir_all(pa.join("src")).unwrap();
    std::fs::write(pa.join("src/main.rs"), "fn retry_request() {}\n").unwrap();
    std::fs::write(pa.join("spec.toml"), SPEC).unwrap();
    git(pa, &["init", "-q"]);
    alembic(pa).arg("init").assert().success();

    // person A writes a skill and promotes a forged tool
    call_json(
        pa,
        "create_skill",
        json!({"name": "team-review", "description": "How we review changes", "content": "# Review\n\nRun the tests first.\n"}),
    );
    alembic(pa)
        .args(["forge", "create", "--spec", "spec.toml"])
        .assert()
        .success();
    alembic(pa)
        .args([
            "forge",
            "promote",
            "find_with_layout",
            "--example",
            r#"{"pattern": "retry_request"}"#,
        ])
        .assert()
        .success();
    assert!(pa.join(".alembic/alembic.db").is_file());

    git(pa, &["add", "-A"]);
    git(pa, &["commit", "-q", "-m", "skills"]);
    let committed = git(pa, &["ls-files"]);
    assert_eq!(
        committed.lines().collect::<Vec<_>>(),
        vec![
            ".alembic/.gitignore",
            ".alembic/config.toml",
            ".alembic/skills/find-with-layout/SKILL.md",
            ".alembic/skills/team-review/SKILL.md",
            ".alembic/tools/find_with_layout.json",
            "spec.toml",
            "src/main.rs",
        ]
    );
    let ignored = git(pa, &["status", "--porcelain", "--ignored"]);
    assert!(
        ignored.contains("!! .alembic/alembic.db\n"),
        "the database is local: {ignored}"
    );

    // person B clones and finds both skills
    let b = super::project_dir();
    let pb = b.path().join("clone");
    git(
        b.path(),
        &["clone", "-q", pa.to_str().unwrap(), pb.to_str().unwrap()],
    );
    assert!(!pb.join(".alembic/alembic.db").exists());
    let team = call_json(&pb, "load_skill", json!({"skillName": "team-review"}));
    let data = &team["output"]["data"];
    assert_eq!(
        (&data["location"], &data["source"], &data["content"]),
        (
            &json!("project"),
            &json!("written"),
            &json!("# Review\n\nRun the tests first.\n")
        )
    );
    let forged = call_json(&pb, "load_skill", json!({"skillName": "find-with-layout"}));
    let data = &forged["output"]["data"];
    assert_eq!(
        (&data["location"], &data["source"], &data["tool"]),
        (
            &json!("project"),
            &json!("forged"),
            &json!("find_with_layout")
        )
    );
    assert_eq!(data["arguments"]["required"], json!(["pattern"]));
    assert!(
        data["content"]
            .as_str()
            .unwrap()
            .contains("### example call 1"),
        "{data}"
    );
}

#[test]
fn init_replaces_the_old_ignore_everything_gitignore_and_says_so() {
    let dir = super::project_dir();
    let ignore = dir.path().join(".alembic/.gitignore");
    std::fs::create_dir_all(ignore.parent().unwrap()).unwrap();
    std::fs::write(&ignore, "*\n").unwrap();
    let out = alembic(dir.path()).arg("init").output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("it ignored everything (`*`); now it ignores only the local state"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&ignore).unwrap();
    assert!(
        text.contains("\n/*.db\n") && !text.starts_with("*\n"),
        "{text}"
    );

    // an edited .gitignore is left alone
    std::fs::write(&ignore, "*\n!skills/\n").unwrap();
    let out = alembic(dir.path()).arg("init").output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains(".gitignore"));
    assert_eq!(std::fs::read_to_string(&ignore).unwrap(), "*\n!skills/\n");
}
