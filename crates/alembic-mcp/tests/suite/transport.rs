//! What the stdio transport answers to messages that are not valid MCP requests.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{LIMIT, Session, init_params, within};

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[tokio::test]
async fn text_that_is_not_json_gets_a_parse_error() {
    let mut s = Session::initialized("t").await;
    s.send_raw(b"{not json").await;
    let r = s.next().await;
    assert_eq!(r["id"], Value::Null);
    assert_eq!(r["error"]["code"], -32700);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("parse error: "),
        "{r}"
    );
    s.close().await;
}

#[tokio::test]
async fn wrong_types_keep_the_id_and_name_the_method() {
    let mut s = Session::initialized("t").await;
    s.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": "x"}))
        .await;
    let r = s.next().await;
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (json!(9), json!(-32602))
    );
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("invalid params for \"tools/call\": "),
        "{r}"
    );
    s.send(json!({"jsonrpc": "1.0", "id": "a", "method": "ping"}))
        .await;
    assert_eq!(
        s.next().await,
        error(
            json!("a"),
            -32600,
            "invalid request: expected a JSON-RPC 2.0 object with \"jsonrpc\": \"2.0\", a string or integer \"id\" and a string \"method\""
        )
    );
    s.send(json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}))
        .await;
    assert_eq!(s.next().await["id"], Value::Null);
    s.close().await;
}

#[tokio::test]
async fn batches_get_one_error_per_request() {
    let mut s = Session::initialized("t").await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        42
    ]);
    s.send(batch).await;
    let text = "batches are not supported (MCP 2025-06-18 removed them); send one JSON-RPC message per line";
    let mut got = vec![s.next().await, s.next().await];
    got.sort_by_key(|v| v["id"].to_string());
    assert_eq!(
        got,
        [
            error(json!(1), -32600, text),
            error(Value::Null, -32600, text)
        ]
    );
    s.send(json!([])).await;
    assert_eq!(
        s.next().await,
        error(
            Value::Null,
            -32600,
            "empty batch; send one JSON-RPC message per line"
        )
    );
    s.close().await;
}

#[tokio::test]
async fn unknown_methods_are_method_not_found() {
    let mut s = Session::initialized("t").await;
    let r = s.request(3, "tools/explode", json!({})).await;
    assert_eq!(r["error"]["code"], -32601);
    s.close().await;
}

#[tokio::test]
async fn an_oversized_line_is_discarded_and_answered() {
    let mut s = Session::initialized("t").await;
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(alembic_mcp::MAX_LINE_BYTES)
    );
    s.send_raw(huge.as_bytes()).await;
    assert_eq!(
        s.next().await,
        error(
            Value::Null,
            -32600,
            &format!(
                "message longer than {} bytes was discarded",
                alembic_mcp::MAX_LINE_BYTES
            )
        )
    );
    let r = s.request(5, "ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    s.close().await;
}

#[tokio::test]
async fn a_reused_id_of_a_running_request_is_refused() {
    let mut s = Session::initialized("t").await;
    s.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "wait_for_cancel", "arguments": {}}}))
        .await;
    let token = s.signals.started_call().await;
    s.send(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}))
        .await;
    assert_eq!(
        s.next().await,
        error(
            json!(7),
            -32600,
            "request id is already used by a request in progress; use a new id"
        )
    );
    // The refusal did not touch the running call.
    assert!(!token.is_cancelled());
    s.notify("notifications/cancelled", json!({"requestId": 7}))
        .await;
    within(LIMIT, "the call's token", token.cancelled()).await;
    s.close().await;
}

#[tokio::test]
async fn messages_before_initialize_do_not_end_the_server() {
    let mut s = Session::start();
    // A notification before initialize makes rmcp give up the handshake; the server restarts it.
    s.notify("notifications/initialized", json!({})).await;
    s.send(json!({"jsonrpc": "2.0", "id": 99, "result": {}}))
        .await;
    // A request before initialize is answered with an error, not dropped.
    let r = s.request(1, "tools/list", json!({})).await;
    assert!(r["error"]["code"].is_i64(), "{r}");
    let r = s.request(2, "ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    let init = s.request(3, "initialize", init_params("late")).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "alembic");
    let r = s.request(4, "tools/list", json!({})).await;
    assert!(r["result"]["tools"].is_array(), "{r}");
    s.close().await;
}
