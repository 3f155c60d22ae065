//! The argument types the knowledge tools share: [`Text`] and [`List`] (strings and lists as
//! the tools read them), the entry id under its accepted names, and [`Submission`], the one
//! shape of a candidate (flattened into the submit tools, read from the nested `candidate`,
//! `recipe` and `updates` objects) that becomes a [`NewEntry`].
//!
//! Submissions keep the argument names the pipeline's SubmitDedup middleware reads (`title`,
//! `content.pattern`), so duplicate detection inside one agent loop sees the same values.
//! Nested objects are not checked against a schema, so these types read them leniently as
//! before: a value of another type counts as absent rather than failing the call.

use std::borrow::Cow;

use alembic_tools::ToolError;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::guard::language_of;
use crate::model::{Kind, NewEntry};

/// A string argument: trimmed, and absent when blank or not a string.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Text(Option<String>);

impl Text {
    pub(crate) fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// The value, or an error naming the argument when it is absent or blank.
    pub(crate) fn required(&self, name: &str) -> Result<&str, ToolError> {
        self.get().ok_or_else(|| {
            ToolError::Invalid(format!("\"{name}\" is required and must not be blank"))
        })
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Text(Some(s.trim()).filter(|s| !s.is_empty()).map(String::from))
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(s) => Text::from(s.as_str()),
            _ => Text(None),
        })
    }
}

impl JsonSchema for Text {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Text".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string"})
    }
}

/// A list of strings; a single string counts as a one-element list, blanks and non-strings
/// are dropped.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct List(pub(crate) Vec<String>);

impl<'de> Deserialize<'de> for List {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Ok(List(str_list(Some(&value))))
    }
}

impl JsonSchema for List {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "List".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "array", "items": {"type": "string"}})
    }
}

/// Any JSON object (free-form: evidence, a nested candidate, reasoning).
pub(crate) struct AnyObject;

impl JsonSchema for AnyObject {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "AnyObject".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "object"})
    }
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

/// The entry id: the first present of the accepted names (`recipeId`, `candidateId`, `id`).
pub(crate) fn entry_id(names: [&Text; 3]) -> Result<&str, ToolError> {
    names
        .into_iter()
        .find_map(Text::get)
        .ok_or_else(|| ToolError::Invalid("\"recipeId\" (or \"candidateId\") is required".into()))
}

/// The part of a submission in `content`: its parts, or a plain markdown string.
#[derive(Debug, Default)]
pub(crate) enum Content {
    Parts(ContentParts),
    Markdown(String),
    #[default]
    Other,
}

/// `content` as an object.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub(crate) struct ContentParts {
    #[serde(default)]
    markdown: Text,
    #[serde(default)]
    #[schemars(skip)]
    text: Text,
    /// 3-30 line code skeleton
    #[serde(default)]
    pattern: Text,
    #[serde(default)]
    #[schemars(skip)]
    code: Text,
    #[serde(default)]
    rationale: Text,
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(s) => Content::Markdown(s),
            v @ Value::Object(_) => {
                Content::Parts(ContentParts::deserialize(v).map_err(serde::de::Error::custom)?)
            }
            _ => Content::Other,
        })
    }
}

impl JsonSchema for Content {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Content".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        ContentParts::json_schema(generator)
    }
}

impl Content {
    fn parts(&self) -> Option<&ContentParts> {
        match self {
            Content::Parts(p) => Some(p),
            _ => None,
        }
    }
}

