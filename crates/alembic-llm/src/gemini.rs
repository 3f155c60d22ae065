//! Google Gemini wire format: `POST {base}/v1beta/models/{model}:generateContent` and
//! `:streamGenerateContent?alt=sse`.

use std::sync::atomic::{AtomicU64, Ordering};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use crate::assembler::StreamAssembler;
use crate::model::{
    ChatRequest, ChatResponse, FinishReason, Message, StreamEvent, ToolCall, ToolChoice, Usage,
    check_tool_arguments,
};
use crate::wire::{
    DecodeError, StreamDecoder, WireFormat, as_u64, invalid, join_url, parse_json,
    settle_finish_reason, tool_names_by_call_id,
};

/// Gemini does not give its function calls ids; each provider numbers them itself so that tool
/// results can be matched to calls.
#[derive(Debug, Default)]
pub(crate) struct GeminiWire {
    next_call: std::sync::Arc<AtomicU64>,
}

impl GeminiWire {
    fn call_id(&self, sent: Option<&str>) -> String {
        match sent {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => format!(
                "gemini_call_{}",
                self.next_call.fetch_add(1, Ordering::Relaxed) + 1
            ),
        }
    }
}

impl WireFormat for GeminiWire {
    fn endpoint(&self, base_url: &str, model: &str, stream: bool) -> String {
        let base = base_url.trim_end_matches('/');
        let base = if base.ends_with("/v1beta") || base.ends_with("/v1") {
            base.to_owned()
        } else {
            join_url(base, "v1beta")
        };
        let method = if stream {
            "streamGenerateContent?alt=sse"
        } else {
            "generateContent"
        };
        // Google lists models as `models/<name>`; accept that spelling too.
        let model = model.trim_start_matches("models/");
        join_url(&base, &format!("models/{model}:{method}"))
    }

    /// The key goes in a header, never in the URL (reference bug 41 leaked it into logs).
    fn headers(&self, api_key: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(mut value) = api_key.and_then(|key| HeaderValue::from_str(key).ok()) {
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-goog-api-key"), value);
        }
        headers
    }

    fn encode(&self, request: &ChatRequest, model: &str, _stream: bool) -> Value {
        let signatures = if model.contains("gemini-3") {
            Signatures::Required
        } else {
            Signatures::AsReceived
        };
        let mut body = json!({ "contents": encode_contents(&request.messages, signatures) });
        let system = request.effective_system();
        if !system.is_empty() {
            body["systemInstruction"] = json!({ "parts": [{ "text": system }] });
        }
        if !request.tools.is_empty() {
            let declarations: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| json!({ "name": tool.name, "description": tool.description, "parameters": sanitize_schema(&tool.parameters) }))
                .collect();
            body["tools"] = json!([{ "functionDeclarations": declarations }]);
            let mode = match request.tool_choice {
                ToolChoice::Auto => "AUTO",
                ToolChoice::Required => "ANY",
                ToolChoice::None => "NONE",
            };
            body["toolConfig"] = json!({ "functionCallingConfig": { "mode": mode } });
        }
        let mut generation = Map::new();
        if let Some(temperature) = request.temperature {
            generation.insert("temperature".into(), json!(temperature));
        }
        if let Some(max) = request.max_tokens {
            generation.insert("maxOutputTokens".into(), json!(max));
        }
        if !generation.is_empty() {
            body["generationConfig"] = Value::Object(generation);
        }
        body
    }

    fn decode(&self, body: &Value) -> Result<ChatResponse, DecodeError> {
        let mut response = ChatResponse::default();
        let Some(candidate) = body.pointer("/candidates/0") else {
            if body.pointer("/promptFeedback/blockReason").is_some() {
                response.finish_reason = FinishReason::ContentFilter;
                response.usage = usage(body.get("usageMetadata"));
                return Ok(response);
            }
            return Err(invalid(format!(
                "no candidates in the response: {:.300}",
                body.to_string()
            )));
        };
        for part in parts(candidate) {
            if let Some(text) = answer_text(part) {
                response.text.push_str(text);
            } else if let Some(call) = self.function_call(part) {
                match call {
                    Ok(call) => response.tool_calls.push(call),
                    Err(malformed) => response.malformed_tool_calls.push(malformed),
                }
            }
        }
        response.finish_reason =
            finish_reason(candidate.get("finishReason").and_then(Value::as_str));
        response.usage = usage(body.get("usageMetadata"));
        settle_finish_reason(&mut response);
        Ok(response)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(GeminiStream {
            wire: GeminiWire {
                next_call: self.next_call.clone(),
            },
            ..GeminiStream::default()
        })
    }
}

