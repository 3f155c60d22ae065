//! Shared fixtures: a rich request that exercises every message kind, and helpers to show a
//! recorded request without its secret.

use alembic_llm::fake::RecordedRequest;
use alembic_llm::{ChatRequest, Message, ProviderKind, ToolCall, ToolChoice, ToolSpec};
use serde_json::{Value, json};

pub const VENDORS: [ProviderKind; 3] = [
    ProviderKind::OpenAi,
    ProviderKind::Anthropic,
    ProviderKind::Gemini,
];

pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "search_code".into(),
            description: "Search the project for a pattern".into(),
            parameters: json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "properties": {
                    "query": { "type": "string", "description": "text or regex" },
                    "max_results": { "type": ["integer", "null"], "default": 20, "minimum": 1 },
                    "globs": { "type": "array" }
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "read_file".into(),
            description: "Read a file of the project".into(),
            parameters: json!({ "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"] }),
        },
    ]
}

/// A conversation with a system prompt, a tool round with two calls (one failing), a nudge and
/// an empty assistant turn that must not reach the wire.
pub fn rich_request() -> ChatRequest {
    let mut request = ChatRequest::new(
        "",
        vec![
            Message::user("How is the Payment module structured?"),
            Message::assistant_with_calls(
                "Let me look.",
                vec![
                    ToolCall::new("call_1", "search_code", json!({ "query": "Payment" })),
                    ToolCall::new("call_2", "read_file", json!({ "path": "src/payment.rs" })),
                ],
            ),
            Message::tool_result("call_1", "3 matches in src/payment/"),
            Message::tool_error("call_2", "file not found: src/payment.rs"),
            Message::user("Focus on the coordinator."),
            Message::assistant(""),
            Message::system("Answer in English."),
        ],
    );
    request.system = "You are a code analyst.".into();
    request.tools = tools();
    request.tool_choice = ToolChoice::Required;
    request.max_tokens = Some(1024);
    request.temperature = Some(0.25);
    request
}

/// The parts of a recorded request worth a golden snapshot: method, path, the headers that
/// matter (secrets shown as present/absent only) and the body.
pub fn snapshot_view(request: &RecordedRequest) -> Value {
    let secret = |name: &str| request.header(name).map(|_| "<redacted>");
    json!({
        "method": request.method,
        "path": request.path,
        "headers": {
            "content-type": request.header("content-type"),
            "authorization": secret("authorization"),
            "x-api-key": secret("x-api-key"),
            "x-goog-api-key": secret("x-goog-api-key"),
            "anthropic-version": request.header("anthropic-version"),
        },
        "body": request.body,
    })
}
