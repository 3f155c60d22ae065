//! Mapping between the context window's provider-neutral messages and alembic-llm's.
//!
//! The window's `ToolCallRequest` has no room for Gemini's `thoughtSignature` or for the
//! "this result is an error" flag, so the loop keeps both beside the window ([`CallLedger`])
//! and puts them back when it renders a request. Compaction only removes or shortens
//! messages, so an id in the ledger always meets its own call again.

use std::collections::{HashMap, HashSet};

use alembic_context::{Message as WindowMessage, Role, ToolCallRequest};
use alembic_llm::{Message as LlmMessage, ToolCall as LlmToolCall};

/// What the window does not keep about tool calls, by call id.
#[derive(Debug, Default, Clone)]
pub struct CallLedger {
    signatures: HashMap<String, String>,
    failed: HashSet<String>,
}

impl CallLedger {
    /// Remembers the parts of `call` the window drops.
    pub fn record_call(&mut self, call: &LlmToolCall) {
        if let Some(sig) = &call.thought_signature {
            self.signatures.insert(call.id.clone(), sig.clone());
        }
    }

    /// Marks the result of `call_id` as an error or refusal.
    pub fn record_failure(&mut self, call_id: &str) {
        self.failed.insert(call_id.to_string());
    }

    /// The window's form of an LLM tool call.
    pub fn to_window_call(call: &LlmToolCall) -> ToolCallRequest {
        ToolCallRequest {
            id: call.id.clone(),
            name: call.name.clone(),
            args: call.arguments.clone(),
        }
    }

    /// The LLM form of a window message.
    pub fn to_llm(&self, message: &WindowMessage) -> LlmMessage {
        match message.role {
            Role::System => LlmMessage::system(message.content.clone()),
            Role::User => LlmMessage::user(message.content.clone()),
            Role::Assistant if message.tool_calls.is_empty() => {
                LlmMessage::assistant(message.content.clone())
            }
            Role::Assistant => {
                let calls = message
                    .tool_calls
                    .iter()
                    .map(|c| LlmToolCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: c.args.clone(),
                        thought_signature: self.signatures.get(&c.id).cloned(),
                    })
                    .collect();
                LlmMessage::assistant_with_calls(message.content.clone(), calls)
            }
            Role::Tool => {
                let id = message.tool_call_id.clone().unwrap_or_default();
                if self.failed.contains(&id) {
                    LlmMessage::tool_error(id, message.content.clone())
                } else {
                    LlmMessage::tool_result(id, message.content.clone())
                }
            }
        }
    }

    /// The whole history in the LLM form.
    pub fn render(&self, messages: &[WindowMessage]) -> Vec<LlmMessage> {
        messages.iter().map(|m| self.to_llm(m)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn signatures_and_error_flags_survive_the_round_trip() {
        let mut ledger = CallLedger::default();
        let mut call = LlmToolCall::new("c1", "read_project_file", json!({"filePath": "a"}));
        call.thought_signature = Some("sig".into());
        ledger.record_call(&call);
        ledger.record_failure("c1");
        let window = vec![
            WindowMessage::assistant_with_calls("", vec![CallLedger::to_window_call(&call)]),
            WindowMessage::tool_result("c1", "error: not found"),
        ];
        assert_eq!(
            ledger.render(&window),
            vec![
                LlmMessage::assistant_with_calls("", vec![call]),
                LlmMessage::tool_error("c1", "error: not found"),
            ]
        );
    }
}