impl GeminiWire {
    fn function_call(
        &self,
        part: &Value,
    ) -> Option<Result<ToolCall, crate::model::MalformedToolCall>> {
        let call = part.get("functionCall")?;
        let id = self.call_id(call.get("id").and_then(Value::as_str));
        let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
        let checked =
            check_tool_arguments(&id, name, call.get("args").cloned().unwrap_or(Value::Null));
        Some(checked.map(|mut call| {
            call.thought_signature = part
                .get("thoughtSignature")
                .and_then(Value::as_str)
                .map(str::to_owned);
            call
        }))
    }
}

fn parts(candidate: &Value) -> impl Iterator<Item = &Value> {
    candidate
        .pointer("/content/parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Text of the answer; thought summaries (`thought: true`) are not part of it.
fn answer_text(part: &Value) -> Option<&str> {
    if part.get("thought").and_then(Value::as_bool) == Some(true) {
        return Some("");
    }
    part.get("text").and_then(Value::as_str)
}

/// Gemini 3 rejects a model turn whose first function call carries no `thoughtSignature`. Calls
/// that come from elsewhere (another provider, a history store that dropped the field) get the
/// placeholder Google documents for that case; other models get exactly what they sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signatures {
    Required,
    AsReceived,
}

const PLACEHOLDER_SIGNATURE: &str = "skip_thought_signature_validator";

/// Gemini's roles are `user` and `model`; function results travel as `functionResponse` parts of a
/// user turn, and neighbouring turns of the same role are merged.
fn encode_contents(messages: &[Message], signatures: Signatures) -> Vec<Value> {
    let names = tool_names_by_call_id(messages);
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, parts) = match message {
            Message::System { .. } => continue,
            Message::User { content } => ("user", text_part(content).into_iter().collect()),
            Message::Assistant {
                content,
                tool_calls,
            } => ("model", model_parts(content, tool_calls, signatures)),
            Message::Tool {
                tool_call_id,
                content,
                is_error,
            } => {
                let name = names
                    .get(tool_call_id.as_str())
                    .copied()
                    .unwrap_or("unknown_tool");
                let key = if *is_error { "error" } else { "result" };
                (
                    "user",
                    vec![
                        json!({ "functionResponse": { "name": name, "response": { key: content } } }),
                    ],
                )
            }
        };
        if parts.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last_role, last_parts)) if *last_role == role => last_parts.extend(parts),
            _ => turns.push((role, parts)),
        }
    }
    turns
        .into_iter()
        .map(|(role, parts)| json!({ "role": role, "parts": parts }))
        .collect()
}

/// Text and function calls of one model turn.
fn model_parts(content: &str, tool_calls: &[ToolCall], signatures: Signatures) -> Vec<Value> {
    let mut parts: Vec<Value> = text_part(content).into_iter().collect();
    parts.extend(tool_calls.iter().map(encode_call));
    let unsigned = tool_calls
        .iter()
        .all(|call| call.thought_signature.is_none());
    if signatures == Signatures::Required
        && unsigned
        && let Some(first_call) = parts
            .iter_mut()
            .find(|part| part.get("functionCall").is_some())
    {
        first_call["thoughtSignature"] = json!(PLACEHOLDER_SIGNATURE);
    }
    parts
}

fn text_part(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({ "text": text }))
}

fn encode_call(call: &ToolCall) -> Value {
    let args = if call.arguments.is_object() {
        call.arguments.clone()
    } else {
        json!({})
    };
    let mut part = json!({ "functionCall": { "name": call.name, "args": args } });
    if let Some(signature) = &call.thought_signature {
        part["thoughtSignature"] = json!(signature);
    }
    part
}

