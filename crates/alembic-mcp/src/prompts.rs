//! MCP prompts: every skill is a prompt. Its arguments are the properties of the skill's
//! parameter schema (required as the schema says), and `prompts/get` returns one user
//! message with the SKILL.md and the arguments given. Completion offers a property's `enum`
//! values (and its `default`) that start with what was typed.

use std::collections::BTreeMap;

use rmcp::ErrorData;
use rmcp::model::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
use serde_json::{Map, Value};

use crate::skills::{Skill, SkillSource};

/// The prompt of a skill.
pub fn prompt_for(skill: &Skill) -> Prompt {
    let required = required_names(&skill.parameters);
    // Sorted by name, whatever order the schema's map keeps.
    let mut arguments: Vec<PromptArgument> = properties(&skill.parameters)
        .map(|props| {
            props
                .iter()
                .map(|(name, schema)| {
                    let mut arg = PromptArgument::new(name).with_required(required.contains(name));
                    if let Some(d) = schema.get("description").and_then(Value::as_str) {
                        arg = arg.with_description(d);
                    }
                    arg
                })
                .collect()
        })
        .unwrap_or_default();
    arguments.sort_by(|a, b| a.name.cmp(&b.name));
    Prompt::new(&skill.name, Some(&skill.description), Some(arguments))
}

/// Every skill's prompt.
pub fn list(skills: &dyn SkillSource) -> Vec<Prompt> {
    skills.list().iter().map(prompt_for).collect()
}

/// `prompts/get`: the skill's instructions with the arguments; a missing required argument
/// or an unknown prompt is `invalid params` naming it.
pub fn get(
    skills: &dyn SkillSource,
    name: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<GetPromptResult, ErrorData> {
    let found = skills
        .read(name)
        .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
    let skill = found.ok_or_else(|| {
        let known: Vec<String> = skills.list().into_iter().map(|s| s.name).collect();
        ErrorData::invalid_params(
            format!(
                "unknown prompt \"{name}\": expected one of the project's skills ({})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
            None,
        )
    })?;
    let given = arguments.unwrap_or_default();
    let missing: Vec<String> = required_names(&skill.parameters)
        .into_iter()
        .filter(|r| !given.contains_key(r))
        .collect();
    if !missing.is_empty() {
        return Err(ErrorData::invalid_params(
            format!(
                "prompt \"{name}\" needs the argument(s) {}",
                missing.join(", ")
            ),
            None,
        ));
    }
    let mut text = format!(
        "Use the project's skill `{name}`: {}\n\n{}",
        skill.description, skill.markdown
    );
    if !given.is_empty() {
        let args: BTreeMap<&String, &Value> = given.iter().collect();
        let rendered = serde_json::to_string(&args).unwrap_or_default();
        text.push_str(&format!("\nArguments: {rendered}\n"));
    }
    Ok(
        GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
            .with_description(skill.description),
    )
}

/// Values for argument `argument` of prompt `name` that start with `prefix`.
pub fn complete_argument(
    skills: &dyn SkillSource,
    name: &str,
    argument: &str,
    prefix: &str,
) -> Vec<String> {
    let Ok(Some(skill)) = skills.read(name) else {
        return Vec::new();
    };
    let Some(schema) = properties(&skill.parameters).and_then(|p| p.get(argument)) else {
        return Vec::new();
    };
    let mut values: Vec<String> = schema
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .chain(schema.get("default"))
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .filter(|v| v.starts_with(prefix))
        .collect();
    values.dedup();
    values
}

fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

fn required_names(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::SkillReadError;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    struct OneSkill(Skill);

    impl SkillSource for OneSkill {
        fn list(&self) -> Vec<Skill> {
            vec![self.0.clone()]
        }
        fn read(&self, name: &str) -> Result<Option<Skill>, SkillReadError> {
            Ok((name == self.0.name).then(|| self.0.clone()))
        }
    }

    fn source() -> OneSkill {
        OneSkill(Skill {
            name: "count-lines".into(),
            description: "Counts lines".into(),
            markdown: "# count-lines\n".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "file to count"},
                    "mode": {"type": "string", "enum": ["code", "comments", "all"], "default": "all"}
                },
                "required": ["path"]
            }),
        })
    }

    #[test]
    fn arguments_come_from_the_schema() {
        let prompt = prompt_for(&source().0);
        let args = serde_json::to_value(prompt.arguments.unwrap()).unwrap();
        assert_eq!(
            args,
            json!([
                {"name": "mode", "required": false},
                {"name": "path", "description": "file to count", "required": true}
            ])
        );
    }

    #[test]
    fn get_needs_required_arguments_and_renders_them() {
        let s = source();
        let err = get(&s, "count-lines", None).unwrap_err();
        assert_eq!(
            err.message,
            "prompt \"count-lines\" needs the argument(s) path"
        );
        let err = get(&s, "nope", None).unwrap_err();
        assert_eq!(
            err.message,
            "unknown prompt \"nope\": expected one of the project's skills (count-lines)"
        );
        let args = json!({"path": "src/lib.rs"}).as_object().cloned();
        let got = serde_json::to_value(get(&s, "count-lines", args).unwrap()).unwrap();
        let text = got["messages"][0]["content"]["text"].as_str().unwrap();
        assert!(text.contains("# count-lines"), "{text}");
        assert!(
            text.contains("Arguments: {\"path\":\"src/lib.rs\"}"),
            "{text}"
        );
    }

    #[test]
    fn completion_offers_enum_values_by_prefix() {
        let s = source();
        assert_eq!(
            complete_argument(&s, "count-lines", "mode", "co"),
            ["code", "comments"]
        );
        assert_eq!(
            complete_argument(&s, "count-lines", "mode", ""),
            ["code", "comments", "all"]
        );
        assert!(complete_argument(&s, "count-lines", "path", "").is_empty());
        assert!(complete_argument(&s, "other", "mode", "").is_empty());
    }
}
