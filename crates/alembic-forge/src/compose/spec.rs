//! `CompositionSpec`: a composed tool as data (JSON or TOML), and its validation.

use std::collections::{BTreeMap, BTreeSet};

use alembic_tools::is_snake_case;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::template::{self, Source};
use crate::error::ForgeError;

/// Most steps one composition may have.
pub const MAX_STEPS: usize = 16;
/// Elements a `for_each` step visits unless it sets `max_items`.
pub const DEFAULT_FOR_EACH_ITEMS: usize = 10;
/// Most elements a `for_each` step may visit.
pub const MAX_FOR_EACH_ITEMS: usize = 25;

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
    /// Run the step once per element of this array: one whole `${steps.N.path}` (or
    /// `${params.NAME}`) template. `${item.path}` in `args` reads the element; the step's result
    /// is the array of the calls' results (a call that fails is an `{"item", "error"}` entry).
    #[serde(default, alias = "forEach", skip_serializing_if = "Option::is_none")]
    pub for_each: Option<String>,
    /// Most elements `for_each` visits (default 10, at most 25).
    #[serde(default, alias = "maxItems", skip_serializing_if = "Option::is_none")]
    pub max_items: Option<usize>,
}

impl CompositionStep {
    /// A step calling `tool` with `args`.
    pub fn new(tool: impl Into<String>, args: Value) -> Self {
        CompositionStep {
            tool: tool.into(),
            args,
            extract_key: None,
            for_each: None,
            max_items: None,
        }
    }

    /// How many elements `for_each` visits.
    pub fn item_limit(&self) -> usize {
        self.max_items
            .unwrap_or(DEFAULT_FOR_EACH_ITEMS)
            .min(MAX_FOR_EACH_ITEMS)
    }
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
    /// Parameter values fixed when the tool was forged (a template's target); the arguments of
    /// a call win over them.
    #[serde(default, alias = "boundParams", skip_serializing_if = "Map::is_empty")]
    pub bound_params: Map<String, Value>,
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
        if let Some(k) = self.bound_params.keys().find(|k| !declared.contains(*k)) {
            return Err(self.invalid(format!(
                "bound parameter \"{k}\" is not declared in \"parameters\""
            )));
        }
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
        let mut refs = template::references(&step.args).map_err(at)?;
        if let Some(each) = &step.for_each {
            refs.push(self.for_each_reference(each).map_err(at)?);
        } else if let Some(r) = refs.iter().find(|r| r.source == Source::Item) {
            return Err(at(format!(
                "{} reads the for_each element, but the step has no \"for_each\"",
                r.text
            )));
        }
        for r in refs {
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
                Source::Item if step.for_each.is_none() => {
                    return Err(at(format!("{} needs \"for_each\"", r.text)));
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

    /// The one reference `for_each` names, or why it is not acceptable.
    fn for_each_reference(&self, each: &str) -> Result<template::Reference, String> {
        if self.merge_strategy == MergeStrategy::Parallel {
            return Err("\"for_each\" runs only in sequential compositions".into());
        }
        match template::parse(each)?.as_slice() {
            [template::Piece::Ref(r)] if r.source != Source::Item => Ok(r.clone()),
            _ => Err(format!(
                "\"for_each\" must be one ${{steps.N.path}} or ${{params.NAME}} template, got \"{each}\""
            )),
        }
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
