//! Issue 36, hole 2, over HTTP: a saved generated tool that calls itself (and a mutually
//! recursive pair) used to abort the whole server with every session in 0.5 s. Now the call
//! ends with a `nesting.depth` refusal, and the other sessions, opened before, keep working.
//!
//! The project is real: `[forge] generate = true` in its config and the generated tools saved
//! in `.alembic/tools/`, loaded by the runtime as `alembic mcp --http` would load them.

use std::sync::Arc;

use alembic_mcp::{AlembicServer, HttpOptions};
use alembic_runtime::ProjectRuntime;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::http::{Client, HttpFixture, call};
use super::support::TestServer;

fn generated(name: &str, code: &str) -> String {
    json!({
        "kind": "generated",
        "name": name,
        "description": format!("generated test tool {name}"),
        "parameters": {"type": "object", "properties": {}},
        "code": code,
        "testCases": [{"description": "never run here", "input": {}, "expectedOutput": null}],
    })
    .to_string()
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join(".alembic/tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(dir.path().join("README.md"), format!("# {README_MARK}\n")).unwrap();
    std::fs::write(
        dir.path().join(".alembic/config.toml"),
        "[forge]\ngenerate = true\n",
    )
    .unwrap();
    for (name, code) in [
        (
            "self_call",
            "function toolHandler(p, tools) { return tools.call('self_call', {}); }",
        ),
        (
            "ping_a",
            "function toolHandler(p, tools) { return {a: tools.call('ping_b', {})}; }",
        ),
        (
            "ping_b",
            "async function toolHandler(p, tools) { return {b: await tools.call('ping_a', {})}; }",
        ),
    ] {
        std::fs::write(tools.join(format!("{name}.json")), generated(name, code)).unwrap();
    }
    dir
}

/// A `tools/call` on `client`; its `result`.
async fn tool_call(client: &Client, id: i64, tool: &str, args: Value) -> Value {
    let (answer, _) = client.request(&call(json!(id), tool, args)).await;
    answer["result"].clone()
}

const README_MARK: &str = "recursion-test-project";

/// A call that must work: a read of the project's README.
async fn assert_serves(client: &Client, id: i64, who: &str) {
    let r = tool_call(
        client,
        id,
        "read_project_file",
        json!({"filePath": "README.md"}),
    )
    .await;
    assert_eq!(r["isError"], json!(false), "{who}: {r}");
    assert!(r.to_string().contains(README_MARK), "{who}: {r}");
}

fn assert_depth_refusal(result: &Value, chain_end: &str) {
    assert_eq!(result["isError"], json!(true), "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("error (blocked, rule nesting.depth): nested call refused: depth 9"),
        "{text}"
    );
    assert!(text.ends_with(chain_end), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_calling_forged_tool_leaves_the_server_and_other_sessions_alive() {
    let dir = project();
    let runtime = Arc::new(ProjectRuntime::open(dir.path()).unwrap());
    let mut forged = runtime.forged_tools().to_vec();
    forged.sort();
    assert_eq!(forged, ["ping_a", "ping_b", "self_call"]);
    let mut test = TestServer::new();
    test.server = AlembicServer::new(runtime, None).unwrap();
    let fixture = HttpFixture::start_with(test, |_| HttpOptions::default()).await;

    let mut clients = Vec::new();
    for _ in 0..3 {
        let mut c = Client::new(&fixture.url, "2025-06-18");
        c.initialize().await;
        clients.push(c);
    }
    for (i, c) in clients.iter().enumerate() {
        assert_serves(c, 2, &format!("session {i} before")).await;
    }

    // The attacker's session runs the recursions while the others make calls at the same time.
    let attacker = &clients[0];
    let attack = async {
        let a = tool_call(attacker, 3, "self_call", json!({})).await;
        let b = tool_call(attacker, 4, "ping_a", json!({})).await;
        (a, b)
    };
    let others = async {
        for round in 0..3 {
            for (i, c) in clients[1..].iter().enumerate() {
                assert_serves(c, 10 + round, &format!("session {} during", i + 1)).await;
            }
        }
    };
    let ((self_call, ping), ()) = tokio::join!(attack, others);
    assert_depth_refusal(
        &self_call,
        "chain: self_call → self_call → self_call → …(1 more)… → self_call → self_call → \
         self_call → self_call → self_call",
    );
    assert_depth_refusal(
        &ping,
        "chain: ping_a → ping_b → ping_a → …(1 more)… → ping_a → ping_b → ping_a → ping_b → \
         ping_a",
    );

    // Every session, the attacker's included, is still served, and a new one can start.
    for (i, c) in clients.iter().enumerate() {
        assert_serves(c, 20, &format!("session {i} after")).await;
    }
    let mut late = Client::new(&fixture.url, "2025-06-18");
    late.initialize().await;
    assert_serves(&late, 2, "a new session").await;
    let again = tool_call(&late, 3, "self_call", json!({})).await;
    assert_depth_refusal(&again, "self_call → self_call");
}
