//! Over MCP, an IDE agent in one checkout sees the knowledge its team published from another
//! checkout: the `alembic://recipe/{id}` resource and the knowledge tools read the team's
//! store (`[team]`), against the tests' PostgreSQL server (`ALEMBIC_TEST_PG_URL`).

use std::sync::Arc;

use alembic_mcp::AlembicServer;
use alembic_runtime::ProjectRuntime;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Session, TestServer, init_params};

fn checkout(team: &str) -> tempfile::TempDir {
    let url = std::env::var("ALEMBIC_TEST_PG_URL").unwrap_or_else(|_| {
        panic!(
            "ALEMBIC_TEST_PG_URL is not set: this test needs a PostgreSQL server; run \
             `export ALEMBIC_TEST_PG_URL=$(scripts/setup-postgres)` (or scripts/test, which does it)"
        )
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".alembic")).unwrap();
    let config = format!("[team]\nurl = \"{url}\"\nteam = \"{team}\"\nauthor = \"ana\"\n");
    std::fs::write(dir.path().join(".alembic/config.toml"), config).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_session_sees_a_recipe_published_from_another_checkout() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let team = format!("mcp-{}-{nanos}", std::process::id());
    let (a, b) = (checkout(&team), checkout(&team));
    let publisher = ProjectRuntime::open(a.path()).unwrap();
    let args = json!({"title": "Retry requests with backoff",
        "content": {"markdown": "Client.send retries 3 times with exponential backoff", "pattern": "retry(3) { send() }"},
        "sources": ["src/client.rs"]});
    let submitted = publisher.call_as_cli("submit_knowledge", args).await;
    assert!(submitted.is_ok(), "{}", submitted.text_for_model());
    let id = submitted.output.unwrap().data["id"]
        .as_str()
        .unwrap()
        .to_string();
    for (tool, arg) in [
        ("approve_candidate", "candidateId"),
        ("publish_recipe", "recipeId"),
    ] {
        let moved = publisher.call_as_cli(tool, json!({ arg: id })).await;
        assert!(moved.is_ok(), "{}", moved.text_for_model());
    }

    let runtime = Arc::new(ProjectRuntime::open(b.path()).unwrap());
    let mut test = TestServer::new();
    test.server = AlembicServer::new(runtime, None).unwrap();
    let mut s = Session::start_with(test);
    s.request(1, "initialize", init_params("ide")).await;
    s.notify("notifications/initialized", json!({})).await;
    let uri = format!("alembic://recipe/{id}");
    let list = s.request(2, "resources/list", json!({})).await;
    let uris: Vec<&str> = list["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&uri.as_str()), "{uris:?}");
    let read = s.request(3, "resources/read", json!({"uri": uri})).await;
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    let entry: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(entry["title"], "Retry requests with backoff");
    assert_eq!(entry["status"], "published");
    let found = s
        .call(4, "search_recipes", json!({"keyword": "backoff"}))
        .await;
    assert_eq!(
        found["result"]["structuredContent"]["total"],
        json!(1),
        "{found}"
    );
    s.close().await;
}
