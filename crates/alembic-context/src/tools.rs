//! The memory tools of the ast-graph module: `note_finding`, `get_previous_analysis` and
//! `get_previous_evidence`, plus the run tools `review_my_output` ([`crate::review`]) and
//! `collect_scan_recipe` ([`crate::scan`]). They are registered with the runtime's
//! [`LoopDirectory`] and find the caller's loop in it, so they work for agent loops and
//! answer plainly for callers without one.

use alembic_base::lock;
use std::fmt::Write as _;
use std::sync::Arc;

use alembic_tools::{
    EffectClass, RegistryError, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput,
    ToolRegistry,
};
use serde::Deserialize;
use serde_json::json;

use crate::middleware::{LoopDirectory, LoopMemory};
use crate::text::TokenMeter;

/// Evidence entries shown by `get_previous_evidence`.
const EVIDENCE_SHOWN: usize = 8;
/// Token budget of `get_previous_analysis`.
const ANALYSIS_BUDGET: usize = 3000;

/// Registers the three memory tools, `review_my_output` and `collect_scan_recipe`, bound to
/// the directory agent loops attach to.
pub fn register_tools(
    registry: &ToolRegistry,
    loops: Arc<LoopDirectory>,
) -> Result<(), RegistryError> {
    registry.register(note_finding(Arc::clone(&loops)))?;
    registry.register(get_previous_analysis(Arc::clone(&loops)))?;
    registry.register(get_previous_evidence(Arc::clone(&loops)))?;
    registry.register(crate::review::review_my_output(Arc::clone(&loops)))?;
    registry.register(crate::scan::collect_scan_recipe(loops))?;
    Ok(())
}

fn loop_of(loops: &LoopDirectory, ctx: &ToolContext) -> Option<Arc<LoopMemory>> {
    loops.get(&ctx.caller.id)
}

#[derive(Deserialize, schemars::JsonSchema)]
struct NoteArgs {
    /// the finding, one sentence
    finding: String,
    /// where it shows, e.g. "Net/APIClient.swift:40" (a list is joined)
    evidence: Option<Evidence>,
    /// 1 (minor) to 10 (critical)
    #[schemars(range(min = 1, max = 10), extend("default" = 5))]
    importance: Option<f64>,
}

/// One place (`"File.swift:45"`) or several.
#[derive(Deserialize)]
#[serde(untagged)]
enum Evidence {
    One(String),
    Many(Vec<String>),
}

impl Evidence {
    fn joined(self) -> String {
        match self {
            Evidence::One(place) => place,
            Evidence::Many(places) => places.join(", "),
        }
    }
}

impl schemars::JsonSchema for Evidence {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Evidence".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["string", "array"], "items": {"type": "string"}})
    }
}

fn note_finding(loops: Arc<LoopDirectory>) -> ToolDefinition {
    ToolDefinition::typed::<NoteArgs>(
        "note_finding",
        "Record a key finding in working memory. Noted findings survive context compaction and are handed to later stages; use it for conclusions you will need later (≤150 characters), with evidence as \"File.swift:45\".",
        ToolModule::AstGraph,
        EffectClass::WritesMemory,
    )
    .handler(loops, |loops, args, ctx| async move {
        let memory = loop_of(&loops, &ctx).ok_or_else(|| {
            ToolError::Failed(
                "working memory is not available: note_finding works only inside an agent run"
                    .into(),
            )
        })?;
        let finding = args.finding.trim();
        if finding.is_empty() {
            return Err(ToolError::Invalid(
                "argument \"finding\": expected a non-empty sentence".into(),
            ));
        }
        let evidence = args.evidence.map(Evidence::joined).unwrap_or_default();
        let importance = args.importance.unwrap_or(5.0);
        let text = memory
            .coordinator
            .note_finding(&memory.scope, finding, &evidence, importance)
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        Ok(ToolOutput::new(
            json!({"noted": finding, "importance": importance.round().clamp(1.0, 10.0)}),
            text,
        ))
    })
}

#[derive(Deserialize, schemars::JsonSchema)]
struct AnalysisArgs {
    /// rank findings that mention these first
    keywords: Option<Vec<String>>,
}

fn get_previous_analysis(loops: Arc<LoopDirectory>) -> ToolDefinition {
    ToolDefinition::typed::<AnalysisArgs>(
        "get_previous_analysis",
        "Show what earlier dimensions of this bootstrap session found (summaries, key findings, submitted candidates), so you do not repeat their exploration.",
        ToolModule::AstGraph,
        EffectClass::ReadOnly,
    )
    .handler(loops, |loops, args, ctx| async move {
        Ok(previous_analysis(&loops, &args, &ctx).unwrap_or_else(|| {
            ToolOutput::new(
                json!({"dimensions": []}),
                "No previous analysis in this session.",
            )
        }))
    })
}

/// What earlier dimensions found, or `None` when there is nothing to show.
fn previous_analysis(
    loops: &LoopDirectory,
    args: &AnalysisArgs,
    ctx: &ToolContext,
) -> Option<ToolOutput> {
    let memory = loop_of(loops, ctx)?;
    let session = memory.coordinator.session()?;
    let refs: Vec<&str> = args.keywords.iter().flatten().map(String::as_str).collect();
    let session = lock(session);
    let own = memory.scope.dimension();
    let text = session.context_for_dimension(own, &refs, ANALYSIS_BUDGET, &TokenMeter::default());
    if text.is_empty() {
        return None;
    }
    let dims: Vec<String> = session
        .completed_dimensions()
        .into_iter()
        .filter(|d| d != own)
        .collect();
    Some(ToolOutput::new(json!({"dimensions": dims}), text))
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct EvidenceArgs {
    /// substring of a file path or finding
    #[schemars(length(min = 1))]
    query: String,
    /// only evidence of this dimension
    dim_id: Option<String>,
}

fn get_previous_evidence(loops: Arc<LoopDirectory>) -> ToolDefinition {
    ToolDefinition::typed::<EvidenceArgs>(
        "get_previous_evidence",
        "Search the evidence earlier dimensions recorded (file paths and findings), by a case-insensitive substring of the path or the finding.",
        ToolModule::AstGraph,
        EffectClass::ReadOnly,
    )
    .handler(loops, |loops, args, ctx| async move {
        let session = loop_of(&loops, &ctx).and_then(|m| m.coordinator.session().cloned());
        let hits = match session {
            Some(s) => lock(&s).search_evidence(&args.query, args.dim_id.as_deref()),
            None => Vec::new(),
        };
        Ok(evidence_output(&args.query, &hits))
    })
}

fn evidence_output(query: &str, hits: &[crate::session::EvidenceEntry]) -> ToolOutput {
    if hits.is_empty() {
        return ToolOutput::new(
            json!({"total": 0, "evidence": []}),
            format!("No evidence matches \"{query}\"."),
        );
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
    let shown: Vec<&crate::session::EvidenceEntry> = hits.iter().take(EVIDENCE_SHOWN).collect();
    ToolOutput::new(json!({"total": hits.len(), "evidence": shown}), text)
}
