//! `evolution-tools`: agents propose changes to published recipes; a confirmed deprecation
//! and a skip close the open proposals (recorded, with who and why).

use alembic_tools::{EffectClass, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{AnyObject, Text, entry_id};
use super::{Knowledge, bind};
use crate::backend::KnowledgeBackend;
use crate::error::KnowledgeError;
use crate::evolution::PROPOSAL_TYPES;

/// A store operation that closes a recipe's open proposals: (recipe id, reason, by) → closed.
type CloseFn = fn(&mut dyn KnowledgeBackend, &str, &str, &str) -> Result<usize, KnowledgeError>;

/// The recipe, under `recipeId` (`candidateId` and `id` are read too).
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct RecipeRef {
    #[serde(default)]
    recipe_id: Text,
    #[serde(default)]
    #[schemars(skip)]
    candidate_id: Text,
    #[serde(default)]
    #[schemars(skip)]
    id: Text,
}

impl RecipeRef {
    fn id(&self) -> Result<&str, ToolError> {
        entry_id([&self.recipe_id, &self.candidate_id, &self.id])
    }
}

fn half() -> f64 {
    0.5
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("required" = ["recipeId", "type", "description"]))]
struct ProposeArgs {
    #[serde(flatten)]
    recipe: RecipeRef,
    #[serde(rename = "type", default)]
    #[schemars(extend("enum" = PROPOSAL_TYPES))]
    kind: Text,
    #[serde(default)]
    #[schemars(length(min = 1))]
    description: Text,
    /// {sourceStatus: exists|moved|modified|deleted, currentCode, newLocation, suggestedChanges}
    #[schemars(with = "Option<AnyObject>")]
    evidence: Option<Value>,
    #[serde(default = "half")]
    #[schemars(range(min = 0, max = 1))]
    confidence: f64,
}

/// A recipe and the reason of the decision.
#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(extend("required" = ["recipeId", "reason"]))]
struct DecisionArgs {
    #[serde(flatten)]
    recipe: RecipeRef,
    #[serde(default)]
    #[schemars(length(min = 1))]
    reason: Text,
}

fn evolution_tool<A: alembic_tools::ToolArgs>(
    name: &str,
    description: &str,
) -> alembic_tools::TypedTool<A> {
    ToolDefinition::typed::<A>(
        name,
        description,
        ToolModule::EvolutionTools,
        EffectClass::WritesKnowledge,
    )
}

pub(crate) fn tools(state: &Knowledge) -> Vec<ToolDefinition> {
    vec![
        bind(
            evolution_tool::<ProposeArgs>(
                "propose_evolution",
                "Propose a change to a published recipe (enhance, correction, deprecate, merge, \
                 supersede) with evidence from the code. One open proposal per recipe and type.",
            ),
            state,
            propose_evolution,
        ),
        bind(
            evolution_tool::<DecisionArgs>(
                "confirm_deprecation",
                "Deprecate a published recipe whose code is gone or wrong, closing its open proposals.",
            ),
            state,
            |s, a, c| {
                close_proposals(s, a, c, "deprecated", |kb, id, reason, by| {
                    kb.confirm_deprecation(id, reason, by)
                })
            },
        ),
        bind(
            evolution_tool::<DecisionArgs>(
                "skip_evolution",
                "Record that a recipe was reviewed and stays as it is; its open proposals are closed \
                 as skipped with the reason.",
            ),
            state,
            |s, a, c| {
                close_proposals(s, a, c, "skipped", |kb, id, reason, by| {
                    kb.skip_evolution(id, reason, by)
                })
            },
        ),
    ]
}

fn propose_evolution(
    s: &Knowledge,
    args: ProposeArgs,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let id = args.recipe.id()?;
    let kind = args.kind.required("type")?;
    let description = args.description.required("description")?;
    let evidence = args.evidence.clone().unwrap_or_else(|| json!({}));
    let confidence = args.confidence;
    let p =
        s.kb.with(|kb| kb.propose(id, kind, description, &evidence, confidence, &ctx.caller.id))?;
    let text = format!(
        "proposed {} {} for {} (confidence {:.2})",
        p.kind, p.id, p.entry_id, p.confidence
    );
    Ok(ToolOutput::new(
        json!({"status": "proposed", "proposalId": p.id, "recipeId": p.entry_id, "type": p.kind, "confidence": p.confidence}),
        text,
    ))
}

/// Closes the recipe's open proposals with `close` (which may also move the recipe) and
/// reports it as `status`.
fn close_proposals(
    s: &Knowledge,
    args: DecisionArgs,
    ctx: &ToolContext,
    status: &str,
    close: CloseFn,
) -> Result<ToolOutput, ToolError> {
    let id = args.recipe.id()?;
    let reason = args.reason.required("reason")?;
    let closed = s.kb.with(|kb| close(kb, id, reason, &ctx.caller.id))?;
    let text = format!("{status} {id}: {reason} ({closed} proposal(s) closed)");
    Ok(ToolOutput::new(
        json!({"status": status, "recipeId": id, "reason": reason, "closedProposals": closed}),
        text,
    ))
}