/// A knowledge submission: what `submit_knowledge` takes, and the shape of the nested
/// candidates of `validate_candidate`, `check_duplicate`, `quality_score` and `update_recipe`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Submission {
    /// short, specific title naming the project's own types
    #[serde(default)]
    pub(crate) title: Text,
    #[serde(default)]
    #[schemars(skip)]
    name: Text,
    /// one sentence: what this is
    #[serde(default)]
    description: Text,
    /// markdown explanation, code pattern and rationale
    #[serde(default)]
    content: Content,
    #[serde(default)]
    #[schemars(skip)]
    markdown: Text,
    #[serde(default)]
    #[schemars(skip)]
    summary: Text,
    #[serde(default)]
    #[schemars(extend("enum" = ["rule", "pattern", "fact"]))]
    kind: Text,
    /// e.g. code-pattern, architecture, best-practice, code-standard
    #[serde(default)]
    knowledge_type: Text,
    /// e.g. View, Service, Network, Storage, Utility
    #[serde(default)]
    category: Text,
    /// defaults to the language of the source files
    #[serde(default)]
    language: Text,
    /// @kebab-case shortcut
    #[serde(default)]
    trigger: Text,
    #[serde(default)]
    tags: List,
    /// project files this was found in (evidence)
    #[serde(default)]
    sources: List,
    /// code skeleton when content.pattern is absent
    #[serde(default)]
    core_code: Text,
    #[serde(default)]
    #[schemars(skip)]
    pattern: Text,
    #[serde(default)]
    #[schemars(skip)]
    code: Text,
    #[serde(default)]
    #[schemars(skip)]
    rationale: Text,
    #[serde(default)]
    #[schemars(with = "Text")]
    source_file: List,
    #[serde(flatten)]
    extra: ExtraFields,
}

/// Fields kept as given in the entry's `extra` object.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ExtraFields {
    #[schemars(with = "Option<Text>")]
    when_clause: Option<Value>,
    #[schemars(with = "Option<Text>")]
    do_clause: Option<Value>,
    #[schemars(with = "Option<Text>")]
    dont_clause: Option<Value>,
    #[schemars(with = "Option<Text>")]
    usage_guide: Option<Value>,
    #[schemars(with = "Option<List>")]
    headers: Option<Value>,
    /// {whyStandard, sources[], confidence}
    #[schemars(with = "Option<AnyObject>")]
    reasoning: Option<Value>,
    #[schemars(with = "Option<Text>")]
    scope: Option<Value>,
    #[schemars(with = "Option<Text>")]
    complexity: Option<Value>,
    #[schemars(with = "Option<Text>")]
    topic_hint: Option<Value>,
    #[schemars(skip)]
    supersedes: Option<Value>,
    /// for kind=rule: [{pattern, literal?, severity?, message?}] checked by guard_check_code once published
    #[schemars(with = "Option<Vec<AnyObject>>")]
    guards: Option<Value>,
}

impl ExtraFields {
    fn into_map(self) -> Map<String, Value> {
        [
            ("whenClause", self.when_clause),
            ("doClause", self.do_clause),
            ("dontClause", self.dont_clause),
            ("usageGuide", self.usage_guide),
            ("headers", self.headers),
            ("reasoning", self.reasoning),
            ("scope", self.scope),
            ("complexity", self.complexity),
            ("topicHint", self.topic_hint),
            ("supersedes", self.supersedes),
            ("guards", self.guards),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
        .collect()
    }
}

impl Submission {
    /// Reads a nested candidate object (never fails: unreadable fields count as absent).
    pub(crate) fn from_value(value: Value) -> Result<Self, ToolError> {
        alembic_tools::parse_args(value)
    }

    /// Evidence files: `sources`, `reasoning.sources` and `sourceFile`, without repeats.
    fn sources(&self) -> Vec<String> {
        let mut out = self.sources.0.clone();
        let reasoning = self.extra.reasoning.as_ref();
        out.extend(str_list(reasoning.and_then(|r| r.get("sources"))));
        out.extend(self.source_file.0.iter().cloned());
        let mut seen = std::collections::HashSet::new();
        out.retain(|s| seen.insert(s.clone()));
        out
    }

