//! notifications/cancelled and progress notifications.

use pretty_assertions::assert_eq;
use serde_json::json;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::support::{LIMIT, Session, within};

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

/// Starts `wait_for_cancel` under `id` and waits until it runs; returns its token.
async fn start_waiting_call(s: &mut Session, id: Value) -> CancellationToken {
    s.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "wait_for_cancel", "arguments": {}}}))
        .await;
    s.signals.started_call().await
}

async fn cancel(s: &mut Session, id: Value) {
    s.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "user pressed stop"}),
    )
    .await;
}

#[tokio::test]
async fn cancelling_a_call_cancels_its_pipeline_token_and_is_audited() {
    let mut s = Session::initialized("t").await;
    let token = start_waiting_call(&mut s, json!(7)).await;
    cancel(&mut s, json!(7)).await;
    within(
        LIMIT,
        "notifications/cancelled to cancel the call's token",
        token.cancelled(),
    )
    .await;
    let entry = s.audited().await;
    assert_eq!(
        (entry.tool.as_str(), entry.verdict.as_str()),
        ("wait_for_cancel", "cancelled")
    );
    // The server keeps serving, the cancelled call is never answered, and its id may be used
    // again (`response` fails on any other answer, such as the cancelled call's).
    let r = s.call(7, "echo_text", json!({"text": "after"})).await;
    assert_eq!(r["result"]["structuredContent"], json!({"echo": "after"}));
    s.close().await;
}

/// The real server runs on a multi-threaded runtime, where the cancelled call finishes while
/// the reuse is already running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_reused_right_after_its_cancellation_gets_the_new_calls_answer() {
    let mut s = Session::initialized("t").await;
    for round in 0..20 {
        let token = start_waiting_call(&mut s, json!("job")).await;
        // The cancellation and the reuse arrive together, before the cancelled call has ended.
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": "job"}});
        let reuse = json!({"jsonrpc": "2.0", "id": "job", "method": "tools/call",
            "params": {"name": "echo_text", "arguments": {"text": format!("round {round}")}}});
        s.send_raw(format!("{cancel}\n{reuse}").as_bytes()).await;
        let r = s.response(json!("job")).await;
        assert_eq!(
            r["result"]["structuredContent"],
            json!({"echo": format!("round {round}")}),
            "round {round}"
        );
        within(LIMIT, "the cancelled call's token", token.cancelled()).await;
    }
    // Nothing else is on its way: the next answer is the ping's.
    s.send(json!({"jsonrpc": "2.0", "id": "last", "method": "ping"}))
        .await;
    assert_eq!(s.next().await["id"], json!("last"));
    s.close().await;
}

#[tokio::test]
async fn cancelling_a_request_not_in_progress_changes_nothing() {
    let mut s = Session::initialized("t").await;
    let token = start_waiting_call(&mut s, json!("long")).await;
    // Ids the client never used, or already finished: none of them may reach the running call.
    s.call(2, "echo_text", json!({"text": "done"})).await;
    for id in [
        json!(1),
        json!(2),
        json!(3),
        json!(4),
        json!("other"),
        json!(-1),
    ] {
        cancel(&mut s, id).await;
    }
    let r = s.request(5, "ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    assert!(
        !token.is_cancelled(),
        "an unrelated cancellation reached the call"
    );
    cancel(&mut s, json!("long")).await;
    within(LIMIT, "the call's token", token.cancelled()).await;
    s.close().await;
}
