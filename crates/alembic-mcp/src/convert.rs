//! Translation between Alembic's tool types and MCP's: tool listings, call results and the
//! caller identity derived from the client's `clientInfo`.

use std::sync::Arc;

use alembic_tools::{EffectClass, OutcomeStatus, ToolDefinition, ToolOutcome};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

/// The longest client name kept in a caller id; longer names are cut (audit ids stay short).
const MAX_CLIENT_NAME: usize = 64;

/// An MCP tool listing entry for a registered tool: name, description and input schema, with
/// hints derived from the tool's effect class.
pub fn tool_for_mcp(def: &ToolDefinition) -> Tool {
    let schema: JsonObject = match &def.parameters {
        Value::Object(map) => map.clone(),
        // The registry refuses non-object schemas; an empty object schema is the safe reading.
        _ => serde_json::Map::from_iter([("type".to_string(), json!("object"))]),
    };
    let mut tool = Tool::new(def.name.clone(), def.description.clone(), Arc::new(schema));
    tool.annotations = Some(annotations_for(def.effect));
    tool
}

fn annotations_for(effect: EffectClass) -> ToolAnnotations {
    let read_only = effect.is_side_effect_free();
    let destructive = matches!(
        effect,
        EffectClass::WritesProjectFiles | EffectClass::RunsCommands
    );
    ToolAnnotations::new()
        .read_only(read_only)
        .destructive(destructive)
        .idempotent(read_only)
        .open_world(effect == EffectClass::CallsLlm)
}

/// The MCP result of a finished pipeline call.
///
/// Success carries the tool's JSON as `structuredContent` (wrapped as `{"result": ...}` when
/// it is not an object, since MCP requires an object) and the compact text rendering. Every
/// other status (refusal, invalid arguments, unknown tool, failure, timeout, cancellation) is
/// an `isError` result whose text names the status, the rule and the error, and whose
/// structured content carries the same fields for programs.
pub fn result_for_outcome(outcome: &ToolOutcome) -> CallToolResult {
    match (&outcome.output, outcome.status) {
        (Some(output), OutcomeStatus::Ok) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(output.text.clone())]);
            result.structured_content = Some(as_object(output.data.clone()));
            result
        }
        _ => error_result(outcome),
    }
}

fn as_object(data: Value) -> Value {
    match data {
        Value::Object(_) => data,
        other => json!({ "result": other }),
    }
}

fn error_result(outcome: &ToolOutcome) -> CallToolResult {
    let status = outcome.status.as_str();
    let error = outcome.error.as_deref().unwrap_or("no detail");
    let mut text = match &outcome.rule {
        Some(rule) => format!("error ({status}, rule {rule}): {error}"),
        None => format!("error ({status}): {error}"),
    };
    if let Some(msg) = outcome.metadata.extensions.text_for_model() {
        text = msg.to_string();
    }
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    let mut detail = json!({ "status": status, "error": error });
    if let Some(rule) = &outcome.rule {
        detail["rule"] = json!(rule);
    }
    if !outcome.suggestions.is_empty() {
        detail["suggestions"] = json!(outcome.suggestions);
    }
    result.structured_content = Some(detail);
    result
}

/// The audit identity of an MCP client: `mcp:<clientInfo.name>`, with the name reduced to
/// printable characters and cut to 64 of them; `mcp:unknown` when the client sent none.
pub fn caller_id(client_name: Option<&str>) -> String {
    let cleaned: String = client_name
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_CLIENT_NAME)
        .collect();
    let trimmed = cleaned.trim();
    if trimmed.is_empty() {
        "mcp:unknown".to_string()
    } else {
        format!("mcp:{trimmed}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alembic_tools::{ToolMetadata, ToolOutput};
    use pretty_assertions::assert_eq;

    fn outcome(status: OutcomeStatus, output: Option<ToolOutput>) -> ToolOutcome {
        ToolOutcome {
            call_id: "c1".into(),
            tool: "t".into(),
            status,
            output,
            error: (status != OutcomeStatus::Ok).then(|| "path escapes the project".into()),
            rule: (status == OutcomeStatus::Blocked).then(|| "path_guard.escape".into()),
            suggestions: Vec::new(),
            metadata: ToolMetadata::default(),
        }
    }

    #[test]
    fn success_carries_object_structured_content_and_text() {
        let out = ToolOutput::new(json!({"hits": 2}), "2 hits");
        let r = result_for_outcome(&outcome(OutcomeStatus::Ok, Some(out)));
        assert_eq!(r.is_error, Some(false));
        assert_eq!(r.structured_content, Some(json!({"hits": 2})));
        assert_eq!(
            serde_json::to_value(&r.content).unwrap(),
            json!([{"type": "text", "text": "2 hits"}])
        );
    }

    #[test]
    fn non_object_data_is_wrapped() {
        let out = ToolOutput::new(json!([1, 2]), "two");
        let r = result_for_outcome(&outcome(OutcomeStatus::Ok, Some(out)));
        assert_eq!(r.structured_content, Some(json!({"result": [1, 2]})));
    }

    #[test]
    fn refusal_is_an_error_result_with_the_rule() {
        let r = result_for_outcome(&outcome(OutcomeStatus::Blocked, None));
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            serde_json::to_value(&r.content).unwrap(),
            json!([{"type": "text", "text": "error (blocked, rule path_guard.escape): path escapes the project"}])
        );
        assert_eq!(
            r.structured_content,
            Some(
                json!({"status": "blocked", "error": "path escapes the project", "rule": "path_guard.escape"})
            )
        );
    }

    #[test]
    fn caller_ids_are_printable_and_bounded() {
        assert_eq!(caller_id(Some("claude-code")), "mcp:claude-code");
        assert_eq!(caller_id(Some("  \u{7}\n")), "mcp:unknown");
        assert_eq!(caller_id(None), "mcp:unknown");
        assert_eq!(caller_id(Some(&"x".repeat(500))).len(), 4 + 64);
    }

    #[test]
    fn effect_classes_become_hints() {
        let a = annotations_for(EffectClass::ReadsProjectFiles);
        assert_eq!(
            (a.read_only_hint, a.destructive_hint),
            (Some(true), Some(false))
        );
        let w = annotations_for(EffectClass::WritesProjectFiles);
        assert_eq!(
            (w.read_only_hint, w.destructive_hint),
            (Some(false), Some(true))
        );
    }
}
