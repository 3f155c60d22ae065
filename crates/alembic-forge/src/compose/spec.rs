//! `CompositionSpec`: a composed tool as data (JSON or TOML), and its validation.

use std::collections::{BTreeMap, BTreeSet};

use alembic_tools::is_snake_case;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::template::{self, Source};
use crate::error::ForgeError;

/// Most steps one composition may have.
pub const MAX_STEPS: usize = 16;

/// How steps run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MergeStrategy {
    /// In order; a step may read the results of earlier steps.
    #[default]
    Sequential,
    /// All at once; steps read only the composed tool's own parameters.
    Parallel,
}

/// One step: a tool and its arguments (static JSON with templates).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompositionStep {
    pub tool: String,
    #[serde(default = "empty_object")]
    pub args: Value,
    /// Keep only this key of the step's result in the merged output (and name the entry so).
    #[serde(default, alias = "extractKey", skip_serializing_if = "Option::is_none")]
    pub extract_key: Option<String>,
}

/// A composed tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompositionSpec {
    pub name: String,
    pub description: String,
    #[serde(default, alias = "mergeStrategy")]
    pub merge_strategy: MergeStrategy,
    /// JSON Schema of the composed tool's own arguments.
    #[serde(default = "empty_schema")]
    pub parameters: Value,
    pub steps: Vec<CompositionStep>,
    /// Example argument objects, shown in promoted skills.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Value>,
}

fn empty_object() -> Value {
    json!({})
}

fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

impl CompositionSpec {
    pub fn from_json(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    pub fn from_toml(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    fn invalid(&self, reason: impl Into<String>) -> ForgeError {
        ForgeError::InvalidSpec {
            name: self.name.clone(),
            reason: reason.into(),
        }
    }

    /// Checks the spec against the tools that exist (`tool_exists`) and the other known
    /// compositions (for cycles). Errors name the step and say what is accepted.
    pub fn validate(
        &self,
        tool_exists: &dyn Fn(&str) -> bool,
        compositions: &BTreeMap<String, CompositionSpec>,
    ) -> Result<(), ForgeError> {
        if !is_snake_case(&self.name) {
            return Err(self.invalid(
                "the name must be snake_case (lower-case letters, digits, single underscores)",
            ));
        }
        if self.description.trim().is_empty() {
            return Err(self.invalid("the description is empty"));
        }
        let declared = self.declared_parameters()?;
        if self.steps.is_empty() || self.steps.len() > MAX_STEPS {
            return Err(self.invalid(format!(
                "expected 1 to {MAX_STEPS} steps, got {}",
                self.steps.len()
            )));
        }
        for (i, step) in self.steps.iter().enumerate() {
            self.validate_step(i, step, &declared, tool_exists, compositions)?;
        }
        self.check_cycles(compositions)
    }

    fn declared_parameters(&self) -> Result<BTreeSet<String>, ForgeError> {
        let obj = self
            .parameters
            .as_object()
            .filter(|o| o.get("type") == Some(&json!("object")));
        let Some(obj) = obj else {
            return Err(
                self.invalid("\"parameters\" must be a JSON Schema with \"type\": \"object\"")
            );
        };
        Ok(obj
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default())
    }

    fn validate_step(
        &self,
        i: usize,
        step: &CompositionStep,
        declared: &BTreeSet<String>,
        tool_exists: &dyn Fn(&str) -> bool,
        compositions: &BTreeMap<String, CompositionSpec>,
    ) -> Result<(), ForgeError> {
        let at = |why: String| self.invalid(format!("step {i} ({}): {why}", step.tool));
        if step.tool == self.name {
            return Err(at("a composition cannot call itself".into()));
        }
        if !tool_exists(&step.tool) && !compositions.contains_key(&step.tool) {
            return Err(at(
                "unknown tool; steps may call registered tools only".into()
            ));
        }
        if !step.args.is_object() {
            return Err(at("\"args\" must be a JSON object".into()));
        }
        if step
            .extract_key
            .as_deref()
            .is_some_and(|k| k.trim().is_empty())
        {
            return Err(at("\"extract_key\" is empty".into()));
        }
        for r in template::references(&step.args).map_err(at)? {
            match r.source {
                Source::Params if !declared.contains(&r.path[0]) => {
                    return Err(at(format!(
                        "{} reads parameter \"{}\", which \"parameters\" does not declare",
                        r.text, r.path[0]
                    )));
                }
                Source::Step(_) if self.merge_strategy == MergeStrategy::Parallel => {
                    return Err(at(format!(
                        "{} reads another step, but parallel steps run at once and can read only ${{params.*}}",
                        r.text
                    )));
                }
                Source::Step(n) if n >= i => {
                    return Err(at(format!(
                        "{} reads step {n}, which has not run yet; a step can read only earlier steps",
                        r.text
                    )));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Refuses a composition that reaches itself through other compositions.
    fn check_cycles(
        &self,
        compositions: &BTreeMap<String, CompositionSpec>,
    ) -> Result<(), ForgeError> {
        let mut stack: Vec<(String, Vec<String>)> = self
            .steps
            .iter()
            .map(|s| (s.tool.clone(), vec![self.name.clone()]))
            .collect();
        let mut seen = BTreeSet::new();
        while let Some((tool, mut path)) = stack.pop() {
            path.push(tool.clone());
            if tool == self.name {
                return Err(self.invalid(format!("the steps form a cycle: {}", path.join(" -> "))));
            }
            if !seen.insert(tool.clone()) {
                continue;
            }
            if let Some(inner) = compositions.get(&tool) {
                stack.extend(inner.steps.iter().map(|s| (s.tool.clone(), path.clone())));
            }
        }
        Ok(())
    }

    /// The names of the tools the steps call.
    pub fn step_tools(&self) -> BTreeSet<String> {
        self.steps.iter().map(|s| s.tool.clone()).collect()
    }
}
