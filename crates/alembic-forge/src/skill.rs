//! Promotion: a forged tool becomes a skill with documentation, a parameter schema and
//! examples. The skill is written in the one skill format of `alembic-skills`
//! (`.alembic/skills/<kebab-name>/SKILL.md`, source `forged`, the tool's schema as its
//! `arguments`), so `load_skill` and the MCP server read it like any other skill.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use alembic_skills::{Skill, SkillLocation, SkillSource, WriteMode, skill_name_for_tool};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::ForgeError;
use crate::store::SavedTool;

/// One worked example: arguments and, when known, the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillExample {
    pub description: String,
    pub args: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

/// Examples the tool itself carries: test cases, spec examples, alias presets.
pub fn built_in_examples(tool: &SavedTool) -> Vec<SkillExample> {
    match tool {
        SavedTool::Generated(g) => g
            .test_cases
            .iter()
            .map(|c| SkillExample {
                description: c.description.clone(),
                args: c.input.clone(),
                result: Some(c.expected_output.clone()),
            })
            .collect(),
        SavedTool::Composed(s) => s
            .examples
            .iter()
            .map(|a| SkillExample {
                description: "example call".into(),
                args: a.clone(),
                result: None,
            })
            .collect(),
        SavedTool::Alias(_) => vec![SkillExample {
            description: "call with the pre-filled arguments".into(),
            args: json!({}),
            result: None,
        }],
    }
}

fn description(tool: &SavedTool) -> &str {
    match tool {
        SavedTool::Composed(s) => &s.description,
        SavedTool::Generated(g) => &g.description,
        SavedTool::Alias(a) => a.description.as_deref().unwrap_or(""),
    }
}

/// The skill of a forged tool. `parameters` is the registered tool's schema.
pub fn skill_for(tool: &SavedTool, parameters: &Value, examples: &[SkillExample]) -> Skill {
    let name = tool.name();
    let summary = description(tool).lines().next().unwrap_or("").trim();
    let summary = if summary.is_empty() {
        format!("The forged tool `{name}`.")
    } else {
        summary.to_string()
    };
    let mut skill = Skill::new(
        &skill_name_for_tool(name),
        &summary,
        &skill_body(tool, parameters, examples),
    );
    skill.source = SkillSource::Forged;
    skill.tool = Some(name.to_string());
    skill.arguments = Some(parameters.clone());
    skill
}

/// The SKILL.md text of a forged tool (see [`skill_for`]).
pub fn skill_markdown(tool: &SavedTool, parameters: &Value, examples: &[SkillExample]) -> String {
    skill_for(tool, parameters, examples).render()
}

fn skill_body(tool: &SavedTool, parameters: &Value, examples: &[SkillExample]) -> String {
    let name = tool.name();
    let mut md = String::new();
    let _ = writeln!(md, "# {name}\n\n{}\n", description(tool));
    let _ = writeln!(
        md,
        "Call it as the tool `{name}` (forged, {}); its parameter schema is the `arguments` of this skill.\n",
        tool.mode().as_str()
    );
    md.push_str(&parameters_table(parameters));
    md.push_str(&how_it_works(tool));
    if !examples.is_empty() {
        md.push_str("## Examples\n\n");
        for ex in examples {
            let _ = writeln!(
                md,
                "### {}\n\nArguments:\n\n```json\n{}\n```\n",
                ex.description,
                pretty(&ex.args)
            );
            if let Some(r) = &ex.result {
                let _ = writeln!(md, "Result:\n\n```json\n{}\n```\n", pretty(r));
            }
        }
    }
    md
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn parameters_table(schema: &Value) -> String {
    let props = schema.get("properties").and_then(Value::as_object);
    let Some(props) = props.filter(|p| !p.is_empty()) else {
        return "## Parameters\n\nNone.\n\n".into();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut md = String::from(
        "## Parameters\n\n| name | type | required | description |\n|---|---|---|---|\n",
    );
    for (name, p) in props {
        let ty = p
            .get("type")
            .map(|t| {
                t.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| t.to_string())
            })
            .unwrap_or_else(|| "any".into());
        let desc = p
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .replace('|', "\\|");
        let default = p
            .get("default")
            .map(|d| format!(" (default {d})"))
            .unwrap_or_default();
        let req = if required.contains(&name.as_str()) {
            "yes"
        } else {
            "no"
        };
        let _ = writeln!(md, "| {name} | {ty} | {req} | {desc}{default} |");
    }
    md.push('\n');
    md
}

fn how_it_works(tool: &SavedTool) -> String {
    let mut md = String::from("## How it works\n\n");
    match tool {
        SavedTool::Composed(s) => {
            let _ = writeln!(
                md,
                "A {} composition of {} step(s); each step is a normal, audited tool call:\n",
                serde_json::to_value(s.merge_strategy)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
                s.steps.len()
            );
            for (i, step) in s.steps.iter().enumerate() {
                let extract = step
                    .extract_key
                    .as_deref()
                    .map(|k| format!(", keeps `{k}`"))
                    .unwrap_or_default();
                let _ = writeln!(
                    md,
                    "{}. `{}` with `{}`{extract}",
                    i + 1,
                    step.tool,
                    step.args
                );
            }
        }
        SavedTool::Generated(g) => {
            let _ = writeln!(
                md,
                "Generated JavaScript run in the QuickJS sandbox (fresh context per call, CPU, memory and time limits); it reaches the project only through audited tool calls.\n\n```js\n{}\n```",
                g.code.trim_end()
            );
        }
        SavedTool::Alias(a) => {
            let _ = writeln!(
                md,
                "Calls `{}` with these arguments pre-filled (arguments you pass win): `{}`",
                a.tool,
                Value::Object(a.preset_args.clone())
            );
        }
    }
    md.push('\n');
    md
}

/// Writes the skill of `tool` into the project at `root` (replacing an earlier promotion of
/// it) and returns its `SKILL.md` path.
pub fn write_skill(
    root: &Path,
    tool: &SavedTool,
    parameters: &Value,
    examples: &[SkillExample],
) -> Result<PathBuf, ForgeError> {
    let skill = skill_for(tool, parameters, examples);
    let failed = |reason: String| ForgeError::Skill {
        name: tool.name().to_string(),
        reason,
    };
    // Promoting again replaces the earlier promotion, never a skill someone wrote.
    if let Ok(existing) = alembic_skills::read_skill(root, &skill.name)
        && existing.location == SkillLocation::Project
        && existing.skill.tool.as_deref() != Some(tool.name())
    {
        return Err(failed(format!(
            "the project already has a skill \"{}\" that is not a promotion of this tool; remove or rename it first",
            skill.name
        )));
    }
    alembic_skills::write_skill(root, &skill, WriteMode::Overwrite)
        .map_err(|e| failed(e.to_string()))
}
