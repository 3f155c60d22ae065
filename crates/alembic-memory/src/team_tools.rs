//! Operator tools that move team-scoped memories between the project's SQLite file and the
//! team store: `team_status`, `team_push` and `team_pull`, behind `alembic team
//! status|push|pull` (caller `cli`, audited). In no agent preset.
//!
//! - push moves every local memory of scope `team` (history included) to the team store:
//!   ids already there are skipped, then the local rows are deleted. Running it again moves
//!   nothing, and a push cut off after the import only finishes the deletion next time, so
//!   there are never two copies of a memory on the server.
//! - pull copies the team's memories into the local file (ids already there are skipped),
//!   for working without the server or leaving the team. `memory_recall` shows a memory
//!   present in both once.
//!
//! Without a team, each tool fails saying how to configure one.

use std::sync::Arc;

use alembic_tools::{
    EffectClass, RegistryError, ToolDefinition, ToolError, ToolModule, ToolOutput, ToolRegistry,
};
use serde::Deserialize;
use serde_json::json;

use crate::{ListFilter, Memory, MemoryBackend, MemoryError, MemoryService, Scope};

const NO_TEAM: &str = "no team is configured: add [team] url and team to .alembic/config.toml, or set ALEMBIC_TEAM_URL";

/// Registers `team_status`, `team_push` and `team_pull` bound to `memory`.
pub fn register_tools(
    registry: &ToolRegistry,
    memory: Arc<MemoryService>,
) -> Result<(), RegistryError> {
    registry.register(status_tool(Arc::clone(&memory)))?;
    registry.register(push_tool(Arc::clone(&memory)))?;
    registry.register(pull_tool(memory))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// Runs `f` on the team store, failing with how to configure one when there is none.
fn team<T>(
    memory: &MemoryService,
    f: impl FnOnce(&mut dyn MemoryBackend) -> Result<T, MemoryError>,
) -> Result<T, ToolError> {
    memory
        .with_team_store(f)?
        .ok_or_else(|| ToolError::failed(NO_TEAM))
}

fn team_scope(include_history: bool) -> ListFilter {
    ListFilter {
        scope: Some(Scope::Team),
        include_archived: true,
        include_history,
        limit: None,
    }
}

fn status_tool(memory: Arc<MemoryService>) -> ToolDefinition {
    ToolDefinition::typed::<NoArgs>(
        "team_status",
        "Show the team store: which team and server, how many team memories it holds, and how \
         many team-scoped memories of this checkout wait for `alembic team push`.",
        ToolModule::Infrastructure,
        EffectClass::ReadOnly,
    )
    .blocking(memory, |memory, _args: NoArgs| {
        let label = memory
            .team_label()
            .ok_or_else(|| ToolError::failed(NO_TEAM))?
            .to_string();
        let local = memory.read(|m| m.list(&team_scope(false)))?;
        let local = local.map_err(|e| ToolError::failed(e.to_string()))?.len();
        let (on_server, server) = team(memory, |t| {
            Ok((t.list(&team_scope(false))?.len(), t.describe()))
        })?;
        Ok(ToolOutput::new(
            json!({"team": label, "store": server, "teamMemories": on_server, "waitingToPush": local}),
            format!("{server}: {on_server} team memories; {local} local team memories to push"),
        ))
    })
}

fn push_tool(memory: Arc<MemoryService>) -> ToolDefinition {
    ToolDefinition::typed::<NoArgs>(
        "team_push",
        "Move this checkout's team-scoped memories (history included) to the team store. \
         Memories already there are skipped; moved ones leave the local file. Idempotent.",
        ToolModule::Infrastructure,
        EffectClass::WritesMemory,
    )
    .blocking(memory, |memory, _args: NoArgs| {
        let local: Vec<Memory> = memory.with_store(|m| m.list(&team_scope(true)))?;
        let (imported, skipped) = team(memory, |t| t.import(&local))?;
        let current: Vec<&Memory> = local.iter().filter(|m| m.valid_to.is_none()).collect();
        memory.with_store(|m| {
            for row in &current {
                m.forget(&row.id)?;
            }
            Ok(())
        })?;
        Ok(ToolOutput::new(
            json!({"pushed": imported, "alreadyOnServer": skipped}),
            format!("pushed {imported} team memories, {skipped} were already on the server"),
        ))
    })
}

/// Moves the local team-scoped memories the team store does not hold yet (history included)
/// to it, then removes them locally; copies that are on the server already (pulled ones)
/// stay. `memory_remember` runs this before consolidating a team memory on the server, so a
/// local team memory that was never pushed is compared with (not duplicated, not lost: it
/// leaves the file only after the server committed it). Returns how many moved; 0 without
/// a team.
pub(crate) fn push_unpushed(memory: &MemoryService) -> Result<usize, ToolError> {
    let local: Vec<Memory> = memory.with_store(|m| m.list(&team_scope(true)))?;
    if local.is_empty() {
        return Ok(0);
    }
    let moved = memory.with_team_store(|t| {
        let mut unpushed = Vec::new();
        for row in local {
            if t.get(&row.id)?.is_none() {
                unpushed.push(row);
            }
        }
        t.import(&unpushed)?;
        Ok(unpushed)
    })?;
    let Some(moved) = moved else {
        return Ok(0);
    };
    memory.with_store(|m| {
        for row in moved.iter().filter(|r| r.valid_to.is_none()) {
            m.forget(&row.id)?;
        }
        Ok(())
    })?;
    Ok(moved.len())
}

fn pull_tool(memory: Arc<MemoryService>) -> ToolDefinition {
    ToolDefinition::typed::<NoArgs>(
        "team_pull",
        "Copy the team's memories (history included) from the team store into this checkout's \
         file, for work without the server. Memories already present are skipped. Idempotent.",
        ToolModule::Infrastructure,
        EffectClass::WritesMemory,
    )
    .blocking(memory, |memory, _args: NoArgs| {
        let rows = team(memory, |t| t.export())?;
        let (imported, skipped) = memory.with_store(|m| m.import(&rows))?;
        Ok(ToolOutput::new(
            json!({"pulled": imported, "alreadyLocal": skipped}),
            format!("pulled {imported} team memories, {skipped} were already here"),
        ))
    })
}
