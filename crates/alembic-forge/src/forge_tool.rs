//! `forge_tool`: the agent asks for a tool in words and gets one for the rest of its session.
//!
//! The waterfall of [`ToolForge::forge`], cheapest first: **reuse** (an existing tool with
//! arguments pre-filled from the target), **compose** (the [`DynamicComposer`] plans a chain of
//! real tools from the project's and the shipped templates, checked against their schemas), and
//! **generate** (only when `[forge] generate` is on and a provider is configured). The tool is
//! registered through the project's [`crate::TemporaryToolRegistry`] for 30 minutes and granted
//! to the calling session ([`alembic_tools::SessionGrants`]); the agent loop rebuilds its tool
//! list every round, so the tool is offered from the next round on. Forging grants no new
//! power: each step is a nested call under the caller's own allowlist, gated and audited with
//! the forged tool's call as its parent.

use std::sync::Arc;

use alembic_tools::{EffectClass, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::compose::DynamicComposer;
use crate::forge::{ForgeInputs, ForgeOutcome, ToolForge};
use crate::generate::context_bridge;
use crate::reuse::{ForgeRequest, words};
use crate::temporary::ForgeMode;
use crate::tools::ForgeService;

/// Arguments of `forge_tool`.
#[derive(Deserialize, schemars::JsonSchema)]
struct ForgeToolArgs {
    /// what the tool should do, in words, e.g. "analyse the architecture of class NetworkClient"
    #[schemars(length(min = 1))]
    intent: String,
    /// the verb: read, search, list, analyze, validate, ... (taken from the intent when left out)
    action: Option<String>,
    /// the thing it is about: a class, module, category or language name (taken from the
    /// intent when left out)
    target: Option<String>,
}

/// The `forge_tool` definition, bound to `forge`.
pub fn forge_tool(forge: Arc<ForgeService>) -> ToolDefinition {
    ToolDefinition::typed::<ForgeToolArgs>(
        "forge_tool",
        "Make a tool for a task that would otherwise take several calls: reuses an existing tool with pre-filled arguments, or composes real tools from a template (e.g. the architecture of a class: hierarchy, members and the call graph of each method; the recipes of a category checked against the guard rules). The new tool is in your tool list from your next turn, for 30 minutes; call it then.",
        ToolModule::Composite,
        // It changes the session's tool set: never cached, and not a file or knowledge write.
        EffectClass::WritesMemory,
    )
    .handler(forge, run)
}

async fn run(
    forge: Arc<ForgeService>,
    args: ForgeToolArgs,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let registry = ctx
        .pipeline()
        .ok_or_else(|| ToolError::failed("forge_tool runs only inside a pipeline"))?
        .registry()
        .clone();
    let temporary = forge.bind_registry(&registry);
    if !temporary.serves(&registry) {
        return Err(ToolError::failed(
            "forge_tool is bound to another tool registry than the one of this call",
        ));
    }
    let request = request_of(&args);
    let composer = DynamicComposer::for_project(forge.root());
    let generator = forge.generator();
    let inputs = ForgeInputs {
        allowlist: &ctx.caller.allowlist,
        composition: None,
        composer: Some(&composer),
        generator: generator
            .as_deref()
            .map(|g| (g, context_bridge(ctx.clone()))),
    };
    let tool_forge = ToolForge::new(temporary.clone(), forge.generate_allowed());
    let outcome = tool_forge.forge(&request, inputs).await.map_err(|e| {
        let problems = composer.problems.join("; ");
        let more = if problems.is_empty() {
            String::new()
        } else {
            format!(" (template files left out: {problems})")
        };
        ToolError::Invalid(format!("{e}{more}"))
    })?;
    if !ctx.caller.allowlist.allows(&outcome.tool) {
        forge.grants().grant(&ctx.caller.id, &outcome.tool);
    }
    let expires = temporary
        .get(&outcome.tool)
        .and_then(|i| i.remaining_ms(temporary.now_ms()));
    Ok(describe(&outcome, &registry, &request, expires))
}

/// The request, with the action and target taken from the intent when not given.
fn request_of(args: &ForgeToolArgs) -> ForgeRequest {
    let action = given(args.action.as_deref()).unwrap_or_else(|| infer_action(&args.intent));
    let target = given(args.target.as_deref()).unwrap_or_else(|| infer_target(&args.intent));
    ForgeRequest::new(args.intent.trim(), action, target)
}

/// A value the model gave, unless it is blank.
fn given(value: Option<&str>) -> Option<String> {
    value
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The first word of the intent that is a known verb, else "".
fn infer_action(intent: &str) -> String {
    const VERBS: &[&str] = &[
        "read", "get", "show", "search", "find", "list", "analyze", "analyse", "inspect", "check",
        "validate", "write", "delete", "run",
    ];
    words(intent)
        .into_iter()
        .find(|w| VERBS.contains(&w.as_str()))
        .unwrap_or_default()
}

/// The last word of the intent written like a name (an upper-case letter, `_` or `.` in it,
/// not the first word), e.g. "NetworkClient" in "analyse the architecture of NetworkClient".
fn infer_target(intent: &str) -> String {
    intent
        .split_whitespace()
        .skip(1)
        .map(|w| w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')))
        .filter(|w| {
            w.chars()
                .any(|c| c.is_ascii_uppercase() || c == '_' || c == '.')
        })
        .last()
        .unwrap_or("")
        .trim_matches('.')
        .to_string()
}

fn describe(
    outcome: &ForgeOutcome,
    registry: &alembic_tools::ToolRegistry,
    request: &ForgeRequest,
    expires_ms: Option<u64>,
) -> ToolOutput {
    let registered = registry.get(&outcome.tool);
    let description = registered
        .as_ref()
        .map(|t| t.definition.description.clone());
    let parameters = registered.map(|t| t.definition.parameters.clone());
    let minutes = expires_ms.map(|ms| ms.div_ceil(60_000));
    let when = match (outcome.mode, minutes) {
        (ForgeMode::Reuse, None) => "it is already in your tool list".to_string(),
        (_, Some(m)) => format!("it is in your tool list from your next turn, for {m} min"),
        (_, None) => "it is in your tool list from your next turn".to_string(),
    };
    let bound = bound_note(&outcome.mode, request);
    let text = format!(
        "forged \"{}\" ({}): {}\n{when}; call it{bound}.",
        outcome.tool,
        outcome.mode.as_str(),
        description.as_deref().unwrap_or("")
    );
    let data = json!({
        "tool": outcome.tool,
        "mode": outcome.mode,
        "description": description,
        "parameters": parameters,
        "expiresInMs": expires_ms,
        "reuse": outcome.reuse,
        "request": {"intent": request.intent, "action": request.action, "target": request.target},
    });
    ToolOutput::new(data, text)
}

fn bound_note(mode: &ForgeMode, request: &ForgeRequest) -> String {
    match mode {
        ForgeMode::Compose | ForgeMode::Reuse if !request.target.is_empty() => {
            format!(
                " with {{}} ({} is filled in)",
                Value::from(request.target.clone())
            )
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn action_and_target_come_from_the_intent_when_left_out() {
        let args = ForgeToolArgs {
            intent: "Analyse the architecture of class NetworkClient.".into(),
            action: None,
            target: None,
        };
        assert_eq!(
            request_of(&args),
            ForgeRequest::new(
                "Analyse the architecture of class NetworkClient.",
                "analyse",
                "NetworkClient"
            )
        );
        let args = ForgeToolArgs {
            intent: "recipes of category Network with their guard rules".into(),
            action: Some(" ".into()),
            target: Some("UI".into()),
        };
        let r = request_of(&args);
        assert_eq!((r.action.as_str(), r.target.as_str()), ("", "UI"));
        assert_eq!(infer_target("show everything"), "");
    }
}
