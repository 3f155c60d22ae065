//! Tool calls whose arguments are not a JSON object come back as `malformed_tool_calls`, never as
//! an error, and the conversation can continue after feeding the problem back.

use alembic_llm::fake::{FakeReply, FakeServer, FakeTurn};
use alembic_llm::{ChatRequest, LlmProvider, Message, ProviderKind};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{VENDORS, tools};

const BROKEN: &str = r#"{"path": "src/a.rs""#;

#[tokio::test]
async fn malformed_arguments_are_recoverable_for_every_vendor() {
    for kind in VENDORS {
        for stream in [false, true] {
            let server = FakeServer::start(kind).await.unwrap();
            server.push(
                FakeTurn::new()
                    .tool_call("call_ok", "search_code", json!({ "query": "x" }))
                    .raw_tool_call("call_bad", "read_file", BROKEN),
            );
            server.push(FakeTurn::text("recovered"));
            let provider = server.provider().unwrap();
            let mut request = ChatRequest::new("", vec![Message::user("read a.rs")]);
            request.tools = tools();
            request.stream = stream;

            let first = provider
                .chat(&request, &CancellationToken::new())
                .await
                .unwrap();
            assert_eq!(first.tool_calls.len(), 1, "{kind} stream={stream}");
            assert_eq!(first.tool_calls[0].name, "search_code");
            assert_eq!(
                first.malformed_tool_calls.len(),
                1,
                "{kind} stream={stream}"
            );
            let bad = &first.malformed_tool_calls[0];
            assert_eq!(bad.name, "read_file");
            assert!(
                bad.raw_arguments.contains("src/a.rs"),
                "{kind}: {}",
                bad.raw_arguments
            );
            assert!(bad.feedback().contains("read_file"));

            request.messages.push(first.to_assistant_message());
            for call in &first.tool_calls {
                request
                    .messages
                    .push(Message::tool_result(&call.id, "no matches"));
            }
            request
                .messages
                .push(Message::tool_error(&bad.id, bad.feedback()));
            let second = provider
                .chat(&request, &CancellationToken::new())
                .await
                .unwrap();
            assert_eq!(second.text, "recovered", "{kind} stream={stream}");
        }
    }
}

#[tokio::test]
async fn openai_sees_its_own_broken_arguments_echoed_back() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server.push(FakeTurn::new().raw_tool_call("call_bad", "read_file", BROKEN));
    server.push(FakeTurn::text("ok"));
    let provider = server.provider().unwrap();
    let mut request = ChatRequest::new("", vec![Message::user("q")]);
    request.tools = tools();
    let first = provider
        .chat(&request, &CancellationToken::new())
        .await
        .unwrap();
    let bad = first.malformed_tool_calls[0].clone();
    assert_eq!(bad.raw_arguments, BROKEN);
    assert!(bad.error.contains("EOF"), "{}", bad.error);
    request.messages.push(first.to_assistant_message());
    request
        .messages
        .push(Message::tool_error(&bad.id, bad.feedback()));
    provider
        .chat(&request, &CancellationToken::new())
        .await
        .unwrap();
    let body = &server.requests()[1].body;
    assert_eq!(
        body.pointer("/messages/1/tool_calls/0/function/arguments"),
        Some(&json!(BROKEN))
    );
    insta::assert_snapshot!(
        "malformed_feedback",
        body.pointer("/messages/2/content")
            .unwrap()
            .as_str()
            .unwrap()
    );
}

#[tokio::test]
async fn arguments_that_are_json_but_not_an_object_are_malformed() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server.push(FakeReply::RawJson(json!({
        "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": { "role": "assistant", "content": null,
            "tool_calls": [
                { "id": "c1", "type": "function", "function": { "name": "ls", "arguments": "[\"src\"]" } },
                { "id": "c2", "type": "function", "function": { "name": "pwd", "arguments": "" } }
            ] } }],
        "usage": { "prompt_tokens": 3, "completion_tokens": 4 }
    })));
    let response = server
        .provider()
        .unwrap()
        .chat(
            &ChatRequest::new("", vec![Message::user("q")]),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        response.malformed_tool_calls[0].error,
        "expected a JSON object, got an array"
    );
    // empty arguments are a call without arguments, not a mistake
    assert_eq!(response.tool_calls[0].arguments, json!({}));
}
