//! Reading tool arguments: strings, numbers, lists, and a submission into a [`NewEntry`].
//!
//! Submissions use the argument names the pipeline's SubmitDedup middleware reads (`title`,
//! `content.pattern`), so duplicate detection inside one agent loop sees the same values.

use alembic_tools::ToolError;
use serde_json::{Map, Value};

use crate::guard::language_of;
use crate::model::{Kind, NewEntry};

/// A non-blank string argument, trimmed.
pub(crate) fn opt_str<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A required non-blank string argument.
pub(crate) fn req_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    opt_str(args, key)
        .ok_or_else(|| ToolError::Invalid(format!("\"{key}\" is required and must not be blank")))
}

/// The first present string among `keys`.
pub(crate) fn first_str<'a>(args: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| opt_str(args, k))
}

/// The entry id, accepted under the reference's names (`recipeId`, `candidateId`, `id`).
pub(crate) fn entry_id(args: &Value) -> Result<&str, ToolError> {
    first_str(args, &["recipeId", "candidateId", "id"])
        .ok_or_else(|| ToolError::Invalid("\"recipeId\" (or \"candidateId\") is required".into()))
}

pub(crate) fn usize_arg(args: &Value, key: &str, default: usize, max: usize) -> usize {
    args.get(key)
        .and_then(Value::as_u64)
        .map_or(default, |n| n as usize)
        .clamp(1, max)
}

pub(crate) fn f64_arg(args: &Value, key: &str, default: f64) -> f64 {
    args.get(key).and_then(Value::as_f64).unwrap_or(default)
}

pub(crate) fn bool_arg(args: &Value, key: &str, default: bool) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(default)
}

/// A list of strings; a single string counts as a one-element list.
pub(crate) fn str_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.trim().to_string()],
        _ => Vec::new(),
    }
}

/// Fields kept as given in the entry's `extra` object.
const EXTRA_FIELDS: &[&str] = &[
    "whenClause",
    "doClause",
    "dontClause",
    "usageGuide",
    "headers",
    "reasoning",
    "scope",
    "complexity",
    "topicHint",
    "supersedes",
    "guards",
];

/// The part of a submission in `content` (an object, or a plain markdown string).
fn content_part<'a>(args: &'a Value, keys: &[&str]) -> Option<&'a str> {
    match args.get("content") {
        Some(Value::Object(_)) => args.get("content").and_then(|c| first_str(c, keys)),
        _ => None,
    }
}

/// Reads a submission (`submit_knowledge`, `validate_candidate`, `check_duplicate`,
/// `update_recipe`). Unknown `kind` values are refused; the language comes from the
/// argument, else from the source files' extensions.
pub(crate) fn new_entry(args: &Value) -> Result<NewEntry, ToolError> {
    let markdown = content_part(args, &["markdown", "text"])
        .or_else(|| args.get("content").and_then(Value::as_str))
        .or_else(|| first_str(args, &["markdown", "summary"]))
        .unwrap_or("");
    let pattern = content_part(args, &["pattern", "code"])
        .or_else(|| first_str(args, &["coreCode", "pattern", "code"]))
        .unwrap_or("");
    let rationale = content_part(args, &["rationale"])
        .or_else(|| opt_str(args, "rationale"))
        .unwrap_or("");
    let kind = opt_str(args, "kind")
        .map(|k| k.parse::<Kind>())
        .transpose()
        .map_err(|e| ToolError::Invalid(e.to_string()))?;
    let sources = sources(args);
    let language = opt_str(args, "language")
        .map(str::to_ascii_lowercase)
        .or_else(|| {
            sources
                .iter()
                .map(|s| language_of(s))
                .find(|l| !l.is_empty())
                .map(String::from)
        })
        .unwrap_or_default();
    let extra: Map<String, Value> = EXTRA_FIELDS
        .iter()
        .filter_map(|k| args.get(*k).map(|v| (k.to_string(), v.clone())))
        .filter(|(_, v)| !v.is_null())
        .collect();
    Ok(NewEntry {
        title: first_str(args, &["title", "name"])
            .unwrap_or("")
            .to_string(),
        description: opt_str(args, "description").unwrap_or("").to_string(),
        kind,
        knowledge_type: opt_str(args, "knowledgeType")
            .unwrap_or("code-pattern")
            .to_string(),
        category: opt_str(args, "category").unwrap_or("general").to_string(),
        language,
        trigger: opt_str(args, "trigger").map(String::from),
        content: markdown.to_string(),
        pattern: pattern.to_string(),
        rationale: rationale.to_string(),
        tags: str_list(args.get("tags")),
        sources,
        extra,
    })
}

