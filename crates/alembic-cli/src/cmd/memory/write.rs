//! The changing memory commands. Each is one tool call through the project's pipeline as
//! caller `cli` (`add` → `memory_remember`, `forget` → `memory_forget`, `import` →
//! `memory_import`, `gc` → `memory_gc`), so it is validated, policy-checked and audited like
//! an agent's call. Input the library would refuse is checked first, so usage errors keep
//! their messages and exit code 2.

use std::io::BufRead;

use alembic_runtime::ProjectRuntime;
use alembic_runtime::memory::{
    ConsolidateStats, Memory, MemorySource, MemoryType, NewMemory, Outcome,
};
use alembic_runtime::tools::ToolOutput;
use anyhow::Context;
use serde_json::{Value, json};

use super::{AddArgs, IdArgs, ImportArgs, JsonArgs, no_such_memory, runtime, usage};
use crate::CmdResult;
use crate::exit::{Exit, UsageError};

/// Calls `tool` as caller `cli` (see [`crate::tool_call::call_as_cli`]).
fn call(rt: &ProjectRuntime, tool: &str, args: Value) -> anyhow::Result<Result<ToolOutput, Exit>> {
    crate::tool_call::call_as_cli(rt, tool, args)
}

pub(super) fn add(a: AddArgs) -> CmdResult {
    let input = NewMemory {
        kind: usage::<MemoryType>(&a.kind)?,
        source: usage::<MemorySource>(&a.source)?,
        scope: usage::<alembic_runtime::memory::Scope>(&a.scope)?,
        content: a.text,
        importance: a.importance,
        ttl_days: a.ttl_days,
        ..NewMemory::default()
    };
    let rt = runtime(&a.project, true)?;
    let max_chars = rt.services().memory.config().max_content_chars;
    input
        .check(max_chars)
        .map_err(|e| UsageError(e.to_string()))?;
    let mut args = json!({
        "content": input.content,
        "type": input.kind.as_str(),
        "importance": input.importance,
        "scope": input.scope.as_str(),
        "source": input.source.as_str(),
    });
    if let Some(days) = input.ttl_days {
        args["ttlDays"] = json!(days);
    }
    let output = match call(&rt, "memory_remember", args)? {
        Ok(output) => output,
        Err(exit) => return Ok(exit),
    };
    let outcome: Outcome = serde_json::from_value(output.data)
        .context("memory_remember returned no consolidation outcome")?;
    let stats: ConsolidateStats = std::iter::once(outcome).collect();
    print_added(&stats, a.json)?;
    Ok(Exit::Ok)
}

fn print_added(stats: &ConsolidateStats, as_json: bool) -> anyhow::Result<()> {
    if as_json {
        println!("{}", serde_json::to_string_pretty(stats)?);
        return Ok(());
    }
    for o in &stats.outcomes {
        let action = serde_json::to_value(o.action)?
            .as_str()
            .unwrap_or_default()
            .to_string();
        match (&o.id, &o.previous) {
            (Some(id), Some(prev)) => println!("{action} {id} (supersedes {prev})"),
            (Some(id), None) => println!("{action} {id}"),
            _ => println!("{action}: too short to remember (at least 5 characters)"),
        }
    }
    Ok(())
}

pub(super) fn forget(a: IdArgs) -> CmdResult {
    let rt = runtime(&a.project, true)?;
    // An unknown id is the user's mistake (exit 2), told as before.
    if rt.services().memory.read(|m| m.get(&a.id))??.is_none() {
        anyhow::bail!(no_such_memory(&a.id));
    }
    if let Err(exit) = call(&rt, "memory_forget", json!({"id": a.id}))? {
        return Ok(exit);
    }
    if a.json {
        println!("{}", json!({ "forgotten": a.id }));
    } else {
        println!("forgot {}", a.id);
    }
    Ok(Exit::Ok)
}

pub(super) fn gc(a: JsonArgs) -> CmdResult {
    let rt = runtime(&a.project, true)?;
    let output = match call(&rt, "memory_gc", json!({}))? {
        Ok(output) => output,
        Err(exit) => return Ok(exit),
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&output.data)?);
    } else {
        println!("{}", output.text);
    }
    Ok(Exit::Ok)
}

pub(super) fn import(a: ImportArgs) -> CmdResult {
    let memories = read_exported(&a.file)?;
    let rt = runtime(&a.project, true)?;
    let output = match call(&rt, "memory_import", json!({ "memories": memories }))? {
        Ok(output) => output,
        Err(exit) => return Ok(exit),
    };
    let count = |key: &str| output.data[key].as_u64().unwrap_or_default();
    let (imported, skipped) = (count("imported"), count("skipped"));
    if a.json {
        println!("{}", json!({ "imported": imported, "skipped": skipped }));
    } else {
        println!("imported {imported}, skipped {skipped} already present");
    }
    Ok(Exit::Ok)
}

/// The memories of a file written by `alembic memory export` (JSON lines).
fn read_exported(file: &std::path::Path) -> anyhow::Result<Vec<Memory>> {
    let reader = std::fs::File::open(file)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", file.display())))?;
    let mut memories = Vec::new();
    for (i, l) in std::io::BufReader::new(reader).lines().enumerate() {
        let l = l?;
        if l.trim().is_empty() {
            continue;
        }
        let m: Memory = serde_json::from_str(&l).map_err(|e| {
            UsageError(format!(
                "{} line {}: not an exported memory: {e}",
                file.display(),
                i + 1
            ))
        })?;
        memories.push(m);
    }
    Ok(memories)
}
