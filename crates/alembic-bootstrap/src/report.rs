//! The summary of a run, in the `--json` shape scripts read:
//! `{"project": {"languages", "frameworks"}, "dimensions": [{"id", "tier", "status",
//! "candidates", "error"?}], "candidates": [{"id", "title", "dimension", "knowledgeType",
//! "evidence": [{"file", "line"}]}], "memories", "llm", "elapsedMs"}`.

use serde::Serialize;

use crate::checkpoint::CandidateRecord;

/// What happened to a dimension in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DimensionStatus {
    /// analysed and committed now
    Done,
    /// evidence unchanged since the last analysis (or nothing to analyse)
    Skipped,
    /// committed by the interrupted run that `--resume` continued
    Resumed,
    /// the analysis failed; `error` says why (a `--resume` retries it)
    Failed,
}

impl DimensionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DimensionStatus::Done => "done",
            DimensionStatus::Skipped => "skipped",
            DimensionStatus::Resumed => "resumed",
            DimensionStatus::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DimensionSummary {
    pub id: String,
    pub tier: u8,
    pub status: DimensionStatus,
    /// New candidates this dimension wrote (in this run, or in the resumed run).
    pub candidates: usize,
    /// Its submitted candidates revised because their evidence changed.
    #[serde(skip_serializing_if = "is_zero")]
    pub revised: usize,
    /// Its candidates left as they are because someone reviewed them already.
    #[serde(skip_serializing_if = "is_zero")]
    pub kept: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProjectSummary {
    pub languages: Vec<String>,
    pub frameworks: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapReport {
    pub project: ProjectSummary,
    pub dimensions: Vec<DimensionSummary>,
    pub candidates: Vec<CandidateRecord>,
    /// Memories written (new or replacing a changed one).
    pub memories: usize,
    pub llm: bool,
    pub elapsed_ms: u64,
}

impl BootstrapReport {
    /// The summary table printed at the end of `alembic bootstrap`.
    pub fn table(&self) -> String {
        let mut out = format!(
            "languages: {}; frameworks: {}\n{:<26} {:>4}  {:<8} {:>10}\n",
            or_none(&self.project.languages),
            or_none(&self.project.frameworks),
            "dimension",
            "tier",
            "status",
            "candidates"
        );
        for d in &self.dimensions {
            let changes = match (d.revised, d.kept) {
                (0, 0) => String::new(),
                (r, k) => format!("  ({r} revised, {k} kept as reviewed)"),
            };
            out.push_str(&format!(
                "{:<26} {:>4}  {:<8} {:>10}{changes}{}\n",
                d.id,
                d.tier,
                d.status.as_str(),
                d.candidates,
                d.error
                    .as_deref()
                    .map(|e| format!("  {e}"))
                    .unwrap_or_default()
            ));
        }
        out.push_str(&format!(
            "{} new candidates (status submitted), {} memories, {} ms, {}\n",
            self.candidates.len(),
            self.memories,
            self.elapsed_ms,
            if self.llm {
                "LLM analysis"
            } else {
                "deterministic (no LLM)"
            }
        ));
        out
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn or_none(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}
