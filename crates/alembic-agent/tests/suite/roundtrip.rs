//! Tool-call round trips through the real loop and pipeline, for each vendor's wire format.

use alembic_agent::StageEnd;
use alembic_llm::ProviderKind;
use alembic_llm::fake::FakeTurn;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::Harness;

async fn round_trip(kind: ProviderKind) {
    let h = Harness::new(kind).await;
    h.server
        .push(
            FakeTurn::new()
                .tool_call(
                    "call_1",
                    "search_project_code",
                    json!({"pattern": "PaymentRepository"}),
                )
                .with_usage(900, 20),
        )
        .push(
            FakeTurn::text("PaymentCoordinator depends on the PaymentRepository protocol.")
                .with_usage(1400, 40),
        );
    let report = h
        .ask("chat", "What does PaymentCoordinator depend on?")
        .await;

    assert_eq!(
        report.answer,
        "PaymentCoordinator depends on the PaymentRepository protocol."
    );
    assert_eq!(report.rounds, 2);
    assert_eq!(report.tool_names(), vec!["search_project_code"]);
    assert_eq!(report.tool_calls[0].status, "ok");
    assert_eq!(report.stages[0].end, StageEnd::Answered);
    assert_eq!(
        (report.usage.input_tokens, report.usage.output_tokens),
        (2300, 60)
    );

    let requests = h.requests();
    assert_eq!(requests.len(), 2);
    let results = requests[1].tool_results();
    assert_eq!(results.len(), 1, "{kind:?}: one tool result sent back");
    assert!(
        results[0].contains("PaymentRepository.swift"),
        "{kind:?}: the search result reaches the model: {}",
        results[0]
    );
    // The chat preset's tools are offered on every round, the choice left to the model.
    assert!(
        requests[0]
            .offered_tools()
            .contains(&"note_finding".to_string())
    );
    assert!(
        !requests[0]
            .offered_tools()
            .contains(&"submit_with_check".to_string())
    );
    assert_eq!(
        requests[0].tool_choice(),
        Some(alembic_llm::ToolChoice::Auto)
    );
}

#[tokio::test]
async fn openai_tool_call_round_trip() {
    round_trip(ProviderKind::OpenAi).await;
}

#[tokio::test]
async fn anthropic_tool_call_round_trip() {
    round_trip(ProviderKind::Anthropic).await;
}

#[tokio::test]
async fn gemini_tool_call_round_trip() {
    round_trip(ProviderKind::Gemini).await;
}

#[tokio::test]
async fn streamed_text_arrives_as_events() {
    let mut h = Harness::new(ProviderKind::OpenAi).await;
    h.options.stream = true;
    h.server
        .push(FakeTurn::text("Streamed answer about Payment."));
    let report = h.ask("chat", "Say something").await;
    assert_eq!(report.answer, "Streamed answer about Payment.");
    assert!(h.requests()[0].is_stream());
    let streamed: String = h
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            alembic_agent::AgentEvent::TextDelta { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "Streamed answer about Payment.");
}

#[tokio::test]
async fn first_request_snapshot() {
    let h = Harness::new(ProviderKind::OpenAi).await;
    h.server.push(FakeTurn::text("ok"));
    h.ask("chat", "Which pattern does the Payment module use?")
        .await;
    let request = &h.requests()[0];
    insta::assert_snapshot!("chat_first_request_system_prompt", h.system_prompt(0));
    insta::assert_json_snapshot!(
        "chat_first_request_shape",
        json!({
            "tools": request.offered_tools(),
            "tool_choice": request.tool_choice(),
            "messages": request.body["messages"].as_array().unwrap().iter().skip(1).collect::<Vec<_>>(),
            "temperature": request.body["temperature"],
            "max_tokens": request.body.get("max_tokens").or(request.body.get("max_completion_tokens")),
        })
    );
}
