//! The one skill format: a `SKILL.md` file with a front matter block and a markdown body.
//!
//! ```text
//! ---
//! name: retry-with-backoff
//! description: "Wrap network calls in the project's retry helper."
//! source: written
//! created_by: "cli"
//! arguments: {"type":"object","properties":{"call":{"type":"string","description":"the call to wrap"}},"required":["call"]}
//! ---
//! # Retry with backoff
//! ...
//! ```
//!
//! The front matter is a subset of YAML that every YAML reader accepts: one `key: value` per
//! line, where a value is plain text (`name: retry-with-backoff`), a single-quoted string, or
//! JSON (a JSON string, object or array is valid YAML). Nested or multi-line YAML is refused
//! with the line it was found on. The writer writes every value but `name` and `source` as
//! JSON on one line, so what it writes it reads back unchanged.
//!
//! Keys: `name` and `description` (required); `source` (`written` or `forged`, default
//! `written`); `tool` (the forged tool a promoted skill documents); `created_by`;
//! `arguments` (a JSON Schema object: the parameters of the skill's tool or prompt). Other keys
//! (e.g. another agent's `allowed-tools`) are kept as they are and written back.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::SkillError;

/// How a skill came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SkillSource {
    /// Written by a person or an agent (`create_skill`, by hand, built-in).
    Written,
    /// Promoted from a forged tool (`alembic forge promote`).
    Forged,
}

impl SkillSource {
    pub fn as_str(self) -> &'static str {
        match self {
            SkillSource::Written => "written",
            SkillSource::Forged => "forged",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "written" => Some(SkillSource::Written),
            "forged" => Some(SkillSource::Forged),
            _ => None,
        }
    }
}

/// One skill: its front matter and its markdown body.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skill {
    /// Kebab-case, 3..=64 characters; also the name of its directory.
    pub name: String,
    /// One line: what the skill is for (shown in listings and as the MCP prompt description).
    pub description: String,
    pub source: SkillSource,
    /// The forged tool a promoted skill documents (snake_case), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Who wrote it (the caller id of `create_skill`, e.g. `cli` or an agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// JSON Schema (`{"type": "object", "properties": ..}`) of the skill's arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// Front matter keys this format does not define, kept as read.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Value>,
    /// The markdown after the front matter.
    pub body: String,
}

/// One argument of a skill used as a prompt (MCP `prompts/list` shape).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillArgument {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
}

impl Skill {
    /// A written skill with no arguments.
    pub fn new(name: &str, description: &str, body: &str) -> Self {
        Skill {
            name: name.to_string(),
            description: description.to_string(),
            source: SkillSource::Written,
            tool: None,
            created_by: None,
            arguments: None,
            extra: BTreeMap::new(),
            body: body.to_string(),
        }
    }

    /// Parses a `SKILL.md` text; `origin` (a path) names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Skill, SkillError> {
        let err = |reason: String| SkillError::Parse {
            origin: origin.to_string(),
            reason,
        };
        let (fields, body) = split_front_matter(text).map_err(err)?;
        let mut fields = fields;
        let mut text_field = |key: &str, required: bool| -> Result<Option<String>, SkillError> {
            match fields.remove(key) {
                Some(Value::String(s)) => Ok(Some(s)),
                Some(other) => Err(err(format!("`{key}` must be text, got {other}"))),
                None if required => Err(err(format!("the front matter has no `{key}`"))),
                None => Ok(None),
            }
        };
        let name = text_field("name", true)?.unwrap_or_default();
        let description = text_field("description", true)?.unwrap_or_default();
        let source = match text_field("source", false)? {
            None => SkillSource::Written,
            Some(s) => SkillSource::parse(&s).ok_or_else(|| {
                err(format!(
                    "`source: {s}` is not a skill source; accepted: written, forged"
                ))
            })?,
        };
        let tool = text_field("tool", false)?;
        let created_by = text_field("created_by", false)?;
        let arguments = fields.remove("arguments");
        let skill = Skill {
            name,
            description,
            source,
            tool,
            created_by,
            arguments,
            extra: fields,
            body,
        };
        skill.check().map_err(|e| err(e.to_string()))?;
        Ok(skill)
    }

    /// Checks the name, the description and the arguments schema.
    pub fn check(&self) -> Result<(), SkillError> {
        validate_name(&self.name)?;
        let invalid = |reason: &str| SkillError::Invalid {
            name: self.name.clone(),
            reason: reason.to_string(),
        };
        if self.description.trim().is_empty() {
            return Err(invalid(
                "the description is empty; say in one line what the skill is for",
            ));
        }
        if self.description.contains('\n') {
            return Err(invalid("the description must be one line"));
        }
        if let Some(args) = &self.arguments {
            check_arguments(args).map_err(|r| invalid(&r))?;
        }
        Ok(())
    }

    /// The `SKILL.md` text: front matter, a blank line, the body.
    pub fn render(&self) -> String {
        let mut md = String::from("---\n");
        let _ = writeln!(md, "name: {}", self.name);
        let _ = writeln!(md, "description: {}", json_line(&self.description));
        let _ = writeln!(md, "source: {}", self.source.as_str());
        if let Some(tool) = &self.tool {
            let _ = writeln!(md, "tool: {}", json_line(tool));
        }
        if let Some(by) = &self.created_by {
            let _ = writeln!(md, "created_by: {}", json_line(by));
        }
        if let Some(args) = &self.arguments {
            let _ = writeln!(md, "arguments: {args}");
        }
        for (key, value) in &self.extra {
            let _ = writeln!(md, "{key}: {value}");
        }
        md.push_str("---\n\n");
        md.push_str(self.body.trim_start_matches('\n'));
        if !md.ends_with('\n') {
            md.push('\n');
        }
        md
    }

    /// The arguments as prompt arguments: one per schema property, in schema order.
    pub fn prompt_arguments(&self) -> Vec<SkillArgument> {
        let Some(schema) = &self.arguments else {
            return Vec::new();
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let empty = Map::new();
        let props = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        props
            .iter()
            .map(|(name, p)| SkillArgument {
                name: name.clone(),
                description: p
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                required: required.contains(&name.as_str()),
            })
            .collect()
    }
}

