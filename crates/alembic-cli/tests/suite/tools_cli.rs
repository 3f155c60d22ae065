use predicates::prelude::*;
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::alembic;

#[test]
fn init_writes_a_config_that_loads() {
    let dir = super::project_dir();
    alembic(dir.path())
        .arg("init")
        .assert()
        .success()
        .stdout(predicate::str::contains("wrote"));
    let text = std::fs::read_to_string(dir.path().join(".alembic/config.toml")).unwrap();
    assert!(text.starts_with("# Alembic project configuration"));
    alembic(dir.path())
        .arg("init")
        .assert()
        .success()
        .stdout(predicate::str::contains("already exists"));
    alembic(dir.path())
        .args(["tools", "list"])
        .assert()
        .success();
}

#[test]
fn list_json_and_presets() {
    let dir = super::project_dir();
    let out = alembic(dir.path())
        .args(["tools", "list", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let tools: Vec<Value> = serde_json::from_slice(&out).unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"get_tool_details") && names.contains(&"plan_task"));
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted: {names:?}");
    let out = alembic(dir.path())
        .args(["tools", "list", "--preset", "bootstrap-producer", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let tools: Vec<Value> = serde_json::from_slice(&out).unwrap();
    assert!(tools.iter().all(|t| t["name"] != "plan_task"));
    alembic(dir.path())
        .args(["tools", "list", "--preset", "nope"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unknown preset \"nope\"; available:",
        ));
}

#[test]
fn schema_prints_parameters_and_suggests_names() {
    let dir = super::project_dir();
    let out = alembic(dir.path())
        .args(["tools", "schema", "plan_task"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        v["parameters"]["required"],
        serde_json::json!(["goal", "steps"])
    );
    alembic(dir.path())
        .args(["tools", "schema", "plan_tsk"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("did you mean: plan_task?"));
}

#[test]
fn call_exit_codes_follow_the_outcome() {
    let dir = super::project_dir();
    let ok = alembic(dir.path())
        .args([
            "tools",
            "call",
            "plan_task",
            "--json",
            "--args",
            r#"{"goal": "g", "steps": "look around"}"#,
        ])
        .assert()
        .code(2); // "look around" becomes ["look around"], an array of string, not of objects
    let _ = ok;
    let out = alembic(dir.path())
        .args([
            "tools",
            "call",
            "plan_task",
            "--json",
            "--args",
            r#"{"goal": "g", "steps": {"description": "look"}}"#,
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["metadata"]["coercions"][0]["to"], "array");
    alembic(dir.path())
        .args(["tools", "call", "no_such_tool"])
        .assert()
        .code(2);
    alembic(dir.path())
        .args([
            "tools",
            "call",
            "plan_task",
            "--preset",
            "bootstrap-producer",
            "--args",
            "{}",
        ])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("rule allowlist"));
    alembic(dir.path())
        .args([
            "tools",
            "call",
            "get_tool_details",
            "--args",
            r#"{"toolName": "missing_tool"}"#,
        ])
        .assert()
        .code(1);
    alembic(dir.path())
        .args(["tools", "call", "plan_task", "--args", "not json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--args is not valid JSON"));
}

#[test]
fn a_missing_project_directory_is_a_usage_error() {
    let dir = super::project_dir();
    alembic(dir.path())
        .args(["tools", "call", "plan_task", "--project", "does/not/exist"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "does not exist or is not a directory",
        ));
}
