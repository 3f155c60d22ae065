//! The vendor-neutral chat model: requests, messages, tool calls, responses and stream events.
//!
//! Every provider maps these types to and from its own wire format, so the agent runtime (and the
//! working-memory `ContextWindow`) only ever handles these.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One chat completion request, independent of the vendor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// Model name as the vendor spells it (`gpt-5.4-mini`, `claude-sonnet-4-20250514`, …).
    pub model: String,
    /// System prompt; empty means none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub system: String,
    /// Conversation so far, oldest first. `Message::System` entries are appended to `system`.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Whether the model may, must or must not call tools.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Upper bound on output tokens; `None` uses the provider default (Anthropic requires one, 4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature; `None` leaves the vendor default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Whether `LlmProvider::chat` should stream internally (see `LlmProvider::chat_stream`).
    #[serde(default)]
    pub stream: bool,
}

impl ChatRequest {
    /// A request with no tools, `ToolChoice::Auto` and vendor defaults for everything else.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            system: String::new(),
            messages,
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            max_tokens: None,
            temperature: None,
            stream: false,
        }
    }

    /// The system prompt plus any `Message::System` entries, joined by blank lines.
    pub fn effective_system(&self) -> String {
        let mut parts: Vec<&str> = Vec::new();
        if !self.system.is_empty() {
            parts.push(&self.system);
        }
        for message in &self.messages {
            if let Message::System { content } = message
                && !content.is_empty()
            {
                parts.push(content);
            }
        }
        parts.join("\n\n")
    }
}

/// A tool the model may call: name, human/model-readable description and a JSON Schema for the arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema (an object schema) for the arguments.
    pub parameters: Value,
}

/// Tool-calling mode. The exploration tracker switches it per phase (`none` in SUMMARIZE).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must call at least one tool.
    Required,
    /// The model must answer in text. Tool definitions are still sent when present, because
    /// vendors need them to read earlier tool calls in the history.
    None,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Extra system instructions; providers fold these into the system prompt.
    System {
        content: String,
    },
    User {
        content: String,
    },
    /// A model turn: optional text plus the tool calls it made.
    Assistant {
        #[serde(default, skip_serializing_if = "String::is_empty")]
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        tool_call_id: String,
        content: String,
        /// True when the tool failed or was refused; Anthropic marks the block `is_error`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Self::System {
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self::Assistant {
            content: content.into(),
            tool_calls: Vec::new(),
        }
    }

    pub fn assistant_with_calls(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self::Assistant {
            content: content.into(),
            tool_calls,
        }
    }

    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            is_error: false,
        }
    }

    pub fn tool_error(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            is_error: true,
        }
    }
}

/// A tool call made by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Vendor id (OpenAI `call_…`, Anthropic `toolu_…`) or a synthetic one for Gemini.
    pub id: String,
    pub name: String,
    /// Arguments; a JSON object for well-formed calls. A string holds the raw text of a malformed
    /// call being echoed back in the history (see `MalformedToolCall::to_history_call`).
    pub arguments: Value,
    /// Gemini's opaque `thoughtSignature`, which must be sent back with the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
            thought_signature: None,
        }
    }
}

/// A tool call whose arguments the model got wrong (not JSON, or JSON that is not an object).
///
/// This is not an error of the request: the loop keeps going, echoes the call in the history and
/// answers it with `feedback()` as a tool error so the model can correct itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MalformedToolCall {
    pub id: String,
    pub name: String,
    /// The argument text exactly as the model produced it.
    pub raw_arguments: String,
    /// Why it was rejected (the JSON parser's message or "expected a JSON object").
    pub error: String,
}

impl MalformedToolCall {
    /// The text to send back as the tool result so the model can retry with valid arguments.
    pub fn feedback(&self) -> String {
        format!(
            "tool call \"{}\" was not run: its arguments are not a valid JSON object ({}). \
             Call the tool again with arguments as a JSON object matching its schema.",
            self.name, self.error
        )
    }

    /// The call as it should appear in the assistant message of the history.
    pub fn to_history_call(&self) -> ToolCall {
        ToolCall::new(
            self.id.clone(),
            self.name.clone(),
            Value::String(self.raw_arguments.clone()),
        )
    }
}

/// Token counts for one call, as reported by the vendor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Adds another call's counts (for per-run totals).
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Natural end of the answer.
    #[default]
    Stop,
    /// The model wants tool results.
    ToolCalls,
    /// The output token limit was hit.
    Length,
    /// The vendor's safety filter stopped the answer.
    ContentFilter,
    /// Anything else, with the vendor's own word.
    Other(String),
}

/// The model's reply to one request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// Text of the answer; empty when the model only called tools.
    pub text: String,
    /// Well-formed tool calls, in the order the model made them.
    pub tool_calls: Vec<ToolCall>,
    /// Tool calls with unusable arguments; feed `feedback()` back as tool errors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub malformed_tool_calls: Vec<MalformedToolCall>,
    pub usage: Usage,
    pub finish_reason: FinishReason,
}

impl ChatResponse {
    /// True when the model produced neither text nor any tool call (the loop's "empty response").
    pub fn is_empty(&self) -> bool {
        self.text.trim().is_empty()
            && self.tool_calls.is_empty()
            && self.malformed_tool_calls.is_empty()
    }

