//! Compose: a declarative chain of existing tools registered as one new tool.
//!
//! Every step is a normal pipeline call made through [`ToolContext::call_tool`]: it runs
//! under the composed tool's caller and allowlist, passes every gate, and is audited with the
//! composed call as its parent (the reference called the registry directly and skipped all
//! checks).

pub mod composer;
pub mod spec;
pub mod template;

use std::sync::Arc;

use alembic_tools::{
    EffectClass, HandlerFuture, ToolContext, ToolDefinition, ToolError, ToolHandler, ToolModule,
    ToolOutput, ToolRegistry,
};
use serde_json::{Map, Value};

pub use composer::{CompositionTemplate, DynamicComposer};
pub use spec::{CompositionSpec, CompositionStep, MergeStrategy};
use template::Scope;

use crate::nested::outcome_to_result;

/// Builds the tool definition of a (validated) composition over `registry`.
pub fn composed_tool(spec: CompositionSpec, registry: &ToolRegistry) -> ToolDefinition {
    let effect = spec
        .steps
        .iter()
        .filter_map(|s| registry.get(&s.tool).map(|t| t.definition.effect))
        .max()
        .unwrap_or(EffectClass::ReadOnly);
    ToolDefinition::new(
        spec.name.clone(),
        spec.description.clone(),
        spec.parameters.clone(),
        ToolModule::Composite,
        effect,
        Arc::new(ComposedHandler {
            spec: Arc::new(spec),
        }),
    )
}

struct ComposedHandler {
    spec: Arc<CompositionSpec>,
}

impl ToolHandler for ComposedHandler {
    fn call(&self, args: Value, ctx: ToolContext) -> HandlerFuture {
        let spec = Arc::clone(&self.spec);
        Box::pin(async move {
            let args = with_bound(&spec, args);
            let results = match spec.merge_strategy {
                MergeStrategy::Sequential => run_sequential(&spec, &args, &ctx).await?,
                MergeStrategy::Parallel => run_parallel(&spec, &args, &ctx).await?,
            };
            let merged = merge(&spec, &results)?;
            Ok(ToolOutput::json(merged))
        })
    }
}

/// The call's arguments over the parameters bound when the tool was forged.
fn with_bound(spec: &CompositionSpec, args: Value) -> Value {
    if spec.bound_params.is_empty() {
        return args;
    }
    let mut merged = spec.bound_params.clone();
    if let Value::Object(given) = args {
        merged.extend(given);
    }
    Value::Object(merged)
}

fn step_error(i: usize, tool: &str, e: ToolError) -> ToolError {
    let at = format!("step {i} ({tool})");
    match e {
        ToolError::Failed(m) => ToolError::Failed(format!("{at}: {m}")),
        ToolError::Invalid(m) => ToolError::Invalid(format!("{at}: {m}")),
        ToolError::Refused { reason, rule } => ToolError::Refused {
            reason: format!("{at}: {reason}"),
            rule,
        },
        ToolError::NotFound(m) => ToolError::NotFound(format!("{at}: {m}")),
        ToolError::Cancelled => ToolError::Cancelled,
    }
}

fn fill_args(spec: &CompositionSpec, i: usize, scope: &Scope<'_>) -> Result<Value, ToolError> {
    let step = &spec.steps[i];
    scope
        .fill(&step.args)
        .map(|v| v.unwrap_or_else(|| Value::Object(Map::new())))
        .map_err(|e| ToolError::Invalid(format!("step {i} ({}): {e}", step.tool)))
}

