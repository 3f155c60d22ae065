//! OpenAI Chat Completions wire format (`POST {base}/chat/completions`), also spoken by DeepSeek,
//! vLLM, Ollama and llama.cpp servers.

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::assembler::StreamAssembler;
use crate::model::{
    ChatRequest, ChatResponse, FinishReason, Message, StreamEvent, ToolCall, ToolChoice, Usage,
    check_tool_arguments, parse_tool_arguments,
};
use crate::wire::{
    DecodeError, StreamDecoder, WireFormat, as_u64, invalid, join_url, parse_json,
    settle_finish_reason,
};

/// Which field carries the output limit: OpenAI's own API wants `max_completion_tokens` (newer
/// models reject `max_tokens`); compatible servers (DeepSeek, vLLM, Ollama) read `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MaxTokensField {
    MaxCompletionTokens,
    MaxTokens,
}

#[derive(Debug)]
pub(crate) struct OpenAiWire {
    pub(crate) max_tokens_field: MaxTokensField,
}

impl WireFormat for OpenAiWire {
    fn endpoint(&self, base_url: &str, _model: &str, _stream: bool) -> String {
        join_url(base_url, "chat/completions")
    }

    fn headers(&self, api_key: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) =
            api_key.and_then(|key| HeaderValue::from_str(&format!("Bearer {key}")).ok())
        {
            let mut value = value;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        headers
    }

    fn encode(&self, request: &ChatRequest, model: &str, stream: bool) -> Value {
        let mut body = json!({ "model": model, "messages": encode_messages(request) });
        if !request.tools.is_empty() {
            body["tools"] = request.tools.iter().map(encode_tool).collect();
            // Only with tools: OpenAI rejects tool_choice without tools (reference bug 38).
            body["tool_choice"] = json!(match request.tool_choice {
                ToolChoice::Auto => "auto",
                ToolChoice::Required => "required",
                ToolChoice::None => "none",
            });
        }
        if let Some(max) = request.max_tokens {
            let field = match self.max_tokens_field {
                MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
                MaxTokensField::MaxTokens => "max_tokens",
            };
            body[field] = json!(max);
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if stream {
            body["stream"] = json!(true);
            body["stream_options"] = json!({ "include_usage": true });
        }
        body
    }

    fn decode(&self, body: &Value) -> Result<ChatResponse, DecodeError> {
        let choice = body.pointer("/choices/0").ok_or_else(|| {
            invalid(format!(
                "no choices in the response: {:.300}",
                body.to_string()
            ))
        })?;
        let message = choice.get("message").unwrap_or(&Value::Null);
        let mut response = ChatResponse {
            text: message_text(message.get("content")),
            ..ChatResponse::default()
        };
        for (index, call) in message
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("call_{index}"), str::to_owned);
            let function = call.get("function").unwrap_or(&Value::Null);
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match read_arguments(&id, name, function.get("arguments")) {
                Ok(call) => response.tool_calls.push(call),
                Err(malformed) => response.malformed_tool_calls.push(malformed),
            }
        }
        response.finish_reason = finish_reason(choice.get("finish_reason").and_then(Value::as_str));
        response.usage = usage(body.get("usage"));
        settle_finish_reason(&mut response);
        Ok(response)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(OpenAiStream::default())
    }
}

fn encode_messages(request: &ChatRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    let system = request.effective_system();
    if !system.is_empty() {
        out.push(json!({ "role": "system", "content": system }));
    }
    for message in &request.messages {
        match message {
            Message::System { .. } => {}
            Message::User { content } => out.push(json!({ "role": "user", "content": content })),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if content.is_empty() && tool_calls.is_empty() {
                    continue;
                }
                let mut entry = json!({
                    "role": "assistant",
                    "content": if content.is_empty() { Value::Null } else { json!(content) },
                });
                if !tool_calls.is_empty() {
                    entry["tool_calls"] = tool_calls.iter().map(encode_call).collect();
                }
                out.push(entry);
            }
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => {
                out.push(
                    json!({ "role": "tool", "tool_call_id": tool_call_id, "content": content }),
                );
            }
        }
    }
    out
}

fn encode_call(call: &ToolCall) -> Value {
    // A malformed call is echoed with the model's raw text, so it sees what it sent.
    let arguments = match &call.arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    };
    json!({ "id": call.id, "type": "function", "function": { "name": call.name, "arguments": arguments } })
}

fn encode_tool(tool: &crate::model::ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": { "name": tool.name, "description": tool.description, "parameters": tool.parameters },
    })
}

/// `content` is a string, null, or (some compatible servers) a list of text parts.
fn message_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// OpenAI sends arguments as a JSON string; some compatible servers send an object.
fn read_arguments(
    id: &str,
    name: &str,
    arguments: Option<&Value>,
) -> Result<ToolCall, crate::model::MalformedToolCall> {
    match arguments {
        Some(Value::String(raw)) => parse_tool_arguments(id, name, raw),
        Some(other) => check_tool_arguments(id, name, other.clone()),
        None => parse_tool_arguments(id, name, ""),
    }
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        None | Some("stop") => FinishReason::Stop,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

fn usage(value: Option<&Value>) -> Usage {
    let Some(value) = value else {
        return Usage::default();
    };
    Usage {
        input_tokens: as_u64(value.get("prompt_tokens")),
        output_tokens: as_u64(value.get("completion_tokens")),
    }
}

#[derive(Default)]
struct OpenAiStream {
    assembler: StreamAssembler,
    finished: bool,
    done: bool,
}

impl StreamDecoder for OpenAiStream {
    fn on_event(&mut self, _event: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        if data.trim() == "[DONE]" {
            self.finished = true;
            return self.on_end();
        }
        let chunk = parse_json(data)?;
        if let Some(error) = chunk.get("error") {
            return Err(DecodeError::Vendor(crate::error::vendor_error_message(
                &json!({ "error": error }).to_string(),
            )));
        }
        let mut events = Vec::new();
        if let Some(choice) = chunk.pointer("/choices/0") {
            self.on_choice(choice, &mut events);
        }
        if let Some(value) = chunk.get("usage").filter(|v| !v.is_null()) {
            events.push(self.assembler.set_usage(usage(Some(value))));
        }
        Ok(events)
    }

    fn on_end(&mut self) -> Result<Vec<StreamEvent>, DecodeError> {
        if self.done {
            return Ok(Vec::new());
        }
        if !self.finished {
            return Err(invalid("stream ended before a finish_reason or [DONE]"));
        }
        self.done = true;
        Ok(self.assembler.done())
    }
}

impl OpenAiStream {
    fn on_choice(&mut self, choice: &Value, events: &mut Vec<StreamEvent>) {
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(event) = delta
            .get("content")
            .and_then(Value::as_str)
            .and_then(|t| self.assembler.text(t))
        {
            events.push(event);
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .map_or(0, |i| usize::try_from(i).unwrap_or(0));
            let function = call.get("function").unwrap_or(&Value::Null);
            let arguments = match function.get("arguments") {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            events.push(self.assembler.tool_delta(
                index,
                call.get("id").and_then(Value::as_str),
                function.get("name").and_then(Value::as_str),
                &arguments,
            ));
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.assembler.finish(finish_reason(Some(reason)));
            self.finished = true;
        }
    }
}
