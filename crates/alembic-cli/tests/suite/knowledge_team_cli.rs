//! `alembic team init|status|push|pull` with the knowledge base, and `alembic knowledge`
//! reviewing on the team store, end to end against the tests' PostgreSQL server
//! (`ALEMBIC_TEST_PG_URL`, started by scripts/test).

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::alembic;

fn pg_url() -> String {
    std::env::var("ALEMBIC_TEST_PG_URL").unwrap_or_else(|_| {
        panic!(
            "ALEMBIC_TEST_PG_URL is not set: this test needs a PostgreSQL server; run \
             `export ALEMBIC_TEST_PG_URL=$(scripts/setup-postgres)` (or scripts/test, which does it)"
        )
    })
}

fn run(dir: &std::path::Path, args: &[&str]) -> assert_cmd::assert::Assert {
    alembic(dir)
        .env("ALEMBIC_EMBEDDINGS", "none")
        .env_remove("ALEMBIC_TEAM_URL")
        .args(args)
        .assert()
}

fn json_of(dir: &std::path::Path, args: &[&str]) -> Value {
    let out = run(dir, args).success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

fn submit(dir: &std::path::Path, title: &str) -> String {
    let args = json!({"title": title, "content": {"markdown": "Client.send retries 3 times with backoff", "pattern": "retry(3) { send() }"}, "sources": ["src/client.rs"]}).to_string();
    let out = json_of(
        dir,
        &[
            "tools",
            "call",
            "submit_knowledge",
            "--json",
            "--args",
            &args,
        ],
    );
    out["output"]["data"]["id"].as_str().unwrap().to_string()
}

/// Configures `dirs` as checkouts of one fresh team on the tests' server.
fn join_team(dirs: &[&std::path::Path], label: &str) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let team = format!("{label}-{}-{nanos}", std::process::id());
    let config = format!(
        "[team]\nurl = \"{}\"\nteam = \"{team}\"\nauthor = \"ci\"\n",
        pg_url()
    );
    for dir in dirs {
        std::fs::create_dir_all(dir.join(".alembic")).unwrap();
        std::fs::write(dir.join(".alembic/config.toml"), &config).unwrap();
    }
}

#[test]
fn init_pushes_local_knowledge_once_and_both_checkouts_review_on_the_team_store() {
    let (a, b) = (super::project_dir(), super::project_dir());
    let (a, b) = (a.path(), b.path());
    // a recipe published in a before the team existed lives in a's project database
    let local = submit(a, "Retry requests with backoff");
    for step in ["approve", "publish"] {
        run(a, &["knowledge", step, &local]).success();
    }
    join_team(&[a, b], "cli-k");
    let status = json_of(a, &["team", "status", "--json"]);
    assert_eq!(status["knowledge"]["waitingToPush"], json!(1), "{status}");
    assert_eq!(status["knowledge"]["entries"], json!(0));

    let init = json_of(a, &["team", "init", "--json"]);
    assert_eq!(init["knowledge"]["entries"], json!(1), "{init}");
    assert_eq!(init["schema"]["knowledge"]["entries"], json!(0), "{init}");
    assert!(init["memories"].is_object(), "{init}");
    assert_eq!(init["knowledge"]["removedHere"], json!(1), "{init}");
    // moved, not copied: a's file keeps no second copy, so a rerun has nothing to move
    let again = json_of(a, &["team", "init", "--json"]);
    assert_eq!(again["knowledge"]["entries"], json!(0), "{again}");
    assert_eq!(again["knowledge"]["alreadyThere"], json!(0), "{again}");
    assert_eq!(
        again["schema"]["knowledge"]["localEntries"],
        json!(0),
        "{again}"
    );

    // the other checkout finds the recipe, and reviews a new candidate on the team store
    let found = json_of(b, &["knowledge", "search", "backoff", "--json"]);
    assert_eq!(found["results"][0]["entry"]["id"], json!(local), "{found}");
    let fresh = submit(b, "Log failed requests once");
    run(b, &["knowledge", "approve", &fresh]).success();
    run(b, &["knowledge", "publish", &fresh]).success();
    let shown = json_of(a, &["knowledge", "show", &fresh, "--json"]);
    assert_eq!(shown["entry"]["status"], json!("published"), "{shown}");
    assert_eq!(shown["entry"]["version"], json!(3));

    let status = json_of(a, &["team", "status", "--json"]);
    assert_eq!(status["knowledge"]["entries"], json!(2), "{status}");
    assert_eq!(status["knowledge"]["waitingToPush"], json!(0), "{status}");

    // pull copies the team's knowledge into b's own file, once
    let pulled = json_of(b, &["team", "pull", "--json"]);
    assert_eq!(pulled["knowledge"]["entries"], json!(2), "{pulled}");
    let pulled = json_of(b, &["team", "pull", "--json"]);
    assert_eq!(pulled["knowledge"]["entries"], json!(0), "{pulled}");
    assert_eq!(pulled["knowledge"]["alreadyThere"], json!(2), "{pulled}");
}

