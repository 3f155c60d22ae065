//! Operator tools: `memory_import` and `memory_gc`. The CLI's `alembic memory import|gc` call
//! them through the pipeline as caller `cli`, so these bulk writes are validated,
//! policy-checked and audited like any agent call. They are in no agent preset (only `all`,
//! which holds every registered tool).

use std::sync::Arc;

use alembic_tools::{
    EffectClass, RegistryError, ToolDefinition, ToolError, ToolModule, ToolOutput, ToolRegistry,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::{GcStats, Memory, MemoryService};

/// Registers `memory_import` and `memory_gc` bound to `memory`.
pub fn register_tools(
    registry: &ToolRegistry,
    memory: Arc<MemoryService>,
) -> Result<(), RegistryError> {
    registry.register(import_tool(Arc::clone(&memory)))?;
    registry.register(gc_tool(memory))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ImportArgs {
    /// memories as written by `alembic memory export`, one object each (history included)
    memories: Vec<Map<String, Value>>,
}

fn import_tool(memory: Arc<MemoryService>) -> ToolDefinition {
    ToolDefinition::typed::<ImportArgs>(
        "memory_import",
        "Import memories exported by `alembic memory export`, history included. A memory whose \
         id is already present is skipped; the capacity of each scope is enforced afterwards. \
         Returns how many were imported and skipped.",
        ToolModule::Infrastructure,
        EffectClass::WritesMemory,
    )
    .handler(memory, |memory, args, _ctx| async move {
        let memories = exported_memories(args.memories)?;
        let (imported, skipped) = memory.with_store(|m| m.import(&memories))?;
        Ok(ToolOutput::new(
            json!({"imported": imported, "skipped": skipped}),
            format!("imported {imported}, skipped {skipped} already present"),
        ))
    })
}

/// Reads each object as an exported [`Memory`]; the error names the first one that is not.
fn exported_memories(objects: Vec<Map<String, Value>>) -> Result<Vec<Memory>, ToolError> {
    objects
        .into_iter()
        .enumerate()
        .map(|(i, object)| {
            serde_json::from_value(Value::Object(object)).map_err(|e| {
                ToolError::Invalid(format!(
                    "argument \"memories[{i}]\": not an exported memory: {e}"
                ))
            })
        })
        .collect()
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct GcArgs {}

fn gc_tool(memory: Arc<MemoryService>) -> ToolDefinition {
    ToolDefinition::typed::<GcArgs>(
        "memory_gc",
        "Apply the memory lifetimes now: delete expired memories, forget those unused for \
         [memory] forget_days, archive those unused for archive_days. Returns the counts.",
        ToolModule::Infrastructure,
        EffectClass::WritesMemory,
    )
    .handler(memory, |memory, _args, _ctx| async move {
        let stats = memory.with_store(|m| m.gc())?;
        Ok(gc_output(&stats))
    })
}

fn gc_output(s: &GcStats) -> ToolOutput {
    let text = format!(
        "expired {}, forgotten {}, archived {}, remaining {}",
        s.expired, s.forgotten, s.archived, s.remaining
    );
    ToolOutput::new(json!(s), text)
}
