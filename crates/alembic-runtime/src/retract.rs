//! Rejecting or deprecating a bootstrap candidate retracts what bootstrap derived from it.
//!
//! Bootstrap writes one memory per dimension (`source = bootstrap`, `source_dimension = D`)
//! whose lines are the findings, `- <summary> [file:line]`, each finding also a candidate
//! tagged with that dimension. A middleware on every pipeline of the runtime (CLI, MCP,
//! agents) watches successful `reject_candidate` and `deprecate_recipe` calls: the line of
//! the moved entry leaves its dimension's memory, and a memory with no finding left is
//! forgotten, so later recalls and the MCP resources stop showing a claim a reviewer
//! refused. A failed retraction is logged and never undoes the move.

use std::sync::Arc;

use alembic_knowledge::{Entry, KnowledgeService, Status};
use alembic_memory::tools::MemoryService;
use alembic_memory::{ListFilter, MemorySource, MemoryUpdate};
use alembic_tools::{
    CallResult, Middleware, MiddlewareError, MiddlewareSlot, PreparedCall, ToolMetadata,
};

/// The middleware (see the module docs).
pub struct RetractDerivedMemories {
    knowledge: Arc<KnowledgeService>,
    memory: Arc<MemoryService>,
}

impl RetractDerivedMemories {
    pub fn new(knowledge: Arc<KnowledgeService>, memory: Arc<MemoryService>) -> Self {
        RetractDerivedMemories { knowledge, memory }
    }

    /// Retracts the memory lines derived from entry `id`; how many memories changed.
    pub fn retract(&self, id: &str) -> Result<usize, String> {
        let entry = self
            .knowledge
            .with(|kb| kb.get(id))
            .map_err(|e| e.to_string())?;
        let Some((dimension, key)) = derived_from(&entry) else {
            return Ok(0);
        };
        self.memory
            .with_store(|mem| {
                let all = mem.list(&ListFilter {
                    include_archived: true,
                    ..ListFilter::default()
                })?;
                let mut changed = 0;
                for m in all.iter().filter(|m| {
                    m.source == MemorySource::Bootstrap
                        && m.source_dimension.as_deref() == Some(dimension.as_str())
                        && m.valid_to.is_none()
                }) {
                    match without_finding(&m.content, &key) {
                        None => continue,
                        Some(rest) if rest.is_empty() => {
                            mem.forget(&m.id)?;
                        }
                        Some(rest) => {
                            let change = MemoryUpdate {
                                content: Some(rest),
                                ..MemoryUpdate::default()
                            };
                            mem.update(&m.id, change)?;
                        }
                    }
                    changed += 1;
                }
                Ok(changed)
            })
            .map_err(|e| e.to_string())
    }
}

/// What identifies a finding's line in its dimension's memory.
struct FindingKey {
    /// The finding's summary: the entry's description (the first 200 characters of it on
    /// the deterministic path) or, when that is empty, the first line of its content (the
    /// LLM path's fallback).
    summary: String,
    /// The line's ` [file:line]` suffix, from the entry's first evidence place: it still
    /// finds the line after a reviewer edited the summary.
    place: Option<String>,
}

/// The dimension and the line key of a bootstrap entry; `None` for any other entry.
fn derived_from(e: &Entry) -> Option<(String, FindingKey)> {
    let from_bootstrap = e.extra.get("source").and_then(|v| v.as_str()) == Some("bootstrap")
        || e.tags.iter().any(|t| t == "bootstrap");
    if !from_bootstrap {
        return None;
    }
    let dimension = e
        .extra
        .get("dimensionId")
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .or_else(|| {
            e.tags
                .iter()
                .find_map(|t| t.strip_prefix("dimension:").map(str::to_owned))
        })?;
    let summary = match e.description.trim() {
        "" => e.content.lines().next().unwrap_or("").trim().to_owned(),
        d => d.to_owned(),
    };
    let place = e
        .extra
        .get("evidence")
        .and_then(|v| v.get(0))
        .and_then(|p| Some(format!("[{}:{}]", p.get("file")?.as_str()?, p.get("line")?)));
    Some((dimension, FindingKey { summary, place }))
}

