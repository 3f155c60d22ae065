//! Anthropic Messages wire format (`POST {base}/v1/messages`).

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use crate::assembler::StreamAssembler;
use crate::model::{
    ChatRequest, ChatResponse, FinishReason, Message, StreamEvent, ToolChoice, check_tool_arguments,
};
use crate::wire::{
    DecodeError, StreamDecoder, WireFormat, as_u64, invalid, join_url, parse_json,
    settle_finish_reason, tool_names_by_call_id,
};

/// Anthropic requires `max_tokens`; this is used when the request leaves it open.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 4096;
const API_VERSION: &str = "2023-06-01";

#[derive(Debug)]
pub(crate) struct AnthropicWire;

impl WireFormat for AnthropicWire {
    fn endpoint(&self, base_url: &str, _model: &str, _stream: bool) -> String {
        // ANTHROPIC_BASE_URL is the host root by convention; accept one ending in /v1 too.
        let base = base_url.trim_end_matches('/');
        if base.ends_with("/v1") {
            join_url(base, "messages")
        } else {
            join_url(base, "v1/messages")
        }
    }

    fn headers(&self, api_key: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        if let Some(mut value) = api_key.and_then(|key| HeaderValue::from_str(key).ok()) {
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        headers
    }

    fn encode(&self, request: &ChatRequest, model: &str, stream: bool) -> Value {
        let mut body = json!({
            "model": model,
            "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": encode_messages(&request.messages, !request.tools.is_empty()),
        });
        let system = request.effective_system();
        if !system.is_empty() {
            body["system"] = json!(system);
        }
        if !request.tools.is_empty() {
            // Tools stay in the request under `none`: the history may hold tool_use blocks,
            // which need their definitions (reference bug 39 dropped them).
            body["tools"] = request
                .tools
                .iter()
                .map(|tool| json!({ "name": tool.name, "description": tool.description, "input_schema": tool.parameters }))
                .collect();
            body["tool_choice"] = json!({ "type": match request.tool_choice {
                ToolChoice::Auto => "auto",
                ToolChoice::Required => "any",
                ToolChoice::None => "none",
            }});
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if stream {
            body["stream"] = json!(true);
        }
        body
    }

    fn decode(&self, body: &Value) -> Result<ChatResponse, DecodeError> {
        let blocks = body
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                invalid(format!(
                    "no content in the response: {:.300}",
                    body.to_string()
                ))
            })?;
        let mut response = ChatResponse::default();
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => response.text.push_str(
                    block
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                ),
                Some("tool_use") => {
                    let id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                    let name = block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let input = block.get("input").cloned().unwrap_or(Value::Null);
                    match check_tool_arguments(id, name, input) {
                        Ok(call) => response.tool_calls.push(call),
                        Err(malformed) => response.malformed_tool_calls.push(malformed),
                    }
                }
                _ => {} // thinking and other blocks are not part of the answer
            }
        }
        response.finish_reason = finish_reason(body.get("stop_reason").and_then(Value::as_str));
        let usage = body.get("usage").unwrap_or(&Value::Null);
        response.usage.input_tokens = input_tokens(usage);
        response.usage.output_tokens = as_u64(usage.get("output_tokens"));
        settle_finish_reason(&mut response);
        Ok(response)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(AnthropicStream::default())
    }
}

/// Role plus content blocks; consecutive same-role messages merge into one, because Anthropic
/// requires alternating roles and wants all tool results of a turn in one user message.
fn encode_messages(messages: &[Message], tools_defined: bool) -> Vec<Value> {
    let names = tool_names_by_call_id(messages);
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::System { .. } => continue,
            Message::User { content } => ("user", text_block(content).into_iter().collect()),
            Message::Assistant {
                content,
                tool_calls,
            } if tools_defined => {
                let mut blocks: Vec<Value> = text_block(content).into_iter().collect();
                blocks.extend(tool_calls.iter().map(tool_use_block));
                ("assistant", blocks)
            }
            Message::Assistant {
                content,
                tool_calls,
            } => ("assistant", flattened_calls(content, tool_calls)),
            Message::Tool {
                tool_call_id,
                content,
                is_error,
            } if tools_defined => (
                "user",
                vec![tool_result_block(tool_call_id, content, *is_error)],
            ),
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => {
                let name = names.get(tool_call_id.as_str()).copied().unwrap_or("tool");
                (
                    "user",
                    text_block(&format!("[result of {name}]\n{content}"))
                        .into_iter()
                        .collect(),
                )
            }
        };
        // Empty turns are dropped: Anthropic rejects empty text blocks (reference bug 39).
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({ "role": role, "content": content }))
        .collect()
}

