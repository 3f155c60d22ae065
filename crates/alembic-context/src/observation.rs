//! What the pipeline tells the memory about one finished tool call.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One finished tool call as the memory sees it: the arguments, the structured result, the
/// compact text the model saw, and whether the call failed (error, blocked or refused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolObservation {
    pub tool: String,
    pub args: Value,
    #[serde(default)]
    pub data: Value,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub failed: bool,
}

impl ToolObservation {
    /// A successful call.
    pub fn ok(tool: impl Into<String>, args: Value, data: Value, text: impl Into<String>) -> Self {
        ToolObservation {
            tool: tool.into(),
            args,
            data,
            text: text.into(),
            failed: false,
        }
    }

    /// A failed, blocked or refused call; `reason` is what the model was told.
    pub fn failed(tool: impl Into<String>, args: Value, reason: impl Into<String>) -> Self {
        ToolObservation {
            tool: tool.into(),
            args,
            data: Value::Null,
            text: reason.into(),
            failed: true,
        }
    }

    /// The first non-empty string among `keys` in the arguments.
    pub fn arg_str(&self, keys: &[&str]) -> Option<&str> {
        str_field(&self.args, keys)
    }
}

/// The first non-empty string among `keys` of a JSON object.
pub(crate) fn str_field<'a>(value: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .filter_map(|k| value.get(*k).and_then(Value::as_str))
        .find(|s| !s.trim().is_empty())
}

/// The first array among `keys` of a JSON object.
pub(crate) fn array_field<'a>(value: &'a Value, keys: &[&str]) -> Option<&'a Vec<Value>> {
    keys.iter()
        .find_map(|k| value.get(*k).and_then(Value::as_array))
}

/// Names of tools whose success means "a knowledge candidate was submitted".
pub fn is_submit_tool(tool: &str) -> bool {
    tool.starts_with("submit_") || tool == "collect_scan_recipe"
}

/// Entries of a batch result: `batchResults` as an array of objects (keyed by their
/// `pattern`/`path` field) or as an object keyed by pattern or path (the alembic-code tools).
pub(crate) fn batch_entries(data: &Value) -> Option<Vec<(String, &Value)>> {
    match data
        .get("batchResults")
        .or_else(|| data.get("files").filter(|f| f.is_object()))?
    {
        Value::Object(map) => Some(map.iter().map(|(k, v)| (k.clone(), v)).collect()),
        Value::Array(items) => Some(
            items
                .iter()
                .map(|v| {
                    let key = str_field(v, &["pattern", "query", "path", "filePath", "file"])
                        .unwrap_or("?");
                    (key.to_string(), v)
                })
                .collect(),
        ),
        _ => None,
    }
}
