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

fn fresh_team(label: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{label}-{}-{nanos}", std::process::id())
}

/// Submits, approves and publishes a recipe through `rt` (caller `cli`); returns its id.
async fn publish(rt: &ProjectRuntime, title: &str, markdown: &str) -> String {
    let args = json!({"title": title, "content": {"markdown": markdown, "pattern": "retry(3) { send() }"},
        "sources": ["src/client.rs"]});
    let submitted = rt.call_as_cli("submit_knowledge", args).await;
    assert!(submitted.is_ok(), "{}", submitted.text_for_model());
    let id = submitted.output.unwrap().data["id"]
        .as_str()
        .unwrap()
        .to_string();
    for (tool, arg) in [
        ("approve_candidate", "candidateId"),
        ("publish_recipe", "recipeId"),
    ] {
        let moved = rt.call_as_cli(tool, json!({ arg: id })).await;
        assert!(moved.is_ok(), "{}", moved.text_for_model());
    }
    id
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_session_sees_a_recipe_published_from_another_checkout() {
    let team = fresh_team("mcp");
    let (a, b) = (checkout(&team), checkout(&team));
    let publisher = ProjectRuntime::open(a.path()).unwrap();
    let id = publish(
        &publisher,
        "Retry requests with backoff",
        "Client.send retries 3 times with exponential backoff",
    )
    .await;

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

/// A gate in front of the tests' PostgreSQL server: while closed it drops every connection at
/// once (a server that refuses), counting them; once opened it relays them.
struct Gate {
    port: u16,
    open: Arc<std::sync::atomic::AtomicBool>,
    refused: Arc<std::sync::atomic::AtomicUsize>,
}

async fn gate(server: String) -> Gate {
    use std::sync::atomic::Ordering;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let open = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let refused = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (is_open, count) = (Arc::clone(&open), Arc::clone(&refused));
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                return;
            };
            if !is_open.load(Ordering::SeqCst) {
                count.fetch_add(1, Ordering::SeqCst);
                drop(client);
                continue;
            }
            let server = server.clone();
            tokio::spawn(async move {
                if let Ok(mut pg) = tokio::net::TcpStream::connect(server).await {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut pg).await;
                }
            });
        }
    });
    Gate {
        port,
        open,
        refused,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_team_server_down_requests_answer_at_once_and_polling_backs_off_then_recovers() {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    let team = fresh_team("mcp-down");
    let publisher = checkout(&team);
    let url = std::fs::read_to_string(publisher.path().join(".alembic/config.toml")).unwrap();
    let real = url
        .split("@")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_string();
    let gate = gate(real.clone()).await;
    let ide = checkout(&team);
    let config = std::fs::read_to_string(ide.path().join(".alembic/config.toml"))
        .unwrap()
        .replace(&real, &format!("127.0.0.1:{}", gate.port));
    std::fs::write(
        ide.path().join(".alembic/config.toml"),
        format!("{config}connect_timeout_secs = 2\n"),
    )
    .unwrap();
    std::fs::write(ide.path().join("README.md"), "hello\n").unwrap();

    let runtime = Arc::new(ProjectRuntime::open(ide.path()).unwrap());
    let mut test = TestServer::new();
    test.server = AlembicServer::new(runtime, None)
        .unwrap()
        .with_poll_interval(Duration::from_millis(50));
    let mut s = Session::start_with(test);
    s.request(1, "initialize", init_params("ide")).await;
    s.notify("notifications/initialized", json!({})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        gate.refused.load(Ordering::SeqCst) >= 1,
        "the watcher polled"
    );

    let started = Instant::now();
    let tools = s.request(2, "tools/list", json!({})).await;
    assert!(tools["result"]["tools"].as_array().unwrap().len() > 10);
    let read = s
        .call(3, "read_project_file", json!({"path": "README.md"}))
        .await;
    assert_eq!(read["result"]["isError"], json!(false), "{read}");
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    // the watcher backs off: a few probes in 3 s, not one per 50 ms poll
    let before = gate.refused.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let probes = gate.refused.load(Ordering::SeqCst) - before;
    assert!((1..=6).contains(&probes), "{probes} probes in 3 s");

    // the server is back and a recipe is published from the other checkout: the session
    // hears of it once the next probe finds the server
    gate.open.store(true, Ordering::SeqCst);
    let rt = ProjectRuntime::open(publisher.path()).unwrap();
    let id = publish(
        &rt,
        "Log failed requests once",
        "Client.send logs a failed request once",
    )
    .await;
    let waited = Instant::now();
    loop {
        let msg = s.next().await;
        if msg["method"] == "notifications/resources/list_changed" {
            break;
        }
        assert!(waited.elapsed() < Duration::from_secs(15), "{msg}");
    }
    let list = s.request(4, "resources/list", json!({})).await;
    let uri = format!("alembic://recipe/{id}");
    assert!(list.to_string().contains(&uri), "{list}");
    s.close().await;
}
