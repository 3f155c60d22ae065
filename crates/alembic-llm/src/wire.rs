//! What a vendor's wire format must provide; the transport (`http.rs`) does the rest.

use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::model::{ChatRequest, ChatResponse, FinishReason, Message, StreamEvent};

/// Why a vendor payload could not be used.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DecodeError {
    /// The payload does not have the documented shape.
    Invalid(String),
    /// The vendor reported an error (inside a stream).
    Vendor(String),
}

/// Request building and response parsing for one vendor. Pure functions of their inputs, so the
/// golden tests can call them without a server.
pub(crate) trait WireFormat: Send + Sync + std::fmt::Debug {
    /// Full URL for a request.
    fn endpoint(&self, base_url: &str, model: &str, stream: bool) -> String;
    /// Authentication and version headers.
    fn headers(&self, api_key: Option<&str>) -> HeaderMap;
    /// The JSON body.
    fn encode(&self, request: &ChatRequest, model: &str, stream: bool) -> Value;
    /// A non-streamed response body.
    fn decode(&self, body: &Value) -> Result<ChatResponse, DecodeError>;
    /// A fresh decoder for one streamed response.
    fn stream_decoder(&self) -> Box<dyn StreamDecoder>;
}

/// Turns one vendor's SSE events into `StreamEvent`s.
pub(crate) trait StreamDecoder: Send {
    /// One SSE event (`event:` name, possibly empty, and its `data:`).
    fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError>;
    /// The byte stream ended. Returns the remaining events (ending with `Done`), or an error when
    /// the vendor never signalled the end of its answer (a cut-off stream).
    fn on_end(&mut self) -> Result<Vec<StreamEvent>, DecodeError>;
}

/// Id of the tool call each tool result answers, to find the tool's name (Gemini needs it).
pub(crate) fn tool_names_by_call_id(messages: &[Message]) -> std::collections::HashMap<&str, &str> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::Assistant { tool_calls, .. } => Some(tool_calls),
            _ => None,
        })
        .flatten()
        .map(|call| (call.id.as_str(), call.name.as_str()))
        .collect()
}

/// A responded reply with calls but a plain "stop" means the model wants tool results.
pub(crate) fn settle_finish_reason(response: &mut ChatResponse) {
    let has_calls = !response.tool_calls.is_empty() || !response.malformed_tool_calls.is_empty();
    if has_calls && response.finish_reason == FinishReason::Stop {
        response.finish_reason = FinishReason::ToolCalls;
    }
}

/// Joins `base` and `path` with exactly one slash.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

pub(crate) fn invalid(message: impl Into<String>) -> DecodeError {
    DecodeError::Invalid(message.into())
}

pub(crate) fn parse_json(data: &str) -> Result<Value, DecodeError> {
    serde_json::from_str(data)
        .map_err(|err| invalid(format!("stream chunk is not JSON ({err}): {data:.200}")))
}

pub(crate) fn as_u64(value: Option<&Value>) -> u64 {
    value.and_then(Value::as_u64).unwrap_or(0)
}
