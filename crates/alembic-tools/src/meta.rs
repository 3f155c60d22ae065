//! Meta tools (module composite): they go through the same pipeline as every other tool.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::context::ToolContext;
use crate::definition::{
    EffectClass, ToolDefinition, ToolError, ToolModule, ToolOutput, handler_fn,
};
use crate::registry::{RegistryError, ToolRegistry};

/// Registers `get_tool_details` and `plan_task`.
pub fn register_tools(registry: &ToolRegistry) -> Result<(), RegistryError> {
    registry.register(get_tool_details())?;
    registry.register(plan_task())
}

fn get_tool_details() -> ToolDefinition {
    ToolDefinition::new(
        "get_tool_details",
        "Show the full description and parameter schema of a tool you may use.",
        json!({
            "type": "object",
            "properties": {
                "toolName": {"type": "string", "minLength": 1, "description": "name of the tool"}
            },
            "required": ["toolName"]
        }),
        ToolModule::Composite,
        EffectClass::ReadOnly,
        handler_fn(|args, ctx| async move { tool_details(&args, &ctx) }),
    )
}

/// The registry of the pipeline running the call: the tools a meta tool may talk about.
fn registry_of(ctx: &ToolContext) -> Result<&ToolRegistry, ToolError> {
    ctx.pipeline()
        .map(|p| p.registry().as_ref())
        .ok_or_else(|| ToolError::failed("meta tools run only inside a pipeline"))
}

fn tool_details(args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let name = args["toolName"].as_str().unwrap_or_default();
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

fn plan_task() -> ToolDefinition {
    ToolDefinition::new(
        "plan_task",
        "Record a plan for the current task: a goal and ordered steps, each optionally naming the tool it will use. Returns the validated plan.",
        json!({
            "type": "object",
            "properties": {
                "goal": {"type": "string", "minLength": 1, "maxLength": 2000},
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 20,
                    "items": {
                        "type": "object",
                        "properties": {
                            "description": {"type": "string", "minLength": 1, "maxLength": 500},
                            "tool": {"type": "string"}
                        },
                        "required": ["description"]
                    }
                }
            },
            "required": ["goal", "steps"]
        }),
        ToolModule::Composite,
        EffectClass::ReadOnly,
        handler_fn(|args, ctx| async move { record_plan(&args, &ctx) }),
    )
}

fn record_plan(args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let goal = args["goal"].as_str().unwrap_or_default().trim().to_string();
    let steps = args["steps"].as_array().cloned().unwrap_or_default();
    let registry = registry_of(ctx)?;
    let mut unknown = BTreeSet::new();
    for step in &steps {
        if let Some(tool) = step.get("tool").and_then(Value::as_str)
            && !(registry.contains(tool) && ctx.caller.allowlist.allows(tool))
        {
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
        let desc = s["description"].as_str().unwrap_or_default();
        match s.get("tool").and_then(Value::as_str) {
            Some(t) => text.push_str(&format!("{}. {desc} [{t}]\n", i + 1)),
            None => text.push_str(&format!("{}. {desc}\n", i + 1)),
        }
    }
    let data = json!({"planId": ctx.call_id, "goal": goal, "steps": steps, "status": "recorded"});
    Ok(ToolOutput::new(data, text.trim_end().to_string()))
}
