//! Vendor-neutral readers for recorded requests, so tests of the agent runtime can ask "what
//! system prompt / tools / tool choice did the model get?" whatever the wire format.

use serde_json::Value;

use super::RecordedRequest;
use crate::config::ProviderKind;
use crate::model::ToolChoice;

impl RecordedRequest {
    fn format(&self) -> ProviderKind {
        match self.kind {
            ProviderKind::Anthropic | ProviderKind::Gemini => self.kind,
            _ => ProviderKind::OpenAi,
        }
    }

    /// True when the client asked for an SSE stream.
    pub fn is_stream(&self) -> bool {
        match self.format() {
            ProviderKind::Gemini => self.path.contains("streamGenerateContent"),
            _ => self.body.get("stream").and_then(Value::as_bool) == Some(true),
        }
    }

    /// The system prompt the model received ("" when none).
    pub fn system_prompt(&self) -> String {
        let text = match self.format() {
            ProviderKind::Anthropic => self.body.get("system").and_then(Value::as_str),
            ProviderKind::Gemini => self
                .body
                .pointer("/systemInstruction/parts/0/text")
                .and_then(Value::as_str),
            _ => self
                .messages()
                .iter()
                .find(|m| m.get("role").and_then(Value::as_str) == Some("system"))
                .and_then(|m| m.get("content"))
                .and_then(Value::as_str),
        };
        text.unwrap_or_default().to_owned()
    }

    /// Names of the tools offered to the model, in order.
    pub fn offered_tools(&self) -> Vec<String> {
        let (tools, name_pointer) = match self.format() {
            ProviderKind::Anthropic => (self.body.get("tools"), "/name"),
            ProviderKind::Gemini => (self.body.pointer("/tools/0/functionDeclarations"), "/name"),
            _ => (self.body.get("tools"), "/function/name"),
        };
        tools
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|tool| {
                tool.pointer(name_pointer)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .collect()
    }

    /// The tool choice sent, or `None` when the request carried none (no tools).
    pub fn tool_choice(&self) -> Option<ToolChoice> {
        let word = match self.format() {
            ProviderKind::Anthropic => self.body.pointer("/tool_choice/type"),
            ProviderKind::Gemini => self.body.pointer("/toolConfig/functionCallingConfig/mode"),
            _ => self.body.get("tool_choice"),
        }?;
        match word.as_str()?.to_ascii_lowercase().as_str() {
            "auto" => Some(ToolChoice::Auto),
            "required" | "any" => Some(ToolChoice::Required),
            "none" => Some(ToolChoice::None),
            _ => None,
        }
    }

    /// Number of messages in the wire format, system prompt excluded (OpenAI sends one per tool
    /// result; Anthropic and Gemini merge neighbouring turns of one role).
    pub fn turn_count(&self) -> usize {
        match self.format() {
            ProviderKind::Gemini => self
                .body
                .get("contents")
                .and_then(Value::as_array)
                .map_or(0, Vec::len),
            ProviderKind::Anthropic => self.messages().len(),
            _ => self
                .messages()
                .iter()
                .filter(|m| m.get("role").and_then(Value::as_str) != Some("system"))
                .count(),
        }
    }

    /// The contents of every tool result sent back to the model, in order.
    pub fn tool_results(&self) -> Vec<String> {
        match self.format() {
            ProviderKind::Anthropic => self.blocks_of_type("tool_result", "/content"),
            ProviderKind::Gemini => self.gemini_function_responses(),
            _ => self
                .messages()
                .iter()
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
                .filter_map(|m| m.get("content").and_then(Value::as_str).map(str::to_owned))
                .collect(),
        }
    }

    fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    fn blocks_of_type(&self, kind: &str, pointer: &str) -> Vec<String> {
        self.messages()
            .iter()
            .filter_map(|m| m.get("content").and_then(Value::as_array))
            .flatten()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some(kind))
            .filter_map(|block| {
                block
                    .pointer(pointer)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .collect()
    }

    fn gemini_function_responses(&self) -> Vec<String> {
        let contents = self
            .body
            .get("contents")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        contents
            .iter()
            .filter_map(|c| c.get("parts").and_then(Value::as_array))
            .flatten()
            .filter_map(|part| part.pointer("/functionResponse/response"))
            .filter_map(|response| response.get("result").or_else(|| response.get("error")))
            .filter_map(|text| text.as_str().map(str::to_owned))
            .collect()
    }
}
