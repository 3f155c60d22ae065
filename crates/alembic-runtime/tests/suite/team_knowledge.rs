//! The knowledge base of a team in two project checkouts, through each project's runtime
//! (config, services, pipeline), against the real PostgreSQL server of the tests
//! (`ALEMBIC_TEST_PG_URL`, started by scripts/test): a recipe published in one is found by a
//! search in the other; bootstrap publishes its candidates; a server that is down stops
//! knowledge calls only, fast and naming it.

use std::time::{Duration, Instant};

use alembic_runtime::ProjectRuntime;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

pub(super) fn pg_url() -> String {
    std::env::var("ALEMBIC_TEST_PG_URL").unwrap_or_else(|_| {
        panic!(
            "ALEMBIC_TEST_PG_URL is not set: this test needs a PostgreSQL server; run \
             `export ALEMBIC_TEST_PG_URL=$(scripts/setup-postgres)` (or scripts/test, which does it)"
        )
    })
}

pub(super) fn fresh_team(label: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{label}-{}-{nanos}", std::process::id())
}

pub(super) fn checkout(url: &str, team: &str, author: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".alembic")).unwrap();
    let config = format!(
        "[team]\nurl = \"{url}\"\nteam = \"{team}\"\nauthor = \"{author}\"\nconnect_timeout_secs = 2\n"
    );
    std::fs::write(dir.path().join(".alembic/config.toml"), config).unwrap();
    dir
}

pub(super) async fn ok(rt: &ProjectRuntime, tool: &str, args: Value) -> Value {
    let outcome = rt.call_as_cli(tool, args).await;
    assert!(outcome.is_ok(), "{tool}: {}", outcome.text_for_model());
    outcome.output.unwrap().data
}

