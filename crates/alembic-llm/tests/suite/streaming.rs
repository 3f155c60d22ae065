//! Streamed replies: event order, reassembly across network chunks, vendor errors inside a
//! stream, cut-off streams and silent streams.

use std::time::Duration;

use alembic_llm::fake::{FakeReply, FakeServer, FakeTurn};
use alembic_llm::{
    ChatRequest, HttpProvider, LlmError, LlmProvider, ManualClock, Message, ProviderKind,
    StreamEvent,
};
use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{VENDORS, tools};

fn request() -> ChatRequest {
    let mut request = ChatRequest::new("", vec![Message::user("q")]);
    request.tools = tools();
    request
}

async fn events(provider: &HttpProvider) -> Vec<Result<StreamEvent, LlmError>> {
    let stream = provider
        .chat_stream(&request(), &CancellationToken::new())
        .await
        .unwrap();
    stream.collect().await
}

fn kind_of(event: &StreamEvent) -> &'static str {
    match event {
        StreamEvent::TextDelta { .. } => "text",
        StreamEvent::ToolCallDelta { .. } => "call-delta",
        StreamEvent::ToolCall { .. } => "call",
        StreamEvent::MalformedToolCall { .. } => "malformed",
        StreamEvent::Usage { .. } => "usage",
        StreamEvent::Done { .. } => "done",
    }
}

#[tokio::test]
async fn streamed_and_whole_replies_agree_for_every_vendor() {
    let text = "Payment 模块使用 Coordinator + Repository 模式。";
    for kind in VENDORS {
        let server = FakeServer::start(kind).await.unwrap();
        let turn = FakeTurn::text(text)
            .tool_call("call_1", "read_file", json!({ "path": "支付.rs" }))
            .with_usage(40, 9);
        server.push(turn.clone());
        server.push(turn);
        let streamed: Vec<StreamEvent> = events(&server.provider().unwrap())
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let whole = server
            .provider()
            .unwrap()
            .chat(&request(), &CancellationToken::new())
            .await
            .unwrap();

        let deltas: String = streamed
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, text, "{kind}");
        let Some(StreamEvent::Done { response }) = streamed.last() else {
            panic!("{kind}: no Done event")
        };
        assert_eq!(response, &whole, "{kind}");
        let order: Vec<&str> = streamed.iter().map(kind_of).collect();
        assert!(
            order.contains(&"call") && order.contains(&"usage"),
            "{kind}: {order:?}"
        );
        let first_call = order.iter().position(|k| *k == "call").unwrap();
        assert!(
            order.iter().position(|k| *k == "text").unwrap() < first_call,
            "{kind}: {order:?}"
        );
        if kind != ProviderKind::Gemini {
            assert!(
                order.iter().position(|k| *k == "call-delta").unwrap() < first_call,
                "{kind}: {order:?}"
            );
        }
    }
}

#[tokio::test]
async fn anthropic_error_event_ends_the_stream_with_a_vendor_error() {
    let server = FakeServer::start(ProviderKind::Anthropic).await.unwrap();
    server.push(FakeReply::RawSse(vec![
        r#"event: message_start
data: {"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}"#
            .into(),
        r#"event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#
            .into(),
        r#"event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#
            .into(),
        r#"event: error
data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            .into(),
    ]));
    let events = events(&server.provider().unwrap()).await;
    assert!(matches!(&events[0], Ok(StreamEvent::TextDelta { text }) if text == "Hel"));
    let Some(Err(error)) = events.last() else {
        panic!("expected an error, got {events:?}")
    };
    assert_eq!(
        error.to_string(),
        "anthropic reported an error in the stream: Overloaded"
    );
}

#[tokio::test]
async fn cut_off_streams_are_errors_not_short_answers() {
    let cases = [
        (
            ProviderKind::OpenAi,
            r#"data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
            "finish_reason",
        ),
        (
            ProviderKind::Anthropic,
            r#"data: {"type":"message_start","message":{"usage":{}}}"#,
            "message_stop",
        ),
        (
            ProviderKind::Gemini,
            r#"data: {"candidates":[{"content":{"parts":[{"text":"Hi"}]}}]}"#,
            "finishReason",
        ),
    ];
    for (kind, event, missing) in cases {
        let server = FakeServer::start(kind).await.unwrap();
        server.push(FakeReply::RawSse(vec![event.to_owned()]));
        let error = server
            .provider()
            .unwrap()
            .chat(
                &ChatRequest {
                    stream: true,
                    ..request()
                },
                &CancellationToken::new(),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(error, LlmError::InvalidResponse { .. }),
            "{kind}: {error}"
        );
        assert!(error.to_string().contains(missing), "{kind}: {error}");
    }
}

#[tokio::test]
async fn openai_compatible_servers_that_skip_done_still_finish() {
    let server = FakeServer::start(ProviderKind::OpenAiCompatible)
        .await
        .unwrap();
    server.push(FakeReply::RawSse(vec![
        r#"data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#.into(),
        r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":1}}"#.into(),
    ]));
    let response = server
        .provider()
        .unwrap()
        .chat(
            &ChatRequest {
                stream: true,
                ..request()
            },
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!((response.text.as_str(), response.usage.total()), ("Hi", 3));
}

#[tokio::test(start_paused = true)]
async fn a_silent_stream_times_out() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server.push(FakeReply::StalledSse(vec![
        r#"data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#.into(),
    ]));
    let mut config = server.provider_config();
    config.request_timeout = Duration::from_secs(3600);
    config.stream_idle_timeout = Duration::from_secs(90);
    let provider =
        HttpProvider::with_clock(config, std::sync::Arc::new(ManualClock::default())).unwrap();
    let events = events(&provider).await;
    let Some(Err(error)) = events.last() else {
        panic!("expected an error, got {events:?}")
    };
    assert_eq!(error.to_string(), "openai did not answer within 90 s");
}
