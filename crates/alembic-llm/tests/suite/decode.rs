//! Replies written by hand the way each vendor documents them (not by the fake renderer), with
//! the fields the renderer never produces: thinking blocks, cached tokens, thought parts, blocked
//! prompts, object arguments from compatible servers.

use alembic_llm::fake::{FakeReply, FakeServer};
use alembic_llm::{
    ChatRequest, ChatResponse, FinishReason, LlmProvider, Message, ProviderKind, ToolCall, Usage,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

async fn decode(kind: ProviderKind, reply: FakeReply, stream: bool) -> ChatResponse {
    let server = FakeServer::start(kind).await.unwrap();
    server.push(reply);
    let request = ChatRequest {
        stream,
        ..ChatRequest::new("", vec![Message::user("q")])
    };
    server
        .provider()
        .unwrap()
        .chat(&request, &CancellationToken::new())
        .await
        .unwrap()
}

#[tokio::test]
async fn anthropic_thinking_blocks_are_skipped_and_cached_tokens_count_as_input() {
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [
            { "type": "thinking", "thinking": "Let me reason", "signature": "abc" },
            { "type": "text", "text": "I'll read it." },
            { "type": "tool_use", "id": "toolu_01", "name": "read_file", "input": { "path": "a.rs" } }
        ],
        "stop_reason": "tool_use",
        "usage": { "input_tokens": 10, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 20 }
    });
    let response = decode(ProviderKind::Anthropic, FakeReply::RawJson(body), false).await;
    assert_eq!(
        response,
        ChatResponse {
            text: "I'll read it.".into(),
            tool_calls: vec![ToolCall::new(
                "toolu_01",
                "read_file",
                json!({ "path": "a.rs" })
            )],
            malformed_tool_calls: vec![],
            usage: Usage {
                input_tokens: 115,
                output_tokens: 20
            },
            finish_reason: FinishReason::ToolCalls,
        }
    );
}

#[tokio::test]
async fn anthropic_max_tokens_is_a_length_stop() {
    let body = json!({ "content": [{ "type": "text", "text": "cut" }], "stop_reason": "max_tokens", "usage": { "input_tokens": 1, "output_tokens": 2 } });
    let response = decode(ProviderKind::Anthropic, FakeReply::RawJson(body), false).await;
    assert_eq!(response.finish_reason, FinishReason::Length);
}

#[tokio::test]
async fn gemini_thought_parts_are_not_answer_text_and_thinking_tokens_are_output() {
    let body = json!({
        "candidates": [{
            "content": { "role": "model", "parts": [
                { "text": "**Planning** the lookup", "thought": true },
                { "text": "Looking it up." },
                { "functionCall": { "name": "search_code", "args": { "query": "Payment" } }, "thoughtSignature": "c2ln" }
            ]},
            "finishReason": "STOP"
        }],
        "usageMetadata": { "promptTokenCount": 30, "candidatesTokenCount": 8, "thoughtsTokenCount": 50, "totalTokenCount": 88 }
    });
    let response = decode(ProviderKind::Gemini, FakeReply::RawJson(body), false).await;
    assert_eq!(response.text, "Looking it up.");
    assert_eq!(
        response.tool_calls[0].thought_signature.as_deref(),
        Some("c2ln")
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 30,
            output_tokens: 58
        }
    );
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
}

#[tokio::test]
async fn gemini_blocked_prompts_and_safety_stops_are_content_filter() {
    let blocked = json!({ "promptFeedback": { "blockReason": "SAFETY" }, "usageMetadata": { "promptTokenCount": 4 } });
    let response = decode(ProviderKind::Gemini, FakeReply::RawJson(blocked), false).await;
    assert_eq!(
        (response.finish_reason, response.usage.input_tokens),
        (FinishReason::ContentFilter, 4)
    );
    let stopped =
        json!({ "candidates": [{ "content": { "parts": [] }, "finishReason": "SAFETY" }] });
    let response = decode(ProviderKind::Gemini, FakeReply::RawJson(stopped), false).await;
    assert_eq!(response.finish_reason, FinishReason::ContentFilter);
    let odd = json!({ "candidates": [{ "content": { "parts": [] }, "finishReason": "MALFORMED_FUNCTION_CALL" }] });
    let response = decode(ProviderKind::Gemini, FakeReply::RawJson(odd), false).await;
    assert_eq!(
        response.finish_reason,
        FinishReason::Other("MALFORMED_FUNCTION_CALL".into())
    );
}