fn candidate(title: &str) -> Value {
    json!({
        "title": title,
        "description": "How the project retries failed requests",
        "content": {
            "markdown": "Requests go through `Net/Client.swift`, which retries with exponential backoff and jitter, three times at most, and gives up on 4xx answers because those will not succeed on a retry.",
            "pattern": "func send(_ r: Request) async throws -> Response {\n    try await retry(times: 3) { try await session.data(for: r) }\n}",
            "rationale": "transient failures"
        },
        "kind": "pattern",
        "sources": ["Net/Client.swift"],
        "tags": ["network"]
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recipe_published_in_one_checkout_is_found_by_a_search_in_the_other() {
    let team = fresh_team("rt-knowledge");
    let (a, b) = (
        checkout(&pg_url(), &team, "ana"),
        checkout(&pg_url(), &team, "bo"),
    );
    let (a, b) = (
        ProjectRuntime::open(a.path()).unwrap(),
        ProjectRuntime::open(b.path()).unwrap(),
    );
    let id = ok(
        &a,
        "submit_knowledge",
        candidate("Retry failed requests with backoff"),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        ok(&b, "search_recipes", json!({"keyword": "backoff"})).await["total"],
        0,
        "a candidate is not a recipe yet"
    );
    ok(&b, "approve_candidate", json!({"candidateId": id})).await;
    ok(&a, "publish_recipe", json!({"recipeId": id})).await;
    let found = ok(&b, "search_recipes", json!({"keyword": "retry backoff"})).await;
    assert_eq!(found["total"], 1, "{found}");
    let detail = ok(&b, "get_recipe_detail", json!({"recipeId": id})).await;
    let by: Vec<&str> = detail["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["by"].as_str().unwrap())
        .collect();
    assert_eq!(by, vec!["cli", "cli", "cli"]);
    // neither checkout's project database holds it: the knowledge base is the team's
    let local = b
        .services()
        .knowledge
        .with_local(|kb| kb.list(&Default::default()))
        .unwrap();
    assert!(local.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn knowledge_calls_fail_fast_naming_the_server_when_it_is_down() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = checkout(
        &format!("postgres://alembic@127.0.0.1:{port}/alembic"),
        "ops",
        "ana",
    );
    let rt = ProjectRuntime::open(dir.path()).unwrap();
    let started = Instant::now();
    let outcome = rt
        .call_as_cli("search_recipes", json!({"keyword": "backoff"}))
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(!outcome.is_ok());
    let text = outcome.text_for_model();
    assert!(
        text.contains(&format!(
            "team server 127.0.0.1:{port}/alembic is unreachable"
        )),
        "{text}"
    );
    // local work goes on: a project memory is still remembered
    let remembered = rt
        .call_as_cli(
            "memory_remember",
            json!({"content": "The build uses cargo nextest", "scope": "project"}),
        )
        .await;
    assert!(remembered.is_ok(), "{}", remembered.text_for_model());
}

#[tokio::test(flavor = "multi_thread")]
async fn bootstrap_publishes_its_candidates_to_the_team_once() {
    let team = fresh_team("rt-bootstrap");
    let dir = checkout(&pg_url(), &team, "ana");
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "mod store;\nfn main() {\n    let s = store::Store::shared();\n    println!(\"{}\", s.len());\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/store.rs"),
        "pub struct Store { items: Vec<String> }\n\nimpl Store {\n    pub fn shared() -> Store {\n        Store { items: Vec::new() }\n    }\n\n    pub fn len(&self) -> usize {\n        self.items.unwrap().len()\n    }\n}\n",
    )
    .unwrap();
    std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"p\"\n").unwrap();
    let rt = ProjectRuntime::open(root).unwrap();
    let report = ok(&rt, "bootstrap_knowledge", json!({})).await;
    let created = report["candidates"].as_array().unwrap().len();
    assert!(created > 0, "{report}");
    assert_eq!(report["team"]["published"], json!(created), "{report}");
    // the local run committed them in the project database, then moved them: the team holds
    // them with the same ids and this checkout keeps no second copy
    assert_eq!(report["team"]["removedHere"], json!(created), "{report}");
    let local = rt
        .services()
        .knowledge
        .with_local(|kb| kb.list(&Default::default()))
        .unwrap();
    assert!(local.is_empty(), "{local:?}");
    let ids: Vec<String> = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    let other = ProjectRuntime::open(checkout(&pg_url(), &team, "bo").path()).unwrap();
    let on_team: Vec<String> = other
        .services()
        .knowledge
        .with(|kb| kb.list(&Default::default()))
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(on_team.len(), created);
    assert!(
        on_team.iter().all(|id| ids.contains(id)),
        "{on_team:?} {ids:?}"
    );
    // a second run publishes nothing twice
    let again = ok(&rt, "bootstrap_knowledge", json!({"force": true})).await;
    assert_eq!(again["team"]["published"], json!(0), "{again}");
    assert_eq!(again["team"]["alreadyThere"], json!(created), "{again}");

    // new evidence (the lines of src/store.rs moved): the next run revises the team's
    // candidates that cite it, nobody having reviewed them, and never adds a second copy
    let team_entries = || {
        other
            .services()
            .knowledge
            .with(|kb| kb.list(&Default::default()))
            .unwrap()
    };
    let before = team_entries();
    let store = std::fs::read_to_string(root.join("src/store.rs")).unwrap();
    std::fs::write(
        root.join("src/store.rs"),
        format!("// the store\n\n{store}"),
    )
    .unwrap();
    let third = ok(&rt, "bootstrap_knowledge", json!({"force": true})).await;
    let revised: Vec<&str> = third["team"]["revised"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    assert!(!revised.is_empty(), "{third}");
    assert_eq!(third["team"]["published"], json!(0), "{third}");
    assert_eq!(third["team"]["conflicts"], json!([]), "{third}");
    let after = team_entries();
    assert_eq!(after.len(), created);
    for e in &after {
        let old = before.iter().find(|b| b.id == e.id).unwrap();
        if revised.contains(&e.id.as_str()) {
            assert_eq!(e.version, old.version + 1, "{}", e.id);
            assert_ne!(
                e.extra.get("evidence"),
                old.extra.get("evidence"),
                "{}",
                e.id
            );
        } else {
            assert_eq!(e, old);
        }
    }
    let local = rt
        .services()
        .knowledge
        .with_local(|kb| kb.list(&Default::default()))
        .unwrap();
    assert!(local.is_empty(), "{local:?}");
}