fn json_line(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

/// Checks that `name` can name a skill (and so a directory under `.alembic/skills/`).
pub fn validate_name(name: &str) -> Result<(), SkillError> {
    let bad = |reason: &'static str| {
        Err(SkillError::BadName {
            name: name.to_string(),
            reason,
        })
    };
    if name.contains(['/', '\\']) || name.contains("..") || name == "." {
        return bad("is a path, not a name");
    }
    let len = name.chars().count();
    if !(3..=64).contains(&len) {
        return bad("has the wrong length");
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return bad("does not start with a lower-case letter");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return bad("has characters other than lower-case letters, digits and hyphens");
    }
    if name.ends_with('-') || name.contains("--") {
        return bad("has a hyphen at the end or two in a row");
    }
    Ok(())
}

/// The skill name of a forged tool: its snake_case name in kebab-case.
pub fn skill_name_for_tool(tool: &str) -> String {
    tool.replace('_', "-")
}

fn check_arguments(schema: &Value) -> Result<(), String> {
    let Some(obj) = schema.as_object() else {
        return Err(format!(
            "`arguments` must be a JSON Schema object like {{\"type\":\"object\",\"properties\":{{..}}}}, got {schema}"
        ));
    };
    if obj.get("type").is_some_and(|t| t != "object") {
        return Err(format!(
            "`arguments` must have \"type\": \"object\", got {}",
            obj["type"]
        ));
    }
    if obj.get("properties").is_some_and(|p| !p.is_object()) {
        return Err("`arguments.properties` must be an object".into());
    }
    Ok(())
}

/// Splits `text` into its front matter fields and its body.
fn split_front_matter(text: &str) -> Result<(BTreeMap<String, Value>, String), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err("SKILL.md must start with a front matter block: a `---` line, `key: value` lines, a `---` line".into());
    }
    let mut fields = BTreeMap::new();
    let mut consumed = first.len();
    for (i, line) in lines.enumerate() {
        consumed += line.len();
        let line_no = i + 2;
        let content = line.trim_end();
        if content == "---" {
            let body = text[consumed..]
                .trim_start_matches(['\r', '\n'])
                .to_string();
            return Ok((fields, body));
        }
        if content.trim().is_empty() || content.trim_start().starts_with('#') {
            continue;
        }
        let (key, value) = front_matter_line(content)
            .map_err(|reason| format!("front matter line {line_no}: {reason}"))?;
        if fields.insert(key.clone(), value).is_some() {
            return Err(format!(
                "front matter line {line_no}: `{key}` is given twice"
            ));
        }
    }
    Err("the front matter block is not closed by a `---` line".into())
}