/// Gemini accepts an OpenAPI subset of JSON Schema and rejects unknown keywords, so keep only the
/// documented ones, turn `"type": [T, "null"]` into `nullable`, and give arrays an `items`.
pub(crate) fn sanitize_schema(schema: &Value) -> Value {
    let Value::Object(object) = schema else {
        return json!({ "type": "object" });
    };
    let mut out: Map<String, Value> = object
        .iter()
        .filter(|(key, _)| GEMINI_SCHEMA_KEYS.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), sanitize_keyword(key, value)))
        .collect();
    settle_schema_type(&mut out);
    Value::Object(out)
}

/// The Schema fields Gemini documents; everything else (`$schema`, `default`, `examples`,
/// `additionalProperties`…) is dropped.
const GEMINI_SCHEMA_KEYS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
    "propertyOrdering",
    "items",
    "minimum",
    "maximum",
];

/// Recurses into the keywords that hold schemas.
fn sanitize_keyword(key: &str, value: &Value) -> Value {
    match key {
        "properties" => Value::Object(
            value
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, schema)| (name.clone(), sanitize_schema(schema)))
                .collect(),
        ),
        "items" => sanitize_schema(value),
        "anyOf" => value
            .as_array()
            .into_iter()
            .flatten()
            .map(sanitize_schema)
            .collect(),
        _ => value.clone(),
    }
}

/// One concrete `type` per schema (`[T, "null"]` becomes `T` + `nullable`), a guessed type when
/// none is given, and `items` for arrays, which Gemini requires.
fn settle_schema_type(out: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = out.get("type").cloned() {
        let concrete = types
            .iter()
            .find(|t| t.as_str() != Some("null"))
            .cloned()
            .unwrap_or(json!("string"));
        if types.iter().any(|t| t.as_str() == Some("null")) {
            out.insert("nullable".into(), json!(true));
        }
        out.insert("type".into(), concrete);
    }
    if !out.contains_key("type") && !out.contains_key("anyOf") {
        let guessed = if out.contains_key("properties") {
            "object"
        } else {
            "string"
        };
        out.insert("type".into(), json!(guessed));
    }
    if out.get("type").and_then(Value::as_str) == Some("array") && !out.contains_key("items") {
        out.insert("items".into(), json!({ "type": "string" }));
    }
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        None | Some("STOP" | "FINISH_REASON_UNSPECIFIED") => FinishReason::Stop,
        Some("MAX_TOKENS") => FinishReason::Length,
        Some(
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY",
        ) => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// Thinking tokens are billed as output.
fn usage(value: Option<&Value>) -> Usage {
    let Some(value) = value else {
        return Usage::default();
    };
    Usage {
        input_tokens: as_u64(value.get("promptTokenCount")),
        output_tokens: as_u64(value.get("candidatesTokenCount"))
            + as_u64(value.get("thoughtsTokenCount")),
    }
}

#[derive(Default)]
struct GeminiStream {
    wire: GeminiWire,
    assembler: StreamAssembler,
    finished: bool,
    done: bool,
}

impl StreamDecoder for GeminiStream {
    fn on_event(&mut self, _event: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        let chunk = parse_json(data)?;
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error");
            return Err(DecodeError::Vendor(message.to_owned()));
        }
        let mut events = Vec::new();
        if let Some(candidate) = chunk.pointer("/candidates/0") {
            for part in parts(candidate) {
                if let Some(text) = answer_text(part) {
                    events.extend(self.assembler.text(text));
                } else if let Some(call) = self.wire.function_call(part) {
                    let call = call.unwrap_or_else(|malformed| malformed.to_history_call());
                    let index = self.assembler.next_index();
                    events.extend(self.assembler.whole_call(index, call));
                }
            }
            if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
                self.assembler.finish(finish_reason(Some(reason)));
                self.finished = true;
            }
        }
        if chunk.pointer("/promptFeedback/blockReason").is_some() {
            self.assembler.finish(FinishReason::ContentFilter);
            self.finished = true;
        }
        if let Some(value) = chunk.get("usageMetadata") {
            events.push(self.assembler.set_usage(usage(Some(value))));
        }
        Ok(events)
    }

    fn on_end(&mut self) -> Result<Vec<StreamEvent>, DecodeError> {
        if self.done {
            return Ok(Vec::new());
        }
        if !self.finished {
            return Err(invalid("stream ended before a finishReason"));
        }
        self.done = true;
        Ok(self.assembler.done())
    }
}
