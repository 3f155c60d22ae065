//! Operator tools that move the knowledge base between the project's SQLite file and the team
//! store: `team_knowledge_status`, `team_knowledge_push` and `team_knowledge_pull`, behind
//! `alembic team init|status|push|pull` (caller `cli`, audited). In no agent preset.
//!
//! - push moves every local entry (with its review history, edges, proposals, guard runs and
//!   the stored guard-rule overrides) to the team store, keeping ids
//!   ([`KnowledgeService::move_local`]): the team imports what it lacks, then the local copy
//!   of everything the team holds is removed, so a checkout with a team never keeps a stale
//!   second copy. Running it again, or after a crash between the two steps, moves nothing
//!   twice. What the team does not take stays here and is named: an entry whose title a
//!   different live team entry has, an entry edited here after the team got it, overrides
//!   that differ from the team's.
//! - pull copies the team's knowledge into the local file (entries present are skipped), for
//!   working without the server or leaving the team; the team keeps its rows.
//!
//! Without a team, each tool fails saying how to configure one.

use std::collections::HashSet;
use std::sync::Arc;

mod moving;

pub use moving::{MoveReport, Revise};

use alembic_tools::{
    EffectClass, RegistryError, ToolDefinition, ToolError, ToolModule, ToolOutput, ToolRegistry,
};
use serde::Deserialize;
use serde_json::json;

use super::KnowledgeService;
use crate::backend::{ImportReport, KnowledgeExport};

const NO_TEAM: &str = "no team is configured: add [team] url and team to .alembic/config.toml, or set ALEMBIC_TEAM_URL";

/// Names of the tools [`register_team_tools`] registers.
pub const TEAM_TOOL_NAMES: &[&str] = &[
    "team_knowledge_status",
    "team_knowledge_push",
    "team_knowledge_pull",
];