async fn run_sequential(
    spec: &CompositionSpec,
    params: &Value,
    ctx: &ToolContext,
) -> Result<Vec<Value>, ToolError> {
    let mut results: Vec<Value> = Vec::with_capacity(spec.steps.len());
    for (i, step) in spec.steps.iter().enumerate() {
        let scope = Scope {
            params,
            steps: &results,
            item: None,
        };
        let data = match &step.for_each {
            Some(each) => run_for_each(spec, i, each, &scope, ctx).await?,
            None => {
                let args = fill_args(spec, i, &scope)?;
                let outcome = ctx.call_tool(&step.tool, args).await;
                outcome_to_result(outcome)
                    .map_err(|e| step_error(i, &step.tool, e))?
                    .data
            }
        };
        results.push(data);
    }
    Ok(results)
}

/// One call per element of the `for_each` array (up to the step's limit). A call that fails
/// becomes an entry naming its element and error; a refusal or cancellation ends the whole
/// composition, as it would a plain step.
async fn run_for_each(
    spec: &CompositionSpec,
    i: usize,
    each: &str,
    scope: &Scope<'_>,
    ctx: &ToolContext,
) -> Result<Value, ToolError> {
    let step = &spec.steps[i];
    let items = match scope.fill(&Value::String(each.to_string())) {
        Ok(Some(Value::Array(items))) => items,
        Ok(other) => {
            return Err(ToolError::Failed(format!(
                "step {i} ({}): for_each {each} is not an array (got {})",
                step.tool,
                other.unwrap_or(Value::Null)
            )));
        }
        Err(e) => return Err(ToolError::Failed(format!("step {i} ({}): {e}", step.tool))),
    };
    let mut out = Vec::new();
    for item in items.iter().take(step.item_limit()) {
        let scope = Scope {
            item: Some(item),
            ..*scope
        };
        let args = fill_args(spec, i, &scope)?;
        match outcome_to_result(ctx.call_tool(&step.tool, args).await) {
            Ok(output) => out.push(output.data),
            Err(e @ (ToolError::Refused { .. } | ToolError::Cancelled)) => {
                return Err(step_error(i, &step.tool, e));
            }
            Err(e) => out.push(serde_json::json!({"item": item, "error": e.to_string()})),
        }
    }
    Ok(Value::Array(out))
}

async fn run_parallel(
    spec: &CompositionSpec,
    params: &Value,
    ctx: &ToolContext,
) -> Result<Vec<Value>, ToolError> {
    let scope = Scope {
        params,
        steps: &[],
        item: None,
    };
    let mut calls = Vec::with_capacity(spec.steps.len());
    for (i, step) in spec.steps.iter().enumerate() {
        let args = fill_args(spec, i, &scope)?;
        calls.push(ctx.call_tool(&step.tool, args));
    }
    let outcomes = futures::future::join_all(calls).await;
    outcomes
        .into_iter()
        .enumerate()
        .map(|(i, o)| {
            outcome_to_result(o)
                .map(|out| out.data)
                .map_err(|e| step_error(i, &spec.steps[i].tool, e))
        })
        .collect()
}

/// One entry per step, keyed by `extract_key` or else the tool name (`_N` added on a clash).
fn merge(spec: &CompositionSpec, results: &[Value]) -> Result<Value, ToolError> {
    let mut merged = Map::new();
    for (i, (step, data)) in spec.steps.iter().zip(results).enumerate() {
        let (key, value) = match &step.extract_key {
            Some(k) if step.for_each.is_some() => {
                let picked = data.as_array().map_or_else(Vec::new, |items| {
                    items
                        .iter()
                        .map(|d| d.get(k).cloned().unwrap_or(Value::Null))
                        .collect()
                });
                (k.clone(), Value::Array(picked))
            }
            Some(k) => {
                let v = data.get(k).cloned().ok_or_else(|| {
                    ToolError::Failed(format!(
                        "step {i} ({}): the result has no key \"{k}\" to extract",
                        step.tool
                    ))
                })?;
                (k.clone(), v)
            }
            None => (step.tool.clone(), data.clone()),
        };
        let key = if merged.contains_key(&key) {
            format!("{key}_{i}")
        } else {
            key
        };
        merged.insert(key, value);
    }
    Ok(Value::Object(merged))
}
