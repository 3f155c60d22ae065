//! `evolution-tools`: agents propose changes to published recipes; a confirmed deprecation
//! and a skip close the open proposals (recorded, with who and why).

use std::sync::Arc;

use alembic_tools::{EffectClass, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde_json::{Value, json};

use super::args::{entry_id, f64_arg, req_str};
use super::{KnowledgeService, ServiceCache, tool};
use crate::evolution::PROPOSAL_TYPES;

pub(crate) fn tools(cache: &Arc<ServiceCache>) -> Vec<ToolDefinition> {
    let e = |name, desc, schema, body| {
        tool(
            cache,
            name,
            desc,
            schema,
            ToolModule::EvolutionTools,
            EffectClass::WritesKnowledge,
            body,
        )
    };
    vec![
        e(
            "propose_evolution",
            "Propose a change to a published recipe (enhance, correction, deprecate, merge, \
           supersede) with evidence from the code. One open proposal per recipe and type.",
            json!({"type": "object", "properties": {
              "recipeId": {"type": "string"},
              "type": {"type": "string", "enum": PROPOSAL_TYPES},
              "description": {"type": "string", "minLength": 1},
              "evidence": {"type": "object", "description": "{sourceStatus: exists|moved|modified|deleted, currentCode, newLocation, suggestedChanges}"},
              "confidence": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5}
          }, "required": ["recipeId", "type", "description"]}),
            propose_evolution,
        ),
        e(
            "confirm_deprecation",
            "Deprecate a published recipe whose code is gone or wrong, closing its open proposals.",
            json!({"type": "object", "properties": {
              "recipeId": {"type": "string"}, "reason": {"type": "string", "minLength": 1}
          }, "required": ["recipeId", "reason"]}),
            confirm_deprecation,
        ),
        e(
            "skip_evolution",
            "Record that a recipe was reviewed and stays as it is; its open proposals are closed \
           as skipped with the reason.",
            json!({"type": "object", "properties": {
              "recipeId": {"type": "string"}, "reason": {"type": "string", "minLength": 1}
          }, "required": ["recipeId", "reason"]}),
            skip_evolution,
        ),
    ]
}

fn propose_evolution(
    s: &KnowledgeService,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let id = entry_id(args)?;
    let kind = req_str(args, "type")?;
    let description = req_str(args, "description")?;
    let evidence = args.get("evidence").cloned().unwrap_or_else(|| json!({}));
    let confidence = f64_arg(args, "confidence", 0.5);
    let p =
        s.with(|kb| kb.propose(id, kind, description, &evidence, confidence, &ctx.caller.id))?;
    let text = format!(
        "proposed {} {} for {} (confidence {:.2})",
        p.kind, p.id, p.entry_id, p.confidence
    );
    Ok(ToolOutput::new(
        json!({"status": "proposed", "proposalId": p.id, "recipeId": p.entry_id, "type": p.kind, "confidence": p.confidence}),
        text,
    ))
}

fn confirm_deprecation(
    s: &KnowledgeService,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let id = entry_id(args)?;
    let reason = req_str(args, "reason")?;
    let closed = s.with(|kb| kb.confirm_deprecation(id, reason, &ctx.caller.id))?;
    let text = format!("deprecated {id}: {reason} ({closed} proposal(s) closed)");
    Ok(ToolOutput::new(
        json!({"status": "deprecated", "recipeId": id, "reason": reason, "closedProposals": closed}),
        text,
    ))
}

fn skip_evolution(
    s: &KnowledgeService,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let id = entry_id(args)?;
    let reason = req_str(args, "reason")?;
    let closed = s.with(|kb| kb.skip_evolution(id, reason, &ctx.caller.id))?;
    let text = format!("skipped {id}: {reason} ({closed} proposal(s) closed)");
    Ok(ToolOutput::new(
        json!({"status": "skipped", "recipeId": id, "reason": reason, "closedProposals": closed}),
        text,
    ))
}