    /// The entry to store. Unknown `kind` values are refused; the language comes from the
    /// argument, else from the source files' extensions.
    pub(crate) fn into_new_entry(self) -> Result<NewEntry, ToolError> {
        let parts = self.content.parts();
        let markdown = parts
            .and_then(|p| p.markdown.get().or(p.text.get()))
            .or(match &self.content {
                Content::Markdown(s) => Some(s.as_str()),
                _ => None,
            })
            .or_else(|| self.markdown.get().or(self.summary.get()))
            .unwrap_or("")
            .to_string();
        let pattern = parts
            .and_then(|p| p.pattern.get().or(p.code.get()))
            .or_else(|| {
                self.core_code
                    .get()
                    .or(self.pattern.get())
                    .or(self.code.get())
            })
            .unwrap_or("")
            .to_string();
        let rationale = parts
            .and_then(|p| p.rationale.get())
            .or(self.rationale.get())
            .unwrap_or("")
            .to_string();
        let kind = self
            .kind
            .get()
            .map(|k| k.parse::<Kind>())
            .transpose()
            .map_err(|e| ToolError::Invalid(e.to_string()))?;
        let sources = self.sources();
        let language = self
            .language
            .get()
            .map(str::to_ascii_lowercase)
            .or_else(|| {
                sources
                    .iter()
                    .map(|s| language_of(s))
                    .find(|l| !l.is_empty())
                    .map(String::from)
            });
        Ok(NewEntry {
            title: self.title.get().or(self.name.get()).unwrap_or("").into(),
            description: self.description.get().unwrap_or("").into(),
            kind,
            knowledge_type: self.knowledge_type.get().unwrap_or("code-pattern").into(),
            category: self.category.get().unwrap_or("general").into(),
            language: language.unwrap_or_default(),
            trigger: self.trigger.get().map(String::from),
            content: markdown,
            pattern,
            rationale,
            tags: self.tags.0,
            sources,
            extra: self.extra.into_map(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn new_entry(v: Value) -> Result<NewEntry, ToolError> {
        Submission::from_value(v)?.into_new_entry()
    }

    #[test]
    fn submission_reads_nested_content_and_infers_language() {
        let e = new_entry(json!({
            "title": " Retry ",
            "content": {"markdown": "md", "pattern": "code"},
            "reasoning": {"sources": ["Net/Client.swift"]},
            "sourceFile": "Net/Client.swift",
            "doClause": "retry"
        }))
        .unwrap_or_default();
        assert_eq!(e.title, "Retry");
        assert_eq!(e.content, "md");
        assert_eq!(e.pattern, "code");
        assert_eq!(e.language, "swift");
        assert_eq!(e.sources, vec!["Net/Client.swift".to_string()]);
        assert_eq!(e.extra.get("doClause"), Some(&json!("retry")));
    }

    #[test]
    fn other_spellings_and_shapes_are_read_as_before() {
        let e = new_entry(json!({
            "name": "Retry", "title": "  ", "content": "plain markdown",
            "code": "send()", "tags": "network", "kind": 7, "supersedes": "k-1",
            "whenClause": null
        }))
        .unwrap_or_default();
        assert_eq!(e.title, "Retry");
        assert_eq!(e.content, "plain markdown");
        assert_eq!(e.pattern, "send()");
        assert_eq!(e.tags, vec!["network".to_string()]);
        assert_eq!(e.kind, None);
        assert_eq!(
            e.extra,
            json!({"supersedes": "k-1"})
                .as_object()
                .cloned()
                .unwrap_or_default()
        );
    }

    #[test]
    fn unknown_kind_is_refused() {
        let err = new_entry(json!({"title": "t", "kind": "rumour"})).err();
        assert!(err.is_some_and(|e| {
            e.to_string()
                .contains("accepted values are rule, pattern, fact")
        }));
    }

    #[test]
    fn blank_text_is_refused_by_name() {
        let err = Text::from("  ").required("reason").err();
        assert_eq!(
            err.map(|e| e.to_string()),
            Some("invalid arguments: \"reason\" is required and must not be blank".into())
        );
    }
}