/// The rule ids `guard_check_code` reports for `code` in `dir`.
fn violated(dir: &std::path::Path, code: &str) -> Vec<String> {
    let args = json!({"code": code, "language": "rust"}).to_string();
    let out = json_of(
        dir,
        &[
            "tools",
            "call",
            "guard_check_code",
            "--json",
            "--args",
            &args,
        ],
    );
    let mut ids: Vec<String> = out["output"]["data"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["ruleId"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn guard_overrides_set_in_one_checkout_apply_to_the_guard_check_of_the_other() {
    let (a, b) = (super::project_dir(), super::project_dir());
    let (a, b) = (a.path(), b.path());
    join_team(&[a, b], "cli-g");
    let code = "fn f(x: Option<u8>) -> u8 {\n    dbg!(x);\n    x.unwrap()\n}\n";
    let before = violated(b, code);
    assert!(before.contains(&"rust-unwrap".to_string()), "{before:?}");
    assert!(!before.contains(&"team-no-dbg".to_string()), "{before:?}");

    // a bad file is refused naming the line and what is accepted; nothing is stored
    let bad = a.join("bad-rules.toml");
    std::fs::write(
        &bad,
        "disabled = [\"rust-unwrap\"]\n\n[[rule]]\nid = \"x\"\nmessage = \"no\"\n",
    )
    .unwrap();
    let out = run(
        a,
        &["knowledge", "guard-overrides", "set", bad.to_str().unwrap()],
    )
    .failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("bad-rules.toml"), "{err}");
    assert!(err.contains("line 5"), "{err}");
    assert!(err.contains("unknown field `message`"), "{err}");
    assert!(
        err.contains("[[rule]] tables with id, description"),
        "{err}"
    );
    let bad_pattern = a.join("bad-pattern.toml");
    std::fs::write(&bad_pattern, "[[rule]]\nid = \"team-no-dbg\"\ndescription = \"d\"\nlanguages = [\"rust\"]\npattern = \"dbg!(\"\nseverity = \"warning\"\n").unwrap();
    let out = run(
        a,
        &[
            "knowledge",
            "guard-overrides",
            "set",
            bad_pattern.to_str().unwrap(),
        ],
    )
    .failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("line 2: ") && err.contains("does not compile"),
        "{err}"
    );
    let shown = json_of(b, &["knowledge", "guard-overrides", "show", "--json"]);
    assert_eq!(shown["rules"], Value::Null, "{shown}");

    let rules = "disabled = [\"rust-unwrap\"]\n\n[[rule]]\nid = \"team-no-dbg\"\ndescription = \"dbg! left in\"\nlanguages = [\"rust\"]\npattern = 'dbg!\\('\nseverity = \"error\"\n";
    let good = a.join("team-rules.toml");
    std::fs::write(&good, rules).unwrap();
    let set = json_of(
        a,
        &[
            "knowledge",
            "guard-overrides",
            "set",
            good.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(set["rules"], json!(1), "{set}");
    assert_eq!(set["by"], json!("cli"), "{set}");
    // b reads them through the team server, and its guard check applies them
    let shown = json_of(b, &["knowledge", "guard-overrides", "show", "--json"]);
    assert_eq!(shown["rules"], json!(rules), "{shown}");
    assert!(
        shown["store"].as_str().unwrap().contains("127.0.0.1"),
        "{shown}"
    );
    let after = violated(b, code);
    assert!(!after.contains(&"rust-unwrap".to_string()), "{after:?}");
    assert!(after.contains(&"team-no-dbg".to_string()), "{after:?}");

    run(b, &["knowledge", "guard-overrides", "clear"]).success();
    let shown = json_of(a, &["knowledge", "guard-overrides", "show", "--json"]);
    assert_eq!(shown["rules"], Value::Null, "{shown}");
    assert_eq!(violated(a, code), before);
    run(a, &["knowledge", "guard-overrides", "--help"]).success();
}
