//! Meta tools (module composite): they go through the same pipeline as every other tool.
//! Their state is the pipeline itself, reached through the call's context (registry lookups
//! and the caller's allowlist), so they are registered without a service handle.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::context::ToolContext;
use crate::definition::{EffectClass, ToolDefinition, ToolError, ToolModule, ToolOutput};
use crate::registry::{RegistryError, ToolRegistry};

/// Registers `get_tool_details` and `plan_task`.
pub fn register_tools(registry: &ToolRegistry) -> Result<(), RegistryError> {
    registry.register(get_tool_details())?;
    registry.register(plan_task())
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ToolDetailsArgs {
    /// name of the tool
    #[schemars(length(min = 1))]
    tool_name: String,
}

/// The registry of the pipeline running the call: the tools a meta tool may talk about.
fn registry_of(ctx: &ToolContext) -> Result<&ToolRegistry, ToolError> {
    ctx.pipeline()
        .map(|p| p.registry().as_ref())
        .ok_or_else(|| ToolError::failed("meta tools run only inside a pipeline"))
}

fn get_tool_details() -> ToolDefinition {
    ToolDefinition::typed::<ToolDetailsArgs>(
        "get_tool_details",
        "Show the full description and parameter schema of a tool you may use.",
        ToolModule::Composite,
        EffectClass::ReadOnly,
    )
    .handler((), |(), args, ctx| async move {
        tool_details(&args.tool_name, &ctx)
    })
}

fn tool_details(name: &str, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let registry = registry_of(ctx)?;
    let allow = &ctx.caller.allowlist;
    // A tool outside the caller's capability is reported exactly like a missing one.
    let Some(tool) = registry.get(name).filter(|_| allow.allows(name)) else {
        let near = registry.suggest(name, allow);
        let hint = if near.is_empty() {
            String::new()
        } else {
            format!("; did you mean: {}?", near.join(", "))
        };
        return Err(ToolError::NotFound(format!(
            "no tool \"{name}\" is available{hint}"
        )));
    };
    let d = &tool.definition;
    let data = json!({
        "name": d.name,
        "description": d.description,
        "module": d.module.as_str(),
        "effect": d.effect.as_str(),
        "parameters": d.parameters,
    });
    let text = format!(
        "{} ({}, {})\n{}\nparameters: {}",
        d.name,
        d.module,
        d.effect,
        d.description,
        crate::canonical::canonical_json(&d.parameters)
    );
    Ok(ToolOutput::new(data, text))
}

#[derive(Deserialize, schemars::JsonSchema)]
struct PlanArgs {
    #[schemars(length(min = 1, max = 2000))]
    goal: String,
    #[schemars(length(min = 1, max = 20))]
    steps: Vec<PlanStep>,
}

// One step of a plan. Other keys a model adds to a step are kept and echoed back as before.
// (A `//` comment: a doc comment would become the schema's description.)
#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct PlanStep {
    #[schemars(length(min = 1, max = 500))]
    description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    other: serde_json::Map<String, serde_json::Value>,
}

fn plan_task() -> ToolDefinition {
    ToolDefinition::typed::<PlanArgs>(
        "plan_task",
        "Record a plan for the current task: a goal and ordered steps, each optionally naming the tool it will use. Returns the validated plan.",
        ToolModule::Composite,
        EffectClass::ReadOnly,
    )
    .handler((), |(), args, ctx| async move { record_plan(args, &ctx) })
}

fn record_plan(args: PlanArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let goal = args.goal.trim().to_string();
    let steps = args.steps;
    let registry = registry_of(ctx)?;
    let mut unknown = BTreeSet::new();
    for tool in steps.iter().filter_map(|s| s.tool.as_deref()) {
        if !(registry.contains(tool) && ctx.caller.allowlist.allows(tool)) {
            unknown.insert(tool.to_string());
        }
    }
    if !unknown.is_empty() {
        let names: Vec<String> = unknown.into_iter().collect();
        return Err(ToolError::Invalid(format!(
            "steps name tools that are not available: {}",
            names.join(", ")
        )));
    }
    let mut text = format!("plan: {goal}\n");
    for (i, s) in steps.iter().enumerate() {
        let desc = &s.description;
        match &s.tool {
            Some(t) => text.push_str(&format!("{}. {desc} [{t}]\n", i + 1)),
            None => text.push_str(&format!("{}. {desc}\n", i + 1)),
        }
    }
    let data = json!({"planId": ctx.call_id, "goal": goal, "steps": steps, "status": "recorded"});
    Ok(ToolOutput::new(data, text.trim_end().to_string()))
}
