//! Chat runs with an exploration tracker: `auto` tool choice while exploring, tools off with
//! a nudge once the tools bring nothing new, and planning nudges that follow a plan the model
//! recorded with `plan_task`.

use alembic_agent::StageLimits;
use alembic_llm::fake::{FakeReply, FakeTurn, RecordedRequest};
use alembic_llm::{ProviderKind, ToolChoice};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Harness, user_messages};

#[tokio::test]
async fn a_saturated_chat_is_told_to_answer_and_loses_its_tools() {
    let h = Harness::new(ProviderKind::OpenAi).await;
    // The model searches the same thing until it is told to answer (or has no tools).
    h.server.respond_with(|req| {
        if req.offered_tools().is_empty() {
            FakeTurn::text("PaymentCoordinator owns a PaymentRepository.").into()
        } else {
            FakeTurn::new()
                .tool_call("c", "search_project_code", json!({"pattern": "Payment"}))
                .into()
        }
    });
    let report = h.ask("chat", "What is in Payment?").await;
    let requests = h.requests();
    assert_eq!(requests[0].tool_choice(), Some(ToolChoice::Auto));
    // Round 1 found files; rounds 2–4 found nothing new: round 5 is asked to answer.
    assert_eq!(report.rounds, 5);
    assert_eq!(requests.len(), 5);
    assert_eq!(requests[4].offered_tools(), Vec::<String>::new());
    let last = user_messages(&requests[4]).last().cloned().unwrap();
    assert!(last.contains("answer the question"), "{last}");
    assert_eq!(
        report.answer,
        "PaymentCoordinator owns a PaymentRepository."
    );
}

/// Plan: search PaymentCoordinator, then read PaymentRepository. The model searches the
/// first, then wanders off the plan for three rounds; it answers once it is shown a plan check.
fn planner(req: &RecordedRequest) -> FakeReply {
    if user_messages(req).iter().any(|m| m.contains("Plan check")) {
        return FakeTurn::text("Back to the plan: PaymentRepository is a protocol.").into();
    }
    let call = |name: &str, args| FakeTurn::new().tool_call("c", name, args).into();
    match req.tool_results().len() {
        0 => call(
            "plan_task",
            json!({"goal": "Understand Payment", "steps": [
                {"description": "Search `PaymentCoordinator`", "tool": "search_project_code"},
                {"description": "Read `PaymentRepository`", "tool": "read_project_file"}
            ]}),
        ),
        1 => call(
            "search_project_code",
            json!({"pattern": "PaymentCoordinator"}),
        ),
        // Off the plan (a search, but not for PaymentCoordinator), yet finding things, so the
        // chat is not saturated before the drift is noticed.
        n => {
            let pattern = ["load", "init", "protocol", "func"][(n - 2).min(3)];
            call("search_project_code", json!({"pattern": pattern}))
        }
    }
}

#[tokio::test]
async fn plan_task_feeds_the_plan_tracker_of_a_chat() {
    let h = Harness::new(ProviderKind::OpenAi)
        .await
        .limits(StageLimits {
            chat_iterations: 20,
            ..StageLimits::default()
        });
    h.server.respond_with(planner);
    let report = h.ask("chat", "Explain the Payment module").await;
    assert_eq!(
        report.answer,
        "Back to the plan: PaymentRepository is a protocol."
    );
    let check = h
        .requests()
        .iter()
        .flat_map(user_messages)
        .find(|m| m.contains("Plan check"))
        .expect("a plan check nudge");
    assert!(
        check.contains("✅ Done (1/2):\n- Search `PaymentCoordinator`")
            && check.contains("⏳ Pending (1/2):\n- Read `PaymentRepository`"),
        "{check}"
    );
}