    /// The assistant message to append to the history: text plus every call, malformed ones
    /// included (with their raw text), so that each later tool result has a matching call.
    pub fn to_assistant_message(&self) -> Message {
        let mut calls = self.tool_calls.clone();
        calls.extend(
            self.malformed_tool_calls
                .iter()
                .map(MalformedToolCall::to_history_call),
        );
        Message::assistant_with_calls(self.text.clone(), calls)
    }
}

/// One event of a streamed reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// A piece of answer text, to print as it arrives.
    TextDelta { text: String },
    /// A piece of a tool call being streamed. `index` tells the calls of one reply apart (the
    /// vendor's index: OpenAI's tool-call index, Anthropic's content-block index).
    ToolCallDelta {
        index: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        arguments_delta: String,
    },
    /// A tool call whose arguments are complete and valid.
    ToolCall { call: ToolCall },
    /// A tool call whose arguments turned out malformed.
    MalformedToolCall { call: MalformedToolCall },
    /// Token counts (may arrive more than once; the last one wins).
    Usage { usage: Usage },
    /// End of the stream with the whole assembled reply.
    Done { response: ChatResponse },
}

/// The JSON of a reply asked to be "one JSON object and nothing else": the text, or the inside
/// of the code fence (```json … ```) models often wrap it in.
pub fn json_answer(text: &str) -> &str {
    let t = text.trim();
    let Some(inner) = t.strip_prefix("```") else {
        return t;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

/// Reads the model's argument text for a tool call.
///
/// An empty text means "no arguments" (`{}`); anything that is not a JSON object is a
/// `MalformedToolCall` the loop feeds back to the model instead of failing the run.
pub fn parse_tool_arguments(
    id: &str,
    name: &str,
    raw: &str,
) -> Result<ToolCall, MalformedToolCall> {
    let malformed = |error: String| MalformedToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        raw_arguments: raw.to_owned(),
        error,
    };
    if raw.trim().is_empty() {
        return Ok(ToolCall::new(
            id,
            name,
            Value::Object(serde_json::Map::new()),
        ));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(value @ Value::Object(_)) => Ok(ToolCall::new(id, name, value)),
        Ok(other) => Err(malformed(format!(
            "expected a JSON object, got {}",
            json_kind(&other)
        ))),
        Err(err) => Err(malformed(err.to_string())),
    }
}

/// Checks arguments that arrived already parsed (Anthropic `input`, Gemini `args`).
pub fn check_tool_arguments(
    id: &str,
    name: &str,
    value: Value,
) -> Result<ToolCall, MalformedToolCall> {
    match value {
        Value::Object(_) => Ok(ToolCall::new(id, name, value)),
        Value::Null => Ok(ToolCall::new(
            id,
            name,
            Value::Object(serde_json::Map::new()),
        )),
        other => Err(MalformedToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            raw_arguments: other.to_string(),
            error: format!("expected a JSON object, got {}", json_kind(&other)),
        }),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn json_answer_takes_the_inside_of_a_code_fence() {
        assert_eq!(json_answer(" {\"a\": 1} "), "{\"a\": 1}");
        assert_eq!(json_answer("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(json_answer("```\n[]\n```"), "[]");
    }

    #[test]
    fn empty_arguments_mean_no_arguments() {
        let call = parse_tool_arguments("c1", "list", "  ").unwrap();
        assert_eq!(call.arguments, json!({}));
    }

    #[test]
    fn truncated_json_is_a_malformed_call_with_the_raw_text() {
        let err = parse_tool_arguments("c1", "read_file", "{\"path\": \"a.rs\"").unwrap_err();
        assert_eq!(err.raw_arguments, "{\"path\": \"a.rs\"");
        assert!(err.error.contains("EOF"), "{}", err.error);
        assert!(err.feedback().contains("read_file"));
        assert_eq!(
            err.to_history_call().arguments,
            json!("{\"path\": \"a.rs\"")
        );
    }

    #[test]
    fn non_object_json_is_malformed() {
        let err = parse_tool_arguments("c1", "x", "[1,2]").unwrap_err();
        assert_eq!(err.error, "expected a JSON object, got an array");
        let err = check_tool_arguments("c1", "x", json!("s")).unwrap_err();
        assert_eq!(err.error, "expected a JSON object, got a string");
    }

    #[test]
    fn messages_serialise_with_a_role_tag() {
        let message =
            Message::assistant_with_calls("", vec![ToolCall::new("c1", "ls", json!({"dir": "."}))]);
        let value = serde_json::to_value(&message).unwrap();
        assert_eq!(
            value,
            json!({"role": "assistant", "tool_calls": [{"id": "c1", "name": "ls", "arguments": {"dir": "."}}]})
        );
        let back: Message = serde_json::from_value(value).unwrap();
        assert_eq!(back, message);
    }

    #[test]
    fn system_messages_fold_into_the_system_prompt() {
        let mut request =
            ChatRequest::new("m", vec![Message::system("extra"), Message::user("hi")]);
        request.system = "base".into();
        assert_eq!(request.effective_system(), "base\n\nextra");
    }
}
