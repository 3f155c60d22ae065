//! Builds a `ChatResponse` out of streamed pieces, whatever the vendor, and turns each piece into
//! the `StreamEvent`s the caller sees.

use std::collections::BTreeMap;

use crate::model::{
    ChatResponse, FinishReason, StreamEvent, ToolCall, Usage, parse_tool_arguments,
};

/// A tool call still being streamed.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    thought_signature: Option<String>,
    finished: bool,
}

/// Accumulates one streamed reply.
#[derive(Debug, Default)]
pub(crate) struct StreamAssembler {
    text: String,
    calls: BTreeMap<usize, PartialCall>,
    response: ChatResponse,
    finish_reason: Option<FinishReason>,
}

impl StreamAssembler {
    pub(crate) fn text(&mut self, delta: &str) -> Option<StreamEvent> {
        if delta.is_empty() {
            return None;
        }
        self.text.push_str(delta);
        Some(StreamEvent::TextDelta {
            text: delta.to_owned(),
        })
    }

    /// A piece of tool call `index`; `id` and `name` usually arrive with the first piece only.
    pub(crate) fn tool_delta(
        &mut self,
        index: usize,
        id: Option<&str>,
        name: Option<&str>,
        arguments_delta: &str,
    ) -> StreamEvent {
        let call = self.calls.entry(index).or_default();
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            id.clone_into(&mut call.id);
        }
        if let Some(name) = name.filter(|name| !name.is_empty()) {
            name.clone_into(&mut call.name);
        }
        call.arguments.push_str(arguments_delta);
        StreamEvent::ToolCallDelta {
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments_delta: arguments_delta.to_owned(),
        }
    }

    /// Gemini sends whole calls; they go through the same checks as assembled ones.
    pub(crate) fn whole_call(&mut self, index: usize, call: ToolCall) -> Option<StreamEvent> {
        let raw = match &call.arguments {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        self.calls.insert(
            index,
            PartialCall {
                id: call.id,
                name: call.name,
                arguments: raw,
                thought_signature: call.thought_signature,
                finished: false,
            },
        );
        self.finish_call(index)
    }

    /// Tool call `index` is complete: check its arguments and emit it.
    pub(crate) fn finish_call(&mut self, index: usize) -> Option<StreamEvent> {
        let call = self.calls.get_mut(&index).filter(|call| !call.finished)?;
        call.finished = true;
        match parse_tool_arguments(&call.id, &call.name, &call.arguments) {
            Ok(mut parsed) => {
                parsed.thought_signature = call.thought_signature.clone();
                self.response.tool_calls.push(parsed.clone());
                Some(StreamEvent::ToolCall { call: parsed })
            }
            Err(malformed) => {
                self.response.malformed_tool_calls.push(malformed.clone());
                Some(StreamEvent::MalformedToolCall { call: malformed })
            }
        }
    }

    pub(crate) fn next_index(&self) -> usize {
        self.calls.keys().next_back().map_or(0, |last| last + 1)
    }

    pub(crate) fn set_input_tokens(&mut self, tokens: u64) {
        self.response.usage.input_tokens = tokens;
    }

    pub(crate) fn set_output_tokens(&mut self, tokens: u64) {
        self.response.usage.output_tokens = tokens;
    }

    pub(crate) fn usage_event(&self) -> StreamEvent {
        StreamEvent::Usage {
            usage: self.response.usage,
        }
    }

    pub(crate) fn set_usage(&mut self, usage: Usage) -> StreamEvent {
        self.response.usage = usage;
        self.usage_event()
    }

    pub(crate) fn finish(&mut self, reason: FinishReason) {
        self.finish_reason = Some(reason);
    }

    /// Completes every open call (in index order) and returns their events plus `Done`.
    pub(crate) fn done(&mut self) -> Vec<StreamEvent> {
        let open: Vec<usize> = self
            .calls
            .iter()
            .filter(|(_, call)| !call.finished)
            .map(|(index, _)| *index)
            .collect();
        let mut events: Vec<StreamEvent> = open
            .into_iter()
            .filter_map(|index| self.finish_call(index))
            .collect();
        let mut response = std::mem::take(&mut self.response);
        response.text = std::mem::take(&mut self.text);
        let has_calls =
            !response.tool_calls.is_empty() || !response.malformed_tool_calls.is_empty();
        response.finish_reason = match self.finish_reason.take() {
            Some(FinishReason::Stop) | None if has_calls => FinishReason::ToolCalls,
            Some(reason) => reason,
            None => FinishReason::Stop,
        };
        events.push(StreamEvent::Done { response });
        events
    }
}