fn front_matter_line(line: &str) -> Result<(String, Value), String> {
    if line.starts_with([' ', '\t', '-']) {
        return Err(format!(
            "`{line}`: nested or multi-line YAML is not supported; write the value as JSON on one line"
        ));
    }
    let Some((key, raw)) = line.split_once(':') else {
        return Err(format!("`{line}` is not `key: value`"));
    };
    let key = key.trim();
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!("`{key}` is not a key (letters, digits, `_`, `-`)"));
    }
    let raw = raw.trim();
    let value = if raw.starts_with(['"', '{', '[']) {
        serde_json::from_str(raw).map_err(|e| format!("`{key}`: {raw} is not valid JSON: {e}"))?
    } else if let Some(inner) = raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        Value::String(inner.replace("''", "'"))
    } else if raw.is_empty() || raw == "|" || raw == ">" {
        return Err(format!(
            "`{key}` has no value on its line; nested or multi-line YAML is not supported, write the value as JSON on one line"
        ));
    } else {
        Value::String(raw.to_string())
    };
    Ok((key.to_string(), value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_rendered_skill_reads_back_unchanged() {
        let mut skill = Skill::new(
            "retry-with-backoff",
            "Wrap \"network\" calls: retry: with backoff",
            "# Retry\n\nUse `retry()`.\n",
        );
        skill.created_by = Some("cli".into());
        skill.arguments = Some(
            json!({"type": "object", "properties": {"call": {"type": "string", "description": "the call"}}, "required": ["call"]}),
        );
        skill.extra.insert("allowed-tools".into(), json!("Read"));
        let text = skill.render();
        assert_eq!(Skill::parse(&text, "t").unwrap(), skill);
        assert_eq!(
            skill.prompt_arguments(),
            vec![SkillArgument {
                name: "call".into(),
                description: Some("the call".into()),
                required: true
            }]
        );
    }

    #[test]
    fn hand_written_yaml_front_matter_is_read() {
        let text = "---\r\nname: my-skill\r\ndescription: 'It''s short'\r\n# a comment\r\n---\r\n\r\nBody\r\n";
        let skill = Skill::parse(text, "t").unwrap();
        assert_eq!(
            (
                skill.name.as_str(),
                skill.description.as_str(),
                skill.body.as_str(),
                skill.source
            ),
            ("my-skill", "It's short", "Body\r\n", SkillSource::Written)
        );
    }

    #[test]
    fn malformed_front_matter_is_refused_with_the_line() {
        let check = |text: &str, expected: &str| {
            let err = Skill::parse(text, "x/SKILL.md").unwrap_err().to_string();
            assert_eq!(err, format!("x/SKILL.md: {expected}"), "{text:?}");
        };
        check(
            "# no front matter",
            "SKILL.md must start with a front matter block: a `---` line, `key: value` lines, a `---` line",
        );
        check(
            "---\nname: abc\n",
            "the front matter block is not closed by a `---` line",
        );
        check(
            "---\nname: abc\n---\n",
            "the front matter has no `description`",
        );
        check(
            "---\nname: abc\ndescription: d\ntags:\n  - a\n---\n",
            "front matter line 4: `tags` has no value on its line; nested or multi-line YAML is not supported, write the value as JSON on one line",
        );
        check(
            "---\nname: abc\ndescription: d\nsource: stolen\n---\n",
            "`source: stolen` is not a skill source; accepted: written, forged",
        );
        check(
            "---\nname: abc\ndescription: d\narguments: {\"type\": \"string\"}\n---\n",
            "skill \"abc\": `arguments` must have \"type\": \"object\", got \"string\"",
        );
        check(
            "---\nname: ../etc\ndescription: d\n---\n",
            "skill name \"../etc\" is a path, not a name; a skill name is one kebab-case word such as \"retry-with-backoff\": lower-case letters, digits and single hyphens, starting with a letter, 3 to 64 characters",
        );
    }

    #[test]
    fn names_are_kebab_case() {
        for ok in ["abc", "retry-with-backoff", "a1-b2", &"a".repeat(64)] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
        let reason = |n: &str| match validate_name(n) {
            Err(SkillError::BadName { reason, .. }) => reason,
            other => panic!("{n}: {other:?}"),
        };
        assert_eq!(reason("a/b"), "is a path, not a name");
        assert_eq!(reason("..."), "is a path, not a name");
        assert_eq!(reason("a\\bc"), "is a path, not a name");
        assert_eq!(reason("ab"), "has the wrong length");
        assert_eq!(reason(&"a".repeat(65)), "has the wrong length");
        assert_eq!(reason("1abc"), "does not start with a lower-case letter");
        assert_eq!(reason("Abc"), "does not start with a lower-case letter");
        assert_eq!(
            reason("ab_c"),
            "has characters other than lower-case letters, digits and hyphens"
        );
        assert_eq!(reason("abc-"), "has a hyphen at the end or two in a row");
        assert_eq!(reason("ab--c"), "has a hyphen at the end or two in a row");
        assert_eq!(
            skill_name_for_tool("analyze_networkkit"),
            "analyze-networkkit"
        );
    }
}
