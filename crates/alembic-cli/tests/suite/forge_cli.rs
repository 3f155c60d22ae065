//! `alembic forge`: create, reuse, save, list, show, promote, remove, generate, and saved
//! tools callable through `alembic tools call`.

use alembic_llm::ProviderKind;
use alembic_llm::fake::{FAKE_API_KEY, FakeServer, FakeTurn};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::alembic;

use super::FIND_WITH_LAYOUT_SPEC as SPEC;

fn project() -> tempfile::TempDir {
    let dir = super::project_dir();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/main.rs"),
        "fn retry_request() {}\nfn main() { retry_request(); }\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("spec.toml"), SPEC).unwrap();
    dir
}

fn stdout_json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn a_created_composition_is_saved_loaded_at_start_and_callable() {
    let dir = project();
    let p = dir.path();
    alembic(p)
        .args(["forge", "create", "--spec", "spec.toml"])
        .assert()
        .success();
    assert!(p.join(".alembic/tools/find_with_layout.json").is_file());

    let out = alembic(p)
        .args([
            "tools",
            "call",
            "find_with_layout",
            "--args",
            r#"{"pattern": "retry_request"}"#,
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome = stdout_json(&out);
    assert_eq!(
        outcome["output"]["data"]["matches"][0]["file"],
        json!("src/main.rs")
    );
    assert!(outcome["output"]["data"]["list_project_structure"]["tree"].is_string());
    // the steps are audited under the composed call
    let audit = alembic(p)
        .args(["audit", "tail", "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&audit.stdout);
    assert!(
        text.contains("search_project_code") && text.contains("parent_call_id"),
        "{text}"
    );

    // it is listed as a tool of the project and as a forged tool
    let tools = alembic(p)
        .args(["tools", "list", "--json"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&tools.stdout).contains("\"find_with_layout\""));
    let list = stdout_json(
        &alembic(p)
            .args(["forge", "list", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(list[0]["name"], json!("find_with_layout"));
    assert_eq!(
        (list[0]["lifetime"].clone(), list[0]["loaded"].clone()),
        (json!("saved"), json!(true))
    );
    let show = stdout_json(
        &alembic(p)
            .args(["forge", "show", "find_with_layout", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(show["tool"]["kind"], json!("composed"));
    assert_eq!(show["tool"]["steps"].as_array().unwrap().len(), 2);

    // creating it again needs --force; a built-in name is refused
    let again = alembic(p)
        .args(["forge", "create", "--spec", "spec.toml"])
        .assert()
        .code(2);
    assert!(
        String::from_utf8_lossy(&again.get_output().stderr).contains("pass --force to replace it")
    );
    alembic(p)
        .args(["forge", "create", "--spec", "spec.toml", "--force"])
        .assert()
        .success();
    std::fs::write(
        p.join("shadow.toml"),
        SPEC.replace("find_with_layout", "read_project_file"),
    )
    .unwrap();
    let shadow = alembic(p)
        .args(["forge", "create", "--spec", "shadow.toml"])
        .assert()
        .code(2);
    assert!(
        String::from_utf8_lossy(&shadow.get_output().stderr)
            .contains("a forged tool never replaces one")
    );
    // a spec naming an unknown tool is refused with the step
    std::fs::write(
        p.join("bad.toml"),
        SPEC.replace("list_project_structure", "list_projects")
            .replace("find_with_layout", "bad_layout"),
    )
    .unwrap();
    let bad = alembic(p)
        .args(["forge", "create", "--spec", "bad.toml"])
        .assert()
        .code(2);
    assert!(
        String::from_utf8_lossy(&bad.get_output().stderr)
            .contains("step 1 (list_projects): unknown tool")
    );

    alembic(p)
        .args([
            "forge",
            "promote",
            "find_with_layout",
            "--example",
            r#"{"pattern": "main"}"#,
        ])
        .assert()
        .success();
    let skill =
        std::fs::read_to_string(p.join(".alembic/skills/find-with-layout/SKILL.md")).unwrap();
    assert!(
        skill.contains("## Examples") && skill.contains("\"pattern\": \"main\""),
        "{skill}"
    );
    // the tool's schema is the skill's `arguments` (one-line JSON in the front matter)
    assert!(
        skill
            .lines()
            .any(|l| l.starts_with("arguments:") && l.contains("\"pattern\"")),
        "{skill}"
    );
    // the promotion is a `cli` call and its example a nested call under it
    let tail = alembic(p)
        .args(["audit", "tail", "-n", "50", "--json"])
        .output()
        .unwrap();
    let rows = stdout_json(&tail);
    let rows = rows.as_array().unwrap();
    let promote = rows.iter().find(|r| r["tool"] == "forge_promote").unwrap();
    assert_eq!(
        (promote["caller"].clone(), promote["verdict"].clone()),
        (json!("cli"), json!("ok"))
    );
    assert!(
        rows.iter()
            .any(|r| r["tool"] == "find_with_layout" && r["parent_call_id"] == promote["call_id"]),
        "{rows:?}"
    );

    alembic(p)
        .args(["forge", "remove", "find_with_layout"])
        .assert()
        .success();
    alembic(p)
        .args(["tools", "call", "find_with_layout"])
        .assert()
        .code(2);
    alembic(p)
        .args(["forge", "remove", "find_with_layout"])
        .assert()
        .code(2);
}

#[test]
fn a_reused_alias_is_temporary_until_saved() {
    let dir = project();
    let p = dir.path();
    let out = alembic(p)
        .args([
            "forge",
            "reuse",
            "--intent",
            "search the code for retry",
            "--action",
            "search",
            "--target",
            "retry",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found = stdout_json(&out);
    assert_eq!(found["tool"], json!("search_project_code_retry"));
    assert_eq!(found["match"]["preset_args"], json!({"pattern": "retry"}));
    let list = stdout_json(
        &alembic(p)
            .args(["forge", "list", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(list[0]["lifetime"], json!("temporary"));
    let call = stdout_json(
        &alembic(p)
            .args(["tools", "call", "search_project_code_retry", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(call["status"], json!("ok"));
    alembic(p)
        .args(["forge", "save", "search_project_code_retry"])
        .assert()
        .success();
    let list = stdout_json(
        &alembic(p)
            .args(["forge", "list", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(list[0]["lifetime"], json!("saved"));
    let missing = alembic(p)
        .args(["forge", "save", "no_such_tool"])
        .assert()
        .code(2);
    assert!(
        String::from_utf8_lossy(&missing.get_output().stderr)
            .contains("error: no temporary forged tool named \"no_such_tool\"")
    );
    let removed = alembic(p)
        .args(["forge", "remove", "search_project_code_retry"])
        .assert()
        .success();
    assert_eq!(
        String::from_utf8_lossy(&removed.get_output().stdout),
        "removed \"search_project_code_retry\" (1 file(s))\n"
    );
    alembic(p)
        .args(["forge", "remove", "Bad-Name"])
        .assert()
        .code(2);

    // each change went through the pipeline as caller `cli` and is in the audit chain
    let tail = alembic(p)
        .args(["audit", "tail", "-n", "50", "--json"])
        .output()
        .unwrap();
    let forge_rows: Vec<(String, String, String)> = stdout_json(&tail)
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tool"].as_str().unwrap().starts_with("forge_"))
        .map(|r| {
            let field = |k: &str| r[k].as_str().unwrap().to_string();
            (field("caller"), field("tool"), field("verdict"))
        })
        .collect();
    let row =
        |tool: &str, verdict: &str| ("cli".to_string(), tool.to_string(), verdict.to_string());
    assert_eq!(
        forge_rows,
        vec![
            row("forge_save", "ok"),
            row("forge_save", "invalid_arguments"),
            row("forge_remove", "ok"),
            row("forge_remove", "invalid_arguments"),
        ]
    );
    alembic(p).args(["audit", "verify"]).assert().success();
}

#[test]
fn generate_is_refused_unless_enabled() {
    let dir = project();
    let out = alembic(dir.path())
        .env_remove("ALEMBIC_ENABLE_FORGE_GENERATE")
        .args(["forge", "generate", "count lines"])
        .assert()
        .code(3);
    assert!(
        String::from_utf8_lossy(&out.get_output().stderr)
            .contains("ALEMBIC_ENABLE_FORGE_GENERATE=true")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn generate_verifies_the_code_and_keeps_it_until_saved() {
    let dir = project();
    let home = tempfile::tempdir().unwrap();
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    let tool = json!({
        "name": "count_matches", "description": "Count code matches of a pattern.",
        "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
        "code": "function toolHandler(p, tools) { const r = tools.call('search_project_code', {pattern: p.pattern}); return {pattern: p.pattern, count: r.matches.length}; }",
        "testCases": [{"description": "two matches of retry_request", "input": {"pattern": "retry_request"}, "expectedOutput": {"pattern": "retry_request", "count": 2}}],
    });
    server.push(FakeTurn::text(tool.to_string()));
    let mut cmd = alembic(dir.path());
    cmd.env("ALEMBIC_ENABLE_FORGE_GENERATE", "true")
        .env("XDG_CONFIG_HOME", home.path())
        .env("HOME", home.path())
        .env("OPENAI_API_KEY", FAKE_API_KEY)
        .env("OPENAI_BASE_URL", server.base_url())
        .args(["forge", "generate", "count matches of a pattern", "--json"]);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = stdout_json(&out);
    assert_eq!(report["tool"], json!("count_matches"));
    assert_eq!(report["tests"][0]["passed"], json!(true));

    let p = dir.path().to_path_buf();
    let call = tokio::task::spawn_blocking(move || {
        alembic(&p)
            .env("ALEMBIC_ENABLE_FORGE_GENERATE", "true")
            .args([
                "tools",
                "call",
                "count_matches",
                "--args",
                r#"{"pattern": "main"}"#,
                "--json",
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let outcome = stdout_json(&call);
    assert_eq!(
        outcome["output"]["data"],
        json!({"pattern": "main", "count": 1})
    );
}

#[test]
fn saved_tools_join_every_preset_so_mcp_clients_see_them() {
    let dir = project();
    let p = dir.path();
    alembic(p)
        .args(["forge", "create", "--spec", "spec.toml"])
        .assert()
        .success();
    let out = alembic(p)
        .args(["tools", "list", "--preset", "ide", "--json"])
        .output()
        .unwrap();
    let names: Vec<String> = stdout_json(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"find_with_layout".to_string()), "{names:?}");
}
