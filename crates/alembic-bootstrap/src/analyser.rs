//! How one dimension is analysed. The runner calls a [`DimensionAnalyser`] for every active
//! dimension; [`DeterministicAnalyser`] measures facts without an LLM, and an LLM analyser
//! plugs in through the same trait (it reads earlier tiers from [`TierContext`]).

use std::sync::{Arc, Mutex};

use alembic_context::{SessionFinding, SessionStore, TierReflection};

use crate::dimensions::Dimension;
use crate::error::BootstrapError;
use crate::extract::{self, Finding};
use crate::facts::Facts;

/// What a dimension sees of the run: the facts, the run's shared session (reports of the
/// dimensions done so far, evidence index, tool cache) and the reflections of earlier tiers.
#[derive(Clone)]
pub struct TierContext {
    /// 1, 2 or 3.
    pub tier: u8,
    pub facts: Arc<Facts>,
    pub session: Arc<Mutex<SessionStore>>,
    /// Reflections of the tiers before this one, oldest first.
    pub reflections: Vec<TierReflection>,
}

impl std::fmt::Debug for TierContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TierContext")
            .field("tier", &self.tier)
            .field("reflections", &self.reflections.len())
            .finish_non_exhaustive()
    }
}

/// The result of one dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct DimensionOutcome {
    pub findings: Vec<Finding>,
    /// The distilled text of the dimension (becomes its memory and its session report).
    pub analysis: String,
    /// Findings noted while analysing that are not candidates themselves (an LLM analyst's
    /// `note_finding`s); they go into the session report ahead of the candidates' findings.
    pub notes: Vec<SessionFinding>,
}

/// Analyses one dimension.
#[async_trait::async_trait]
pub trait DimensionAnalyser: Send + Sync {
    /// Whether an LLM does the analysis (reported as `"llm"` in the summary).
    fn uses_llm(&self) -> bool;
    async fn analyse(
        &self,
        dim: &Dimension,
        ctx: &TierContext,
    ) -> Result<DimensionOutcome, BootstrapError>;
}

/// Measured facts only: no LLM, no network.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeterministicAnalyser;

#[async_trait::async_trait]
impl DimensionAnalyser for DeterministicAnalyser {
    fn uses_llm(&self) -> bool {
        false
    }

    async fn analyse(
        &self,
        dim: &Dimension,
        ctx: &TierContext,
    ) -> Result<DimensionOutcome, BootstrapError> {
        let facts = Arc::clone(&ctx.facts);
        let dim_owned = dim.clone();
        let findings = tokio::task::spawn_blocking(move || extract::run(&dim_owned, &facts))
            .await
            .map_err(|e| BootstrapError::Analysis {
                dimension: dim.id.clone(),
                message: e.to_string(),
            })?;
        let analysis = distil(dim, &findings);
        Ok(DimensionOutcome {
            findings,
            analysis,
            notes: Vec::new(),
        })
    }
}

/// One line per finding under the dimension's label; empty when nothing was found.
pub fn distil(dim: &Dimension, findings: &[Finding]) -> String {
    if findings.is_empty() {
        return String::new();
    }
    let mut out = format!("{} (bootstrap):", dim.label);
    for f in findings {
        let at = f
            .evidence
            .first()
            .map(|e| format!(" [{e}]"))
            .unwrap_or_default();
        out.push_str(&format!("\n- {}{at}", f.summary));
    }
    out
}
