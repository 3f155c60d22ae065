//! Tool-call round trips for every vendor, streamed and not: the model calls tools, the results
//! go back in the vendor's format, the model answers.

use alembic_llm::fake::{FakeServer, FakeTurn};
use alembic_llm::{
    ChatRequest, ChatResponse, FinishReason, LlmProvider, Message, ProviderKind, Usage,
};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{VENDORS, tools};

fn first_turn() -> FakeTurn {
    FakeTurn::text("Checking.")
        .tool_call("call_a", "read_file", json!({ "path": "src/lib.rs" }))
        .with_thought_signature("sig-read")
        .tool_call("call_b", "search_code", json!({ "query": "fn run" }))
        .with_usage(120, 30)
}

async fn chat(provider: &dyn LlmProvider, request: &ChatRequest) -> ChatResponse {
    provider
        .chat(request, &CancellationToken::new())
        .await
        .unwrap()
}

#[tokio::test]
async fn tool_calls_round_trip_for_every_vendor() {
    for kind in VENDORS {
        for stream in [false, true] {
            let server = FakeServer::start(kind).await.unwrap();
            server.push(first_turn());
            server.push(FakeTurn::text("The crate exposes run().").with_usage(200, 12));
            let provider = server.provider().unwrap();
            let mut request =
                ChatRequest::new("", vec![Message::user("What does the crate export?")]);
            request.tools = tools();
            request.stream = stream;

            let first = chat(&provider, &request).await;
            let names: Vec<(&str, serde_json::Value)> = first
                .tool_calls
                .iter()
                .map(|c| (c.name.as_str(), c.arguments.clone()))
                .collect();
            assert_eq!(
                names,
                vec![
                    ("read_file", json!({ "path": "src/lib.rs" })),
                    ("search_code", json!({ "query": "fn run" }))
                ],
                "{kind} stream={stream}"
            );
            assert_eq!(first.text, "Checking.");
            assert_eq!(
                first.finish_reason,
                FinishReason::ToolCalls,
                "{kind} stream={stream}"
            );
            assert_eq!(
                first.usage,
                Usage {
                    input_tokens: 120,
                    output_tokens: 30
                },
                "{kind} stream={stream}"
            );
            let ids: Vec<&str> = first.tool_calls.iter().map(|c| c.id.as_str()).collect();
            let expected_ids = if kind == ProviderKind::Gemini {
                ["gemini_call_1", "gemini_call_2"]
            } else {
                ["call_a", "call_b"]
            };
            assert_eq!(ids, expected_ids, "{kind}");

            request.messages.push(first.to_assistant_message());
            request.messages.push(Message::tool_result(
                &first.tool_calls[0].id,
                "pub fn run() {}",
            ));
            request.messages.push(Message::tool_result(
                &first.tool_calls[1].id,
                "1 match: src/lib.rs:1",
            ));
            let second = chat(&provider, &request).await;
            assert_eq!(second.text, "The crate exposes run().");
            assert_eq!(second.finish_reason, FinishReason::Stop);
            assert_eq!(second.usage.total(), 212);

            let mode = if stream { "stream" } else { "json" };
            insta::assert_json_snapshot!(
                format!("round_trip_{kind}_{mode}"),
                server.requests()[1].body
            );
        }
    }
}

#[tokio::test]
async fn gemini_echoes_the_thought_signature_with_its_call() {
    let server = FakeServer::start(ProviderKind::Gemini).await.unwrap();
    server.push(first_turn());
    server.push(FakeTurn::text("done"));
    let provider = server.provider().unwrap();
    let mut request = ChatRequest::new("", vec![Message::user("q")]);
    request.tools = tools();
    let first = chat(&provider, &request).await;
    assert_eq!(
        first.tool_calls[0].thought_signature.as_deref(),
        Some("sig-read")
    );
    assert_eq!(first.tool_calls[1].thought_signature, None);
    request.messages.push(first.to_assistant_message());
    request
        .messages
        .push(Message::tool_result("gemini_call_1", "a"));
    request
        .messages
        .push(Message::tool_result("gemini_call_2", "b"));
    chat(&provider, &request).await;
    let body = &server.requests()[1].body;
    assert_eq!(
        body.pointer("/contents/1/parts/1/thoughtSignature"),
        Some(&json!("sig-read"))
    );
    // results go back under the tool's name, in one user turn
    assert_eq!(
        body.pointer("/contents/2/parts/1/functionResponse/name"),
        Some(&json!("search_code"))
    );
}

#[tokio::test]
async fn anthropic_merges_consecutive_tool_results_into_one_user_message() {
    let server = FakeServer::start(ProviderKind::Anthropic).await.unwrap();
    server.push(FakeTurn::text("done"));
    let provider = server.provider().unwrap();
    let request = super::support::rich_request();
    chat(&provider, &request).await;
    let body = &server.requests()[0].body;
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, vec!["user", "assistant", "user"]);
    let kinds: Vec<&str> = body["messages"][2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["tool_result", "tool_result", "text"]);
    assert_eq!(body["messages"][2]["content"][1]["is_error"], json!(true));
}

#[tokio::test]
async fn gemini_3_gets_a_placeholder_signature_for_calls_that_lost_theirs() {
    let history = vec![
        Message::user("q"),
        Message::assistant_with_calls(
            "",
            vec![
                alembic_llm::ToolCall::new("c1", "read_file", json!({ "path": "a" })),
                alembic_llm::ToolCall::new("c2", "read_file", json!({ "path": "b" })),
            ],
        ),
        Message::tool_result("c1", "A"),
        Message::tool_result("c2", "B"),
    ];
    let mut signatures = Vec::new();
    for model in ["gemini-3-flash-preview", "gemini-2.5-flash"] {
        let server = FakeServer::start(ProviderKind::Gemini).await.unwrap();
        server.push(FakeTurn::text("ok"));
        chat(
            &server.provider().unwrap(),
            &ChatRequest::new(model, history.clone()),
        )
        .await;
        let parts = server.requests()[0]
            .body
            .pointer("/contents/1/parts")
            .unwrap()
            .clone();
        signatures.push(
            parts
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.get("thoughtSignature").cloned())
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(
        signatures,
        vec![
            vec![Some(json!("skip_thought_signature_validator")), None],
            vec![None, None]
        ]
    );
}

#[tokio::test]
async fn anthropic_without_tools_tells_earlier_tool_rounds_as_text() {
    let server = FakeServer::start(ProviderKind::Anthropic).await.unwrap();
    server.push(FakeTurn::text("summary"));
    let mut request = super::support::rich_request();
    request.tools.clear();
    chat(&server.provider().unwrap(), &request).await;
    let body = &server.requests()[0].body;
    assert_eq!(body.get("tool_choice"), None);
    insta::assert_json_snapshot!("anthropic_flattened_history", body["messages"]);
}
