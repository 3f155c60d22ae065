//! The memory tools of the ast-graph module: `note_finding`, `get_previous_analysis` and
//! `get_previous_evidence`. They find the caller's loop through the [`LoopDirectory`] service,
//! so they work for agent loops and answer plainly for callers without one.

use alembic_base::lock;
use std::fmt::Write as _;
use std::sync::Arc;

use alembic_tools::{
    EffectClass, RegistryError, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput,
    ToolRegistry, handler_fn,
};
use serde_json::{Value, json};

use crate::middleware::{LoopDirectory, LoopMemory};
use crate::text::TokenMeter;

/// Evidence entries shown by `get_previous_evidence`.
const EVIDENCE_SHOWN: usize = 8;
/// Token budget of `get_previous_analysis`.
const ANALYSIS_BUDGET: usize = 3000;

/// Registers the three memory tools.
pub fn register_tools(registry: &ToolRegistry) -> Result<(), RegistryError> {
    registry.register(note_finding())?;
    registry.register(get_previous_analysis())?;
    registry.register(get_previous_evidence())?;
    Ok(())
}

fn loop_of(ctx: &ToolContext) -> Option<Arc<LoopMemory>> {
    ctx.service::<LoopDirectory>()?.get(&ctx.caller.id)
}

fn note_finding() -> ToolDefinition {
    ToolDefinition::new(
        "note_finding",
        "Record a key finding in working memory. Noted findings survive context compaction and are handed to later stages; use it for conclusions you will need later (≤150 characters), with evidence as \"File.swift:45\".",
        json!({
            "type": "object",
            "properties": {
                "finding": {"type": "string", "description": "the finding, one sentence"},
                "evidence": {"description": "where it shows, e.g. \"Net/APIClient.swift:40\" (a list is joined)", "type": ["string", "array"], "items": {"type": "string"}},
                "importance": {"type": "number", "minimum": 1, "maximum": 10, "default": 5, "description": "1 (minor) to 10 (critical)"}
            },
            "required": ["finding"]
        }),
        ToolModule::AstGraph,
        EffectClass::WritesMemory,
        handler_fn(|args: Value, ctx: ToolContext| async move {
            let memory = loop_of(&ctx).ok_or_else(|| {
                ToolError::Failed(
                    "working memory is not available: note_finding works only inside an agent run"
                        .into(),
                )
            })?;
            let finding = args["finding"].as_str().unwrap_or("").trim();
            if finding.is_empty() {
                return Err(ToolError::Invalid(
                    "argument \"finding\": expected a non-empty sentence".into(),
                ));
            }
            let evidence = match &args["evidence"] {
                Value::Array(items) => items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
                Value::String(s) => s.clone(),
                _ => String::new(),
            };
            let importance = args["importance"].as_f64().unwrap_or(5.0);
            let text = memory
                .coordinator
                .note_finding(&memory.scope, finding, &evidence, importance)
                .map_err(|e| ToolError::Failed(e.to_string()))?;
            Ok(ToolOutput::new(
                json!({"noted": finding, "importance": importance.round().clamp(1.0, 10.0)}),
                text,
            ))
        }),
    )
}

fn get_previous_analysis() -> ToolDefinition {
    ToolDefinition::new(
        "get_previous_analysis",
        "Show what earlier dimensions of this bootstrap session found (summaries, key findings, submitted candidates), so you do not repeat their exploration.",
        json!({
            "type": "object",
            "properties": {
                "keywords": {"type": "array", "items": {"type": "string"}, "description": "rank findings that mention these first"}
            }
        }),
        ToolModule::AstGraph,
        EffectClass::ReadOnly,
        handler_fn(|args: Value, ctx: ToolContext| async move {
            let none = || {
                Ok(ToolOutput::new(
                    json!({"dimensions": []}),
                    "No previous analysis in this session.",
                ))
            };
            let Some(memory) = loop_of(&ctx) else {
                return none();
            };
            let Some(session) = memory.coordinator.session() else {
                return none();
            };
            let keywords: Vec<String> = args["keywords"]
                .as_array()
                .map(|k| {
                    k.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let refs: Vec<&str> = keywords.iter().map(String::as_str).collect();
            let session = lock(session);
            let own = memory.scope.dimension();
            let text =
                session.context_for_dimension(own, &refs, ANALYSIS_BUDGET, &TokenMeter::default());
            if text.is_empty() {
                return none();
            }
            let dims: Vec<String> = session
                .completed_dimensions()
                .into_iter()
                .filter(|d| d != own)
                .collect();
            Ok(ToolOutput::new(json!({"dimensions": dims}), text))
        }),
    )
}

fn get_previous_evidence() -> ToolDefinition {
    ToolDefinition::new(
        "get_previous_evidence",
        "Search the evidence earlier dimensions recorded (file paths and findings), by a case-insensitive substring of the path or the finding.",
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "substring of a file path or finding"},
                "dimId": {"type": "string", "description": "only evidence of this dimension"}
            },
            "required": ["query"]
        }),
        ToolModule::AstGraph,
        EffectClass::ReadOnly,
        handler_fn(|args: Value, ctx: ToolContext| async move {
            let query = args["query"].as_str().unwrap_or("");
            let dim = args["dimId"].as_str();
            let session = loop_of(&ctx).and_then(|m| m.coordinator.session().cloned());
            let hits = match session {
                Some(s) => lock(&s).search_evidence(query, dim),
                None => Vec::new(),
            };
            if hits.is_empty() {
                return Ok(ToolOutput::new(
                    json!({"total": 0, "evidence": []}),
                    format!("No evidence matches \"{query}\"."),
                ));
            }
            let mut text = format!("{} evidence entries match \"{query}\":", hits.len());
            for e in hits.iter().take(EVIDENCE_SHOWN) {
                let _ = write!(
                    text,
                    "\n📄 {}\n   [{}] [{}/10] {}",
                    e.file, e.dim_id, e.importance, e.finding
                );
            }
            if hits.len() > EVIDENCE_SHOWN {
                let _ = write!(text, "\n…and {} more", hits.len() - EVIDENCE_SHOWN);
            }
            let shown: Vec<&crate::session::EvidenceEntry> =
                hits.iter().take(EVIDENCE_SHOWN).collect();
            Ok(ToolOutput::new(
                json!({"total": hits.len(), "evidence": shown}),
                text,
            ))
        }),
    )
}
