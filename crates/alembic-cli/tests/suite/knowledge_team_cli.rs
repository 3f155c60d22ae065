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

#[test]
fn init_pushes_local_knowledge_once_and_both_checkouts_review_on_the_team_store() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let team = format!("cli-k-{}-{nanos}", std::process::id());
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (a.path(), b.path());
    // a recipe published in a before the team existed lives in a's project database
    let local = submit(a, "Retry requests with backoff");
    for step in ["approve", "publish"] {
        run(a, &["knowledge", step, &local]).success();
    }
    let config = format!(
        "[team]\nurl = \"{}\"\nteam = \"{team}\"\nauthor = \"ci\"\n",
        pg_url()
    );
    for dir in [a, b] {
        std::fs::create_dir_all(dir.join(".alembic")).unwrap();
        std::fs::write(dir.join(".alembic/config.toml"), &config).unwrap();
    }
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