/// `content` without the finding lines of `key`: `None` when no line matched, an empty
/// string when no finding is left (the header alone says nothing). Lines match by summary;
/// when none does, by evidence place, and only when exactly one line has it.
fn without_finding(content: &str, key: &FindingKey) -> Option<String> {
    fn body(l: &str) -> Option<&str> {
        l.trim_start().strip_prefix("- ").map(str::trim_start)
    }
    let by_summary = |l: &str| {
        !key.summary.is_empty() && body(l).is_some_and(|b| b.starts_with(key.summary.as_str()))
    };
    let by_place = |l: &str| {
        key.place
            .as_deref()
            .is_some_and(|p| body(l).is_some_and(|b| b.trim_end().ends_with(p)))
    };
    let drop: Vec<bool> = if content.lines().any(by_summary) {
        content.lines().map(by_summary).collect()
    } else if content.lines().filter(|l| by_place(l)).count() == 1 {
        content.lines().map(by_place).collect()
    } else {
        return None;
    };
    let kept: Vec<&str> = content
        .lines()
        .zip(drop)
        .filter_map(|(l, d)| (!d).then_some(l))
        .collect();
    if !kept.iter().any(|l| body(l).is_some()) {
        return Some(String::new());
    }
    Some(kept.join("\n"))
}

#[alembic_tools::async_trait]
impl Middleware for RetractDerivedMemories {
    fn name(&self) -> &str {
        "retract_derived_memories"
    }

    fn slot(&self) -> MiddlewareSlot {
        MiddlewareSlot::ObservationRecord
    }

    async fn after(
        &self,
        call: &PreparedCall,
        result: &CallResult,
        _meta: &mut ToolMetadata,
    ) -> Result<(), MiddlewareError> {
        if !matches!(call.name(), "reject_candidate" | "deprecate_recipe") {
            return Ok(());
        }
        let CallResult::Ok(output) = result else {
            return Ok(());
        };
        let status = output.data.get("status").and_then(|v| v.as_str());
        let retracting = [Status::Rejected, Status::Deprecated].map(Status::as_str);
        let (Some(id), Some(status)) = (output.data.get("id").and_then(|v| v.as_str()), status)
        else {
            return Ok(());
        };
        if !retracting.contains(&status) {
            return Ok(());
        }
        if let Err(e) = self.retract(id) {
            tracing::warn!("the memories derived from {id} were not retracted: {e}");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{FindingKey, without_finding};

    fn key(summary: &str, place: Option<&str>) -> FindingKey {
        FindingKey {
            summary: summary.into(),
            place: place.map(Into::into),
        }
    }

    #[test]
    fn only_the_lines_of_the_finding_leave_and_an_empty_memory_is_dropped() {
        let memory = "Architecture (bootstrap):\n- Modules form a cycle a <-> b [src/a.rs:3]\n- Layers: core, api [src/lib.rs:1]";
        assert_eq!(
            without_finding(memory, &key("Modules form a cycle", None)).as_deref(),
            Some("Architecture (bootstrap):\n- Layers: core, api [src/lib.rs:1]")
        );
        assert_eq!(
            without_finding(memory, &key("Nothing like this", None)),
            None
        );
        let one = "Architecture (bootstrap):\n- Layers: core, api [src/lib.rs:1]";
        assert_eq!(
            without_finding(one, &key("Layers", None)).as_deref(),
            Some("")
        );
        // The header is no finding: a key that only the header starts with matches nothing.
        assert_eq!(without_finding(one, &key("Architecture", None)), None);
    }

    #[test]
    fn an_edited_summary_is_found_by_its_evidence_place_when_that_is_unambiguous() {
        let memory = "Idioms (bootstrap):\n- guard statements [a.swift:11]\n- weak refs [a.swift:8]\n- lazy vars [a.swift:8]";
        assert_eq!(
            without_finding(memory, &key("Exit early with guard", Some("[a.swift:11]"))).as_deref(),
            Some("Idioms (bootstrap):\n- weak refs [a.swift:8]\n- lazy vars [a.swift:8]")
        );
        // Two lines cite the same place: neither is guessed.
        assert_eq!(
            without_finding(memory, &key("Edited", Some("[a.swift:8]"))),
            None
        );
    }
}