/// Evidence files: `sources`, `reasoning.sources` and `sourceFile`, without repeats.
fn sources(args: &Value) -> Vec<String> {
    let mut out = str_list(args.get("sources"));
    out.extend(str_list(
        args.get("reasoning").and_then(|r| r.get("sources")),
    ));
    out.extend(str_list(args.get("sourceFile")));
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.clone()));
    out
}

/// JSON Schema of a submission's fields (shared by submit, validate and update tools).
pub(crate) fn submission_properties() -> Value {
    serde_json::json!({
        "title": {"type": "string", "description": "short, specific title naming the project's own types"},
        "description": {"type": "string", "description": "one sentence: what this is"},
        "content": {
            "type": "object",
            "description": "markdown explanation, code pattern and rationale",
            "properties": {
                "markdown": {"type": "string"},
                "pattern": {"type": "string", "description": "3-30 line code skeleton"},
                "rationale": {"type": "string"}
            }
        },
        "kind": {"type": "string", "enum": ["rule", "pattern", "fact"]},
        "knowledgeType": {"type": "string", "description": "e.g. code-pattern, architecture, best-practice, code-standard"},
        "category": {"type": "string", "description": "e.g. View, Service, Network, Storage, Utility"},
        "language": {"type": "string", "description": "defaults to the language of the source files"},
        "trigger": {"type": "string", "description": "@kebab-case shortcut"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "sources": {"type": "array", "items": {"type": "string"}, "description": "project files this was found in (evidence)"},
        "coreCode": {"type": "string", "description": "code skeleton when content.pattern is absent"},
        "whenClause": {"type": "string"},
        "doClause": {"type": "string"},
        "dontClause": {"type": "string"},
        "usageGuide": {"type": "string"},
        "headers": {"type": "array", "items": {"type": "string"}},
        "reasoning": {"type": "object", "description": "{whyStandard, sources[], confidence}"},
        "scope": {"type": "string"},
        "complexity": {"type": "string"},
        "topicHint": {"type": "string"},
        "sourceFile": {"type": "string"},
        "guards": {"type": "array", "items": {"type": "object"},
                   "description": "for kind=rule: [{pattern, literal?, severity?, message?}] checked by guard_check_code once published"}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn submission_reads_nested_content_and_infers_language() {
        let e = new_entry(&json!({
            "title": " Retry ",
            "content": {"markdown": "md", "pattern": "code"},
            "reasoning": {"sources": ["Net/Client.swift"]},
            "sourceFile": "Net/Client.swift",
            "doClause": "retry"
        }))
        .unwrap_or_default();
        assert_eq!(e.content, "md");
        assert_eq!(e.pattern, "code");
        assert_eq!(e.language, "swift");
        assert_eq!(e.sources, vec!["Net/Client.swift".to_string()]);
        assert_eq!(e.extra.get("doClause"), Some(&json!("retry")));
    }

    #[test]
    fn unknown_kind_is_refused() {
        let err = new_entry(&json!({"title": "t", "kind": "rumour"})).err();
        assert!(err.is_some_and(|e| {
            e.to_string()
                .contains("accepted values are rule, pattern, fact")
        }));
    }
}