/// Registers the knowledge team tools bound to `kb`.
pub fn register_team_tools(
    registry: &ToolRegistry,
    kb: Arc<KnowledgeService>,
) -> Result<(), RegistryError> {
    registry.register(status_tool(Arc::clone(&kb)))?;
    registry.register(push_tool(Arc::clone(&kb)))?;
    registry.register(pull_tool(kb))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

impl KnowledgeService {
    /// The team store's export; fails saying how to configure a team when there is none.
    fn team_export(&self) -> Result<KnowledgeExport, ToolError> {
        self.with_team_store(|t| t.export())?
            .ok_or_else(|| ToolError::failed(NO_TEAM))
    }
}

fn status_tool(kb: Arc<KnowledgeService>) -> ToolDefinition {
    ToolDefinition::typed::<NoArgs>(
        "team_knowledge_status",
        "Show the team's knowledge base: which team and server, how many entries it holds by \
         status, and how many entries of this checkout's local knowledge base it does not have \
         yet (`alembic team push`).",
        ToolModule::Infrastructure,
        EffectClass::ReadOnly,
    )
    .blocking(kb, |kb, _args: NoArgs| {
        let label = kb
            .team_label()
            .ok_or_else(|| ToolError::failed(NO_TEAM))?
            .to_string();
        let (stats, server, ids) = kb
            .with_team_store(|t| {
                let ids: HashSet<String> = t.export()?.entries.into_iter().map(|e| e.id).collect();
                Ok((t.stats()?, t.describe(), ids))
            })?
            .ok_or_else(|| ToolError::failed(NO_TEAM))?;
        let local = kb.with_local(|l| l.export())?.entries;
        let waiting = local.iter().filter(|e| !ids.contains(&e.id)).count();
        Ok(ToolOutput::new(
            json!({"team": label, "store": server, "entries": stats.total,
                   "recipes": stats.recipes, "candidates": stats.candidates,
                   "byStatus": stats.by_status, "edges": stats.edges,
                   "localEntries": local.len(), "waitingToPush": waiting}),
            format!(
                "{server}: {} knowledge entries ({} recipes, {} candidates); {waiting} of {} local entries to push",
                stats.total,
                stats.recipes,
                stats.candidates,
                local.len()
            ),
        ))
    })
}

fn report_json(r: &ImportReport) -> serde_json::Value {
    json!({"entries": r.imported, "alreadyThere": r.already_present,
           "titleTaken": r.title_taken.iter().map(|(id, kept)| json!({"id": id, "kept": kept})).collect::<Vec<_>>(),
           "edges": r.edges, "proposals": r.proposals, "guardRuns": r.guard_runs})
}

fn report_text(verb: &str, r: &ImportReport, there: &str) -> String {
    let mut text = format!(
        "{verb} {} knowledge entries ({} edges, {} proposals, {} guard runs); {} were already {there}",
        r.imported, r.edges, r.proposals, r.guard_runs, r.already_present
    );
    for (id, kept) in &r.title_taken {
        text.push_str(&format!(
            "\n{id} not {verb}: entry {kept} there has the same title"
        ));
    }
    text
}

/// The push result: the import, what left this checkout and what stayed (and why).
pub(crate) fn move_json(r: &MoveReport) -> serde_json::Value {
    let mut data = report_json(&r.import);
    data["removedHere"] = json!(r.removed_here);
    data["newerHere"] = r
        .newer_here
        .iter()
        .map(|(id, here, there)| json!({"id": id, "versionHere": here, "versionOnTeam": there}))
        .collect();
    data["revised"] = json!(r.revised);
    data["leftAsTheyWere"] = json!(r.left_as_they_were);
    data["conflicts"] = json!(r.conflicts);
    data["guardOverridesKeptHere"] = json!(r.guard_overrides_kept_here);
    data
}

fn move_text(r: &MoveReport) -> String {
    let mut text = report_text("moved", &r.import, "on the server");
    text.push_str(&format!(
        "; {} local entries removed (the team holds them)",
        r.removed_here
    ));
    for (id, here, there) in &r.newer_here {
        text.push_str(&format!(
            "\n{id} kept here: changed here (version {here}) after the team got it (version {there})"
        ));
    }
    for conflict in &r.conflicts {
        text.push_str(&format!("\nnot revised on the team: {conflict}"));
    }
    if r.guard_overrides_kept_here {
        text.push_str(
            "\nguard-rule overrides kept here: the team has different ones (alembic knowledge guard-overrides show)",
        );
    }
    text
}

fn push_tool(kb: Arc<KnowledgeService>) -> ToolDefinition {
    ToolDefinition::typed::<NoArgs>(
        "team_knowledge_push",
        "Move this checkout's knowledge base (entries with their review history, edges, \
         proposals, guard runs and guard-rule overrides) to the team store, keeping ids: the \
         team imports what it lacks, then the local copies of what it holds are removed. \
         Entries the team cannot take (title taken, changed here since) stay and are named. \
         Idempotent.",
        ToolModule::Infrastructure,
        EffectClass::WritesKnowledge,
    )
    .blocking(kb, |kb, _args: NoArgs| {
        let report = kb
            .move_local(|_| true, true, None)?
            .ok_or_else(|| ToolError::failed(NO_TEAM))?;
        Ok(ToolOutput::new(move_json(&report), move_text(&report)))
    })
}

fn pull_tool(kb: Arc<KnowledgeService>) -> ToolDefinition {
    ToolDefinition::typed::<NoArgs>(
        "team_knowledge_pull",
        "Copy the team's knowledge base from the team store into this checkout's file, for \
         work without the server or leaving the team (the team keeps it). Entries already \
         present are skipped. Idempotent.",
        ToolModule::Infrastructure,
        EffectClass::WritesKnowledge,
    )
    .blocking(kb, |kb, _args: NoArgs| {
        let data = kb.team_export()?;
        let report = kb.with_local(|l| l.import(&data))?;
        Ok(ToolOutput::new(
            report_json(&report),
            report_text("pulled", &report, "here"),
        ))
    })
}
