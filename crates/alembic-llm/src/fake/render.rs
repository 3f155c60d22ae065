//! Renders a scripted `FakeTurn` in each vendor's wire format, written from the vendors' API
//! documentation independently of the client-side decoders.

use serde_json::{Value, json};

use super::{FakeToolCall, FakeTurn};
use crate::config::ProviderKind;

pub(super) struct Renderer<'a> {
    pub(super) kind: ProviderKind,
    pub(super) model: &'a str,
    pub(super) turn: &'a FakeTurn,
}

impl Renderer<'_> {
    pub(super) fn json(&self) -> Value {
        match self.kind {
            ProviderKind::Anthropic => self.anthropic_json(),
            ProviderKind::Gemini => self.gemini_json(),
            _ => self.openai_json(),
        }
    }

    pub(super) fn sse_events(&self) -> Vec<String> {
        match self.kind {
            ProviderKind::Anthropic => self.anthropic_sse(),
            ProviderKind::Gemini => self.gemini_sse(),
            _ => self.openai_sse(),
        }
    }

    fn has_calls(&self) -> bool {
        !self.turn.tool_calls.is_empty()
    }

    fn openai_json(&self) -> Value {
        let calls: Vec<Value> = self
            .turn
            .tool_calls
            .iter()
            .map(|c| json!({ "id": c.id, "type": "function", "function": { "name": c.name, "arguments": c.arguments } }))
            .collect();
        let mut message = json!({ "role": "assistant", "content": nullable_text(&self.turn.text) });
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_767_225_600,
            "model": self.model,
            "choices": [{ "index": 0, "message": message, "finish_reason": if self.has_calls() { "tool_calls" } else { "stop" } }],
            "usage": self.openai_usage(),
        })
    }

    fn openai_usage(&self) -> Value {
        let usage = self.turn.usage;
        json!({ "prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens, "total_tokens": usage.total() })
    }

    fn openai_chunk(&self, choices: Value) -> String {
        let chunk = json!({ "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_767_225_600, "model": self.model, "choices": choices });
        format!("data: {chunk}")
    }

    fn openai_sse(&self) -> Vec<String> {
        let mut events = vec![self.openai_chunk(
            json!([{ "index": 0, "delta": { "role": "assistant", "content": "" } }]),
        )];
        for piece in split_in_two(&self.turn.text) {
            events.push(self.openai_chunk(json!([{ "index": 0, "delta": { "content": piece } }])));
        }
        for (index, call) in self.turn.tool_calls.iter().enumerate() {
            let head = json!({ "index": index, "id": call.id, "type": "function", "function": { "name": call.name, "arguments": "" } });
            events.push(
                self.openai_chunk(json!([{ "index": 0, "delta": { "tool_calls": [head] } }])),
            );
            for piece in split_in_two(&call.arguments) {
                let part = json!({ "index": index, "function": { "arguments": piece } });
                events.push(
                    self.openai_chunk(json!([{ "index": 0, "delta": { "tool_calls": [part] } }])),
                );
            }
        }
        let finish = if self.has_calls() {
            "tool_calls"
        } else {
            "stop"
        };
        events
            .push(self.openai_chunk(json!([{ "index": 0, "delta": {}, "finish_reason": finish }])));
        let usage_chunk = json!({ "id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": self.model, "choices": [], "usage": self.openai_usage() });
        events.push(format!("data: {usage_chunk}"));
        events.push("data: [DONE]".to_owned());
        events
    }

    fn anthropic_json(&self) -> Value {
        let mut content = Vec::new();
        if !self.turn.text.is_empty() {
            content.push(json!({ "type": "text", "text": self.turn.text }));
        }
        content.extend(self.turn.tool_calls.iter().map(|c| {
            json!({ "type": "tool_use", "id": c.id, "name": c.name, "input": parsed_or_raw(c) })
        }));
        json!({
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": if self.has_calls() { "tool_use" } else { "end_turn" },
            "stop_sequence": null,
            "usage": { "input_tokens": self.turn.usage.input_tokens, "output_tokens": self.turn.usage.output_tokens },
        })
    }

    fn anthropic_sse(&self) -> Vec<String> {
        let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}");
        let message = json!({ "id": "msg_fake", "type": "message", "role": "assistant", "model": self.model, "content": [],
            "stop_reason": null, "usage": { "input_tokens": self.turn.usage.input_tokens, "output_tokens": 1 } });
        let mut events = vec![event(
            "message_start",
            json!({ "type": "message_start", "message": message }),
        )];
        events.push(event("ping", json!({ "type": "ping" })));
        let mut index = 0;
        if !self.turn.text.is_empty() {
            events.push(event("content_block_start", json!({ "type": "content_block_start", "index": index, "content_block": { "type": "text", "text": "" } })));
            for piece in split_in_two(&self.turn.text) {
                events.push(event("content_block_delta", json!({ "type": "content_block_delta", "index": index, "delta": { "type": "text_delta", "text": piece } })));
            }
            events.push(event(
                "content_block_stop",
                json!({ "type": "content_block_stop", "index": index }),
            ));
            index += 1;
        }
        for call in &self.turn.tool_calls {
            events.push(event("content_block_start", json!({ "type": "content_block_start", "index": index,
                "content_block": { "type": "tool_use", "id": call.id, "name": call.name, "input": {} } })));
            for piece in split_in_two(&call.arguments) {
                events.push(event(
                    "content_block_delta",
                    json!({ "type": "content_block_delta", "index": index,
                    "delta": { "type": "input_json_delta", "partial_json": piece } }),
                ));
            }
            events.push(event(
                "content_block_stop",
                json!({ "type": "content_block_stop", "index": index }),
            ));
            index += 1;
        }
        let stop = if self.has_calls() {
            "tool_use"
        } else {
            "end_turn"
        };
        events.push(event("message_delta", json!({ "type": "message_delta", "delta": { "stop_reason": stop, "stop_sequence": null },
            "usage": { "output_tokens": self.turn.usage.output_tokens } })));
        events.push(event("message_stop", json!({ "type": "message_stop" })));
        events
    }

    fn gemini_call(call: &FakeToolCall) -> Value {
        let mut part =
            json!({ "functionCall": { "name": call.name, "args": parsed_or_raw(call) } });
        if let Some(signature) = &call.thought_signature {
            part["thoughtSignature"] = json!(signature);
        }
        part
    }

    fn gemini_usage(&self) -> Value {
        let usage = self.turn.usage;
        json!({ "promptTokenCount": usage.input_tokens, "candidatesTokenCount": usage.output_tokens, "totalTokenCount": usage.total() })
    }

    fn gemini_json(&self) -> Value {
        let mut parts = Vec::new();
        if !self.turn.text.is_empty() {
            parts.push(json!({ "text": self.turn.text }));
        }
        parts.extend(self.turn.tool_calls.iter().map(Self::gemini_call));
        json!({
            "candidates": [{ "content": { "role": "model", "parts": parts }, "finishReason": "STOP", "index": 0 }],
            "usageMetadata": self.gemini_usage(),
            "modelVersion": self.model,
        })
    }

    fn gemini_sse(&self) -> Vec<String> {
        let chunk = |parts: Vec<Value>, finish: bool| {
            let mut candidate =
                json!({ "content": { "role": "model", "parts": parts }, "index": 0 });
            let mut body = json!({ "modelVersion": self.model });
            if finish {
                candidate["finishReason"] = json!("STOP");
                body["usageMetadata"] = self.gemini_usage();
            }
            body["candidates"] = json!([candidate]);
            format!("data: {body}")
        };
        let mut events: Vec<String> = split_in_two(&self.turn.text)
            .into_iter()
            .map(|piece| chunk(vec![json!({ "text": piece })], false))
            .collect();
        let calls: Vec<Value> = self.turn.tool_calls.iter().map(Self::gemini_call).collect();
        events.push(chunk(calls, true));
        events
    }
}

fn nullable_text(text: &str) -> Value {
    if text.is_empty() {
        Value::Null
    } else {
        json!(text)
    }
}

/// Vendors that send arguments as objects get the parsed object; text that is not JSON goes out
/// as a JSON string, which is what a confused model produces there.
fn parsed_or_raw(call: &FakeToolCall) -> Value {
    serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!(call.arguments))
}

/// Cuts text in two at a character boundary (so streams carry more than one delta).
fn split_in_two(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    let middle = text
        .char_indices()
        .map(|(i, _)| i)
        .nth(text.chars().count() / 2)
        .unwrap_or(0);
    let (head, tail) = text.split_at(middle);
    [head, tail]
        .into_iter()
        .filter(|part| !part.is_empty())
        .map(str::to_owned)
        .collect()
}
