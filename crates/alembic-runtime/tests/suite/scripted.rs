//! What the scripted models of the scenario tests read from the conversation so far.

use alembic_llm::fake::RecordedRequest;
use serde_json::Value;

/// The tool calls of the conversation so far: (name, arguments), in
/// the OpenAI wire format the scenarios use.
pub(super) fn calls_so_far(request: &RecordedRequest) -> Vec<(String, Value)> {
    let messages = request.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            let f = &c["function"];
            let args = f["arguments"]
                .as_str()
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or(Value::Null);
            (f["name"].as_str().unwrap_or("").to_string(), args)
        })
        .collect()
}