#[tokio::test]
async fn compatible_servers_may_send_arguments_as_objects_and_content_as_parts() {
    let body = json!({
        "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant",
            "content": [{ "type": "text", "text": "Calling." }],
            "tool_calls": [{ "id": "call_0", "type": "function", "function": { "name": "ls", "arguments": { "dir": "src" } } }]
        }}],
        "usage": { "prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10 }
    });
    let response = decode(
        ProviderKind::OpenAiCompatible,
        FakeReply::RawJson(body),
        false,
    )
    .await;
    assert_eq!(response.text, "Calling.");
    assert_eq!(
        response.tool_calls,
        vec![ToolCall::new("call_0", "ls", json!({ "dir": "src" }))]
    );
}

#[tokio::test]
async fn openai_parallel_tool_calls_stream_interleaved_by_index() {
    let chunk = |delta: Value| {
        format!(
            "data: {}",
            json!({ "choices": [{ "index": 0, "delta": delta }] })
        )
    };
    let events = vec![
        chunk(
            json!({ "tool_calls": [{ "index": 0, "id": "call_a", "type": "function", "function": { "name": "read_file", "arguments": "" } }] }),
        ),
        chunk(
            json!({ "tool_calls": [{ "index": 1, "id": "call_b", "type": "function", "function": { "name": "ls", "arguments": "{\"dir\"" } }] }),
        ),
        chunk(
            json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "{\"path\":\"x\"}" } }] }),
        ),
        chunk(json!({ "tool_calls": [{ "index": 1, "function": { "arguments": ":\"src\"}" } }] })),
        format!(
            "data: {}",
            json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] })
        ),
        "data: [DONE]".to_owned(),
    ];
    let response = decode(ProviderKind::OpenAi, FakeReply::RawSse(events), true).await;
    assert_eq!(
        response.tool_calls,
        vec![
            ToolCall::new("call_a", "read_file", json!({ "path": "x" })),
            ToolCall::new("call_b", "ls", json!({ "dir": "src" })),
        ]
    );
}

#[tokio::test]
async fn a_success_status_with_a_body_that_is_not_json_is_an_invalid_response() {
    let server = FakeServer::start(ProviderKind::OpenAi).await.unwrap();
    server.push(FakeReply::Status {
        status: 200,
        headers: vec![],
        body: "<html>proxy login</html>".into(),
    });
    let error = server
        .provider()
        .unwrap()
        .chat(
            &ChatRequest::new("", vec![Message::user("q")]),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("openai sent a response that could not be read: body is not JSON"),
        "{error}"
    );
}

#[tokio::test]
async fn gemini_streams_with_crlf_line_endings_are_read() {
    let chunk = |body: Value| format!("data: {body}\r\n\r");
    let events = vec![
        chunk(
            json!({ "candidates": [{ "content": { "role": "model", "parts": [{ "text": "Hello " }] } }] }),
        ),
        chunk(json!({
            "candidates": [{ "content": { "role": "model", "parts": [{ "text": "world" }] }, "finishReason": "STOP" }],
            "usageMetadata": { "promptTokenCount": 3, "candidatesTokenCount": 2 }
        })),
    ];
    let response = decode(ProviderKind::Gemini, FakeReply::RawSse(events), true).await;
    assert_eq!(
        (response.text.as_str(), response.usage.total()),
        ("Hello world", 5)
    );
}
