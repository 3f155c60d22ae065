//! Operator tools that move the knowledge base between the project's SQLite file and the team
//! store: `team_knowledge_status`, `team_knowledge_push` and `team_knowledge_pull`, behind
//! `alembic team init|status|push|pull` (caller `cli`, audited). In no agent preset.
//!
//! - push copies every local entry (with its review history, edges, proposals, guard runs
//!   and the stored guard-rule overrides) to the team store, keeping ids: entries the team
//!   already has are skipped, so running it again writes nothing and there are never two
//!   copies of an entry on the server. A local entry whose title a different live team entry
//!   already has is not pushed and is named in the result. The local rows stay (the checkout's
//!   copy from before the team; with a team configured every knowledge tool uses the team
//!   store), so nothing is lost if the team is left.
//! - pull copies the team's knowledge into the local file the same way, for working without
//!   the server or leaving the team.
//!
//! Without a team, each tool fails saying how to configure one.

use std::collections::HashSet;
use std::sync::Arc;

use alembic_tools::{
    EffectClass, RegistryError, ToolDefinition, ToolError, ToolModule, ToolOutput, ToolRegistry,
};
use serde::Deserialize;
use serde_json::json;

use super::KnowledgeService;
use crate::backend::{ImportReport, KnowledgeExport};
use crate::model::Entry;

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

    /// Copies the local entries `keep` selects (with their history, edges between them,
    /// proposals, and with `everything` the guard runs and overrides) to the team store.
    /// `Ok(None)` without a team. Idempotent: entries the team has are skipped.
    pub fn publish_local(
        &self,
        keep: impl Fn(&Entry) -> bool,
        everything: bool,
    ) -> Result<Option<ImportReport>, ToolError> {
        if self.team_label().is_none() {
            return Ok(None);
        }
        let mut data = self.with_local(|kb| kb.export())?;
        data.entries.retain(|e| keep(e));
        let ids: HashSet<String> = data.entries.iter().map(|e| e.id.clone()).collect();
        data.history.retain(|h| ids.contains(&h.entry_id));
        data.proposals.retain(|p| ids.contains(&p.entry_id));
        if !everything {
            data.guard_runs.clear();
            data.guard_overrides = None;
        }
        self.with_team_store(|t| t.import(&data))
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
            "\n{id} not copied: entry {kept} there has the same title"
        ));
    }
    text
}

fn push_tool(kb: Arc<KnowledgeService>) -> ToolDefinition {
    ToolDefinition::typed::<NoArgs>(
        "team_knowledge_push",
        "Copy this checkout's knowledge base (entries with their review history, edges, \
         proposals, guard runs and guard-rule overrides) to the team store, keeping ids. \
         Entries already there are skipped. Idempotent.",
        ToolModule::Infrastructure,
        EffectClass::WritesKnowledge,
    )
    .blocking(kb, |kb, _args: NoArgs| {
        let report = kb
            .publish_local(|_| true, true)?
            .ok_or_else(|| ToolError::failed(NO_TEAM))?;
        Ok(ToolOutput::new(
            report_json(&report),
            report_text("pushed", &report, "on the server"),
        ))
    })
}

fn pull_tool(kb: Arc<KnowledgeService>) -> ToolDefinition {
    ToolDefinition::typed::<NoArgs>(
        "team_knowledge_pull",
        "Copy the team's knowledge base from the team store into this checkout's file, for \
         work without the server. Entries already present are skipped. Idempotent.",
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
