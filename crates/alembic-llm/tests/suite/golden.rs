//! Request bodies as they reach each vendor, checked against golden snapshots, and the
//! tool_choice mapping of every vendor.

use alembic_llm::fake::{FAKE_API_KEY, FakeServer, FakeTurn};
use alembic_llm::{ChatRequest, LlmProvider, Message, ProviderKind, ToolChoice};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::support::{VENDORS, rich_request, snapshot_view, tools};

async fn send(kind: ProviderKind, request: &ChatRequest) -> alembic_llm::fake::RecordedRequest {
    let server = FakeServer::start(kind).await.unwrap();
    server.push(FakeTurn::text("ok"));
    let provider = server.provider().unwrap();
    let response = provider
        .chat(request, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.text, "ok");
    server.requests().remove(0)
}

#[tokio::test]
async fn rich_request_bodies_match_golden_snapshots() {
    for kind in VENDORS {
        for stream in [false, true] {
            let mut request = rich_request();
            request.stream = stream;
            let recorded = send(kind, &request).await;
            let mode = if stream { "stream" } else { "json" };
            insta::assert_json_snapshot!(
                format!("request_{kind}_{mode}"),
                snapshot_view(&recorded)
            );
        }
    }
}

#[tokio::test]
async fn the_key_travels_in_a_header_and_never_in_the_url() {
    for kind in VENDORS {
        let recorded = send(kind, &rich_request()).await;
        assert!(
            !recorded.path.contains(FAKE_API_KEY),
            "{kind}: {}",
            recorded.path
        );
        let header = match kind {
            ProviderKind::OpenAi => "authorization",
            ProviderKind::Anthropic => "x-api-key",
            _ => "x-goog-api-key",
        };
        let value = recorded.header(header).unwrap_or_default();
        assert!(value.ends_with(FAKE_API_KEY), "{kind}: {header} = {value}");
    }
}

/// The JSON fields that carry tool definitions and the tool choice.
fn tool_fields(kind: ProviderKind, body: &Value) -> Value {
    match kind {
        ProviderKind::OpenAi => {
            json!({ "tools": body["tools"].as_array().map(Vec::len), "tool_choice": body["tool_choice"] })
        }
        ProviderKind::Anthropic => {
            json!({ "tools": body["tools"].as_array().map(Vec::len), "tool_choice": body["tool_choice"] })
        }
        _ => json!({
            "tools": body.pointer("/tools/0/functionDeclarations").and_then(Value::as_array).map(Vec::len),
            "tool_choice": body["toolConfig"],
        }),
    }
}

#[tokio::test]
async fn tool_choice_maps_to_each_vendors_words() {
    let gemini = |mode: &str| json!({ "functionCallingConfig": { "mode": mode } });
    let cases = [
        (ProviderKind::OpenAi, ToolChoice::Auto, json!("auto")),
        (
            ProviderKind::OpenAi,
            ToolChoice::Required,
            json!("required"),
        ),
        (ProviderKind::OpenAi, ToolChoice::None, json!("none")),
        (
            ProviderKind::Anthropic,
            ToolChoice::Auto,
            json!({ "type": "auto" }),
        ),
        (
            ProviderKind::Anthropic,
            ToolChoice::Required,
            json!({ "type": "any" }),
        ),
        (
            ProviderKind::Anthropic,
            ToolChoice::None,
            json!({ "type": "none" }),
        ),
        (ProviderKind::Gemini, ToolChoice::Auto, gemini("AUTO")),
        (ProviderKind::Gemini, ToolChoice::Required, gemini("ANY")),
        (ProviderKind::Gemini, ToolChoice::None, gemini("NONE")),
    ];
    for (kind, choice, expected) in cases {
        let mut request = ChatRequest::new("m", vec![Message::user("hi")]);
        request.tools = tools();
        request.tool_choice = choice;
        let recorded = send(kind, &request).await;
        // Tools are sent under every choice, `none` included: the history may refer to them.
        assert_eq!(
            tool_fields(kind, &recorded.body),
            json!({ "tools": 2, "tool_choice": expected }),
            "{kind} {choice:?}"
        );
    }
}

#[tokio::test]
async fn without_tools_no_tool_choice_is_sent() {
    for kind in VENDORS {
        for choice in [ToolChoice::Auto, ToolChoice::Required, ToolChoice::None] {
            let mut request = ChatRequest::new("m", vec![Message::user("hi")]);
            request.tool_choice = choice;
            let recorded = send(kind, &request).await;
            assert_eq!(
                tool_fields(kind, &recorded.body),
                json!({ "tools": null, "tool_choice": null }),
                "{kind}"
            );
        }
    }
}

#[tokio::test]
async fn an_empty_request_model_uses_the_configured_one() {
    let recorded = send(
        ProviderKind::OpenAi,
        &ChatRequest::new("", vec![Message::user("hi")]),
    )
    .await;
    assert_eq!(recorded.body["model"], json!("fake-model"));
    let recorded = send(
        ProviderKind::Gemini,
        &ChatRequest::new("gemini-x", vec![Message::user("hi")]),
    )
    .await;
    assert_eq!(recorded.path, "/v1beta/models/gemini-x:generateContent");
}

#[tokio::test]
async fn deepseek_and_compatible_servers_get_max_tokens_openai_gets_max_completion_tokens() {
    for (kind, field) in [
        (ProviderKind::OpenAi, "max_completion_tokens"),
        (ProviderKind::DeepSeek, "max_tokens"),
        (ProviderKind::OpenAiCompatible, "max_tokens"),
    ] {
        let mut request = ChatRequest::new("m", vec![Message::user("hi")]);
        request.max_tokens = Some(77);
        let recorded = send(kind, &request).await;
        assert_eq!(recorded.body[field], json!(77), "{kind}");
    }
}