fn tool_use_block(call: &crate::model::ToolCall) -> Value {
    // Only objects are valid `input`; a malformed call is echoed as empty input.
    let input = if call.arguments.is_object() {
        call.arguments.clone()
    } else {
        json!({})
    };
    json!({ "type": "tool_use", "id": call.id, "name": call.name, "input": input })
}

fn tool_result_block(tool_call_id: &str, content: &str, is_error: bool) -> Value {
    let mut block =
        json!({ "type": "tool_result", "tool_use_id": tool_call_id, "content": content });
    if is_error {
        block["is_error"] = json!(true);
    }
    block
}

/// Anthropic refuses `tool_use`/`tool_result` blocks in a request that defines no tools, so a
/// history with tool rounds sent without tools (a forced summary, say) is told as text.
fn flattened_calls(content: &str, tool_calls: &[crate::model::ToolCall]) -> Vec<Value> {
    let mut text = content.to_owned();
    for call in tool_calls {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("[called {} with {}]", call.name, call.arguments));
    }
    text_block(&text).into_iter().collect()
}

fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({ "type": "text", "text": text }))
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        None | Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens") => FinishReason::Length,
        Some("refusal") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// Cached prompt tokens are input too.
fn input_tokens(usage: &Value) -> u64 {
    as_u64(usage.get("input_tokens"))
        + as_u64(usage.get("cache_creation_input_tokens"))
        + as_u64(usage.get("cache_read_input_tokens"))
}

#[derive(Default)]
struct AnthropicStream {
    assembler: StreamAssembler,
    done: bool,
}

impl StreamDecoder for AnthropicStream {
    fn on_event(&mut self, _event: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        let event = parse_json(data)?;
        let index = event
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or(0);
        let mut events = Vec::new();
        match event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "message_start" => {
                let usage = event.pointer("/message/usage").unwrap_or(&Value::Null);
                self.assembler.set_input_tokens(input_tokens(usage));
                self.assembler
                    .set_output_tokens(as_u64(usage.get("output_tokens")));
            }
            "content_block_start" => self.on_block_start(index, &event, &mut events),
            "content_block_delta" => self.on_block_delta(index, &event, &mut events),
            "content_block_stop" => events.extend(self.assembler.finish_call(index)),
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.assembler.finish(finish_reason(Some(reason)));
                }
                if let Some(output) = event
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64)
                {
                    self.assembler.set_output_tokens(output);
                    events.push(self.assembler.usage_event());
                }
            }
            "message_stop" => {
                self.done = true;
                events.extend(self.assembler.done());
            }
            "error" => {
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error");
                return Err(DecodeError::Vendor(message.to_owned()));
            }
            _ => {} // ping and future event types
        }
        Ok(events)
    }

    fn on_end(&mut self) -> Result<Vec<StreamEvent>, DecodeError> {
        if self.done {
            Ok(Vec::new())
        } else {
            Err(invalid("stream ended before message_stop"))
        }
    }
}

impl AnthropicStream {
    fn on_block_start(&mut self, index: usize, event: &Value, events: &mut Vec<StreamEvent>) {
        let block = event.get("content_block").unwrap_or(&Value::Null);
        match block.get("type").and_then(Value::as_str) {
            Some("tool_use") => events.push(self.assembler.tool_delta(
                index,
                block.get("id").and_then(Value::as_str),
                block.get("name").and_then(Value::as_str),
                "",
            )),
            Some("text") => events.extend(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .and_then(|t| self.assembler.text(t)),
            ),
            _ => {}
        }
    }

    fn on_block_delta(&mut self, index: usize, event: &Value, events: &mut Vec<StreamEvent>) {
        let delta = event.get("delta").unwrap_or(&Value::Null);
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                events.extend(
                    delta
                        .get("text")
                        .and_then(Value::as_str)
                        .and_then(|t| self.assembler.text(t)),
                );
            }
            Some("input_json_delta") => {
                let partial = delta
                    .get("partial_json")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                events.push(self.assembler.tool_delta(index, None, None, partial));
            }
            _ => {} // thinking and signature deltas
        }
    }
}
