//! notifications/cancelled and progress notifications.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::Session;

#[tokio::test]
async fn progress_reports_arrive_before_the_answer() {
    let mut s = Session::initialized("t").await;
    s.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "report_steps", "arguments": {}, "_meta": {"progressToken": "tok-1"}}}))
        .await;
    let r = s.response(json!(5)).await;
    assert_eq!(r["result"]["structuredContent"], json!({"steps": 3}));
    let progress: Vec<_> = s
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .map(|n| n["params"].clone())
        .collect();
    assert_eq!(
        progress,
        [
            json!({"progressToken": "tok-1", "progress": 25.0, "total": 100.0, "message": "scanning"}),
            json!({"progressToken": "tok-1", "progress": 50.0, "total": 100.0, "message": "indexing"}),
            json!({"progressToken": "tok-1", "progress": 51.0, "message": "ranking"}),
        ]
    );
    s.close().await;
}

#[tokio::test]
async fn no_progress_token_means_no_progress_notifications() {
    let mut s = Session::initialized("t").await;
    s.call(5, "report_steps", json!({})).await;
    assert_eq!(s.notifications, Vec::<serde_json::Value>::new());
    s.close().await;
}

#[tokio::test]
async fn cancelling_a_call_cancels_its_pipeline_token_and_is_audited() {
    let mut s = Session::initialized("t").await;
    s.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "wait_for_cancel", "arguments": {}}}))
        .await;
    s.signals.started.notified().await;
    s.notify(
        "notifications/cancelled",
        json!({"requestId": 7, "reason": "user pressed stop"}),
    )
    .await;
    s.signals.cancelled.notified().await;
    let entry = s.audit.recv().await.unwrap();
    assert_eq!(
        (entry.tool.as_str(), entry.verdict.as_str()),
        ("wait_for_cancel", "cancelled")
    );
    // The server keeps serving, and the id of the cancelled request may be used again.
    let r = s.call(7, "echo_text", json!({"text": "after"})).await;
    assert_eq!(r["result"]["structuredContent"], json!({"echo": "after"}));
    s.close().await;
}
