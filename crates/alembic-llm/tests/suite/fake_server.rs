//! The fake servers themselves: vendor-neutral request readers and request-dependent replies,
//! which the agent crate's tests build on.

use alembic_llm::fake::{FakeReply, FakeServer, FakeTurn};
use alembic_llm::{ChatRequest, LlmError, LlmProvider, Message, ToolChoice};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{VENDORS, rich_request};

#[tokio::test]
async fn requests_read_the_same_whatever_the_vendor() {
    for kind in VENDORS {
        let server = FakeServer::start(kind).await.unwrap();
        server.push(FakeTurn::text("ok"));
        let mut request = rich_request();
        request.stream = true;
        server
            .provider()
            .unwrap()
            .chat(&request, &CancellationToken::new())
            .await
            .unwrap();
        let recorded = &server.requests()[0];
        let seen = (
            recorded.system_prompt(),
            recorded.offered_tools(),
            recorded.tool_choice(),
            recorded.tool_results(),
            recorded.is_stream(),
        );
        assert_eq!(
            seen,
            (
                "You are a code analyst.\n\nAnswer in English.".to_owned(),
                vec!["search_code".to_owned(), "read_file".to_owned()],
                Some(ToolChoice::Required),
                vec![
                    "3 matches in src/payment/".to_owned(),
                    "file not found: src/payment.rs".to_owned()
                ],
                true,
            ),
            "{kind}"
        );
        // OpenAI keeps one message per tool result; the others merge them into one user turn.
        let turns = if kind == alembic_llm::ProviderKind::OpenAi {
            5
        } else {
            3
        };
        assert_eq!(recorded.turn_count(), turns, "{kind}");
    }
}

#[tokio::test]
async fn a_responder_lets_the_fake_model_react_to_its_prompt() {
    const FACT: &str = "Payment uses Coordinator + Repository";
    for kind in VENDORS {
        let server = FakeServer::start(kind).await.unwrap();
        server.respond_with(|request| {
            if request.system_prompt().contains(FACT) {
                FakeTurn::text("From memory: Coordinator + Repository.").into()
            } else {
                FakeTurn::new()
                    .tool_call(
                        "call_1",
                        "get_class_hierarchy",
                        json!({ "module": "Payment" }),
                    )
                    .into()
            }
        });
        let provider = server.provider().unwrap();
        let mut request = ChatRequest::new("", vec![Message::user("Payment design patterns?")]);
        let first = provider
            .chat(&request, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(first.tool_calls[0].name, "get_class_hierarchy", "{kind}");
        request.system = format!("Known: {FACT}");
        let second = provider
            .chat(&request, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(
            second.text, "From memory: Coordinator + Repository.",
            "{kind}"
        );
    }
}

#[tokio::test]
async fn queued_replies_come_before_the_responder_and_running_out_is_an_error() {
    let server = FakeServer::start(alembic_llm::ProviderKind::OpenAi)
        .await
        .unwrap();
    server.push(FakeTurn::text("queued"));
    let mut config = server.provider_config();
    config.retry = alembic_llm::RetryPolicy::none();
    let provider = alembic_llm::HttpProvider::new(config).unwrap();
    let request = ChatRequest::new("", vec![Message::user("q")]);
    assert_eq!(
        provider
            .chat(&request, &CancellationToken::new())
            .await
            .unwrap()
            .text,
        "queued"
    );
    let error = provider
        .chat(&request, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::Http { status: 500, .. }));
    assert_eq!(
        error.to_string(),
        "openai returned http 500: fake server: no scripted reply left"
    );
    server.respond_with(|_| FakeReply::error(418, "teapot"));
    assert_eq!(
        provider
            .chat(&request, &CancellationToken::new())
            .await
            .unwrap_err()
            .status(),
        Some(418)
    );
}
