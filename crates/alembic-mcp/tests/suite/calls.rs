//! tools/list and tools/call: the preset's tools, results, refusals, caller identity.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{ALLOWED, Session};

#[tokio::test]
async fn server_info_names_alembic_and_its_version() {
    let mut s = Session::start();
    let init = s
        .request(1, "initialize", super::support::init_params("t"))
        .await;
    assert_eq!(
        init["result"]["serverInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    s.close().await;
}

#[tokio::test]
async fn tools_list_is_the_allowlist_with_schemas() {
    let mut s = Session::initialized("ide-test").await;
    let list = s.request(2, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    let mut expected = ALLOWED.to_vec();
    expected.sort_unstable();
    assert_eq!(names, expected);
    let echo = tools.iter().find(|t| t["name"] == "echo_text").unwrap();
    assert_eq!(echo["description"], "Echo the text back.");
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    assert_eq!(echo["annotations"]["readOnlyHint"], true);
    s.close().await;
}

#[tokio::test]
async fn a_call_returns_structured_content_and_text_as_the_client_caller() {
    let mut s = Session::initialized("claude-code").await;
    let r = s.call(2, "echo_text", json!({"text": "hi"})).await;
    assert_eq!(
        r["result"],
        json!({
            "content": [{"type": "text", "text": "hi"}],
            "structuredContent": {"echo": "hi"},
            "isError": false
        })
    );
    assert_eq!(*s.signals.seen_callers.lock().unwrap(), ["mcp:claude-code"]);
    let entry = s.audited().await;
    assert_eq!(
        (entry.caller.as_str(), entry.verdict.as_str()),
        ("mcp:claude-code", "ok")
    );
    s.close().await;
}

#[tokio::test]
async fn non_object_data_is_wrapped() {
    let mut s = Session::initialized("t").await;
    let r = s.call(2, "count_items", json!({})).await;
    assert_eq!(r["result"]["structuredContent"], json!({"result": 3}));
    s.close().await;
}

fn error_text(r: &Value) -> String {
    assert_eq!(r["result"]["isError"], true, "{r}");
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn refusals_and_bad_calls_are_error_results_and_audited() {
    let mut s = Session::initialized("t").await;
    let cases = [
        (
            "write_thing",
            json!({}),
            "error (blocked, rule safety.default_read_only): tool \"write_thing\" has effect writes_project_files and only read-only tools are allowed without a safety policy",
            "blocked",
        ),
        (
            "hidden_tool",
            json!({}),
            "error (blocked, rule allowlist): tool \"hidden_tool\" is not available to caller \"mcp:t\"",
            "blocked",
        ),
        ("echo_text", json!({"text": 5}), "", "invalid_arguments"),
        (
            "no_such_tool",
            json!({}),
            "error (unknown_tool): unknown tool \"no_such_tool\"",
            "unknown_tool",
        ),
    ];
    for (i, (tool, args, text, verdict)) in cases.into_iter().enumerate() {
        let r = s.call(10 + i as i64, tool, args).await;
        let got = error_text(&r);
        if !text.is_empty() {
            assert_eq!(got, text);
        } else {
            assert!(got.starts_with("error (invalid_arguments)"), "{got}");
        }
        assert_eq!(r["result"]["structuredContent"]["status"], verdict);
        let entry = s.audited().await;
        assert_eq!(
            (entry.tool.as_str(), entry.verdict.as_str()),
            (tool, verdict)
        );
    }
    s.close().await;
}

#[tokio::test]
async fn concurrent_calls_run_at_the_same_time_and_each_gets_its_answer() {
    let mut s = Session::initialized("t").await;
    let width = super::support::BARRIER_WIDTH as i64;
    // Every call waits at a barrier of this width: they only finish if they run concurrently.
    for n in 0..width {
        s.send(
            json!({"jsonrpc": "2.0", "id": 100 + n, "method": "tools/call",
            "params": {"name": "meet_at_barrier", "arguments": {"n": n}}}),
        )
        .await;
    }
    let mut seen = Vec::new();
    for _ in 0..width {
        let msg = s.next().await;
        let id = msg["id"].as_i64().unwrap();
        assert_eq!(msg["result"]["structuredContent"]["n"], json!(id - 100));
        seen.push(id);
    }
    seen.sort_unstable();
    assert_eq!(seen, (100..100 + width).collect::<Vec<_>>());
    s.close().await;
}
