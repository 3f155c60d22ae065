//! The LLM path of a bootstrap dimension: [`AgentRuntime::run_dimension`] runs one stage
//! under the seed's Bootstrap strategy, EXPLORE → PRODUCE → SUMMARIZE
//! ([`crate::preset::cold_start_stage`]: the analysis tools with the session tools, and the
//! submit tools), inside one [`SessionStore`] that every dimension of the run shares:
//!
//! - EXPLORE runs under the analyst profile; entering PRODUCE switches the scope to the
//!   producer profile, rebuilds the static memory prompt under its shares, and hands the
//!   distilled analysis (`distilled_for_producer`) to the model (`stage/handoff.rs`);
//! - SUMMARIZE asks for the `dimensionDigest` JSON; its summary becomes the dimension's
//!   analysis and its `crossRefs` become the session's cross-dimension references, which the
//!   dimensions after it see (session section and hand-over);
//! - the coordinator is built with the session, so the static prompt of a dimension carries
//!   the results of earlier dimensions and the tier reflections (`context_for_dimension`, the
//!   one place reflections reach the prompt), and `get_previous_analysis` /
//!   `get_previous_evidence` read the run's real reports;
//! - the session's read-only tool cache serves a call another dimension already made;
//! - SubmitDedup refuses a title another dimension of the session already submitted;
//! - when the dimension ends, its report (analysis, findings with evidence, candidates,
//!   distilled working memory, digest) is stored in the session for the dimensions after it.
//!
//! After each tier, [`finish_tier`] builds the [`TierReflection`] into the session.

use std::sync::{Arc, Mutex};

use alembic_base::lock;
use alembic_context::{
    ActiveContextOptions, BudgetProfile, CandidateSummary, DimensionDigest, DimensionReport,
    Finding, ScopeId, SessionFinding, SessionStore, TierReflection,
};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::error::AgentError;
use crate::preset::cold_start_stage;
use crate::report::{StageReport, UsageReport};
use crate::runtime::{AgentRuntime, MemoryInputs, RunContext, run_stages};
use crate::stage::StageOutcome;

/// The session every dimension of one bootstrap run shares.
pub type SharedSession = Arc<Mutex<SessionStore>>;

/// The preset name a dimension's calls are made under (caller `agent:bootstrap:<stage>:<run>`).
pub const BOOTSTRAP_PRESET: &str = "bootstrap";

/// What a dimension asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimensionBrief {
    pub id: String,
    pub label: String,
    /// The extraction guide: what to look for and how.
    pub guide: String,
    /// Knowledge types its candidates may have.
    pub knowledge_types: Vec<String>,
    pub tier: usize,
}

/// What one dimension's run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DimensionRun {
    pub dimension: String,
    /// Titles of the candidates the producer submitted (and the knowledge base accepted).
    pub candidates: Vec<String>,
    /// Submissions SubmitDedup refused (in this dimension or as another dimension's).
    pub duplicates_refused: usize,
    /// Requests and tokens the provider counted.
    pub usage: UsageReport,
    /// Tool calls the session cache answered during this dimension.
    pub cache_hits: u64,
    pub tool_calls: usize,
    /// The dimension's analysis: its digest's summary, else the stage's final answer.
    pub analysis: String,
    /// The `dimensionDigest` the dimension ended with, when its answer carried one.
    pub digest: Option<DimensionDigest>,
    /// Findings noted during the dimension, most important first.
    pub findings: Vec<SessionFinding>,
    pub stages: Vec<StageReport>,
}

/// A new session for a bootstrap run.
pub fn new_session() -> SharedSession {
    Arc::new(Mutex::new(SessionStore::new()))
}

/// Builds, stores and returns the reflection of tier `tier` over its dimensions `dims`.
pub fn finish_tier(session: &SharedSession, tier: usize, dims: &[&str]) -> TierReflection {
    lock(session).reflect_tier(tier, dims)
}

/// The task of a dimension: its label, guide and knowledge types. What earlier dimensions
/// and tiers found is in the system prompt's session section, not repeated here.
pub fn dimension_prompt(brief: &DimensionBrief) -> String {
    format!(
        "Bootstrap dimension \"{}\" ({}), tier {}.\n\n## What to extract\n{}\n\nKnowledge types you may submit: {}.\n\nDo not repeat what earlier dimensions submitted; build on it.",
        brief.label,
        brief.id,
        brief.tier,
        brief.guide.trim(),
        brief.knowledge_types.join(", ")
    )
}

impl AgentRuntime {
    /// Runs dimension `brief` in `session` (see the module docs).
    pub async fn run_dimension(
        &self,
        session: &SharedSession,
        brief: &DimensionBrief,
        cancel: &CancellationToken,
    ) -> Result<DimensionRun, AgentError> {
        let run_id = uuid::Uuid::now_v7().to_string();
        let coordinator = Arc::new(self.coordinator().with_session(Arc::clone(session)));
        let scope = ScopeId::new(format!("{}:bootstrap:{run_id}", brief.id));
        coordinator.open_scope(
            scope.clone(),
            BudgetProfile::Analyst,
            ActiveContextOptions::default(),
        );
        let task = dimension_prompt(brief);
        let memory = MemoryInputs {
            query: task.clone(),
            dimension: Some(brief.id.clone()),
            focus_keywords: brief.label.split_whitespace().map(String::from).collect(),
            conversation: None,
        };
        let hits_before = lock(session).cache_stats().hits;
        let ctx = RunContext {
            runtime: self,
            provider: self.provider(),
            options: self.options(),
            run_id: &run_id,
            preset: BOOTSTRAP_PRESET,
            coordinator: &coordinator,
            split: coordinator.split(self.context_tokens()),
            scope: &scope,
            memory: &memory,
            cancel,
        };
        let stages = [cold_start_stage(&self.options().limits)];
        let outcomes = run_stages(&ctx, &stages, &task).await;
        let findings = coordinator.with_active(&scope, |ac| ac.findings().to_vec());
        let outcomes = match outcomes {
            Ok(o) => o,
            Err(e) => {
                coordinator.close_scope(&scope, None)?;
                // What the analysis phase stored must not reach the other dimensions.
                lock(session).discard_unfinished(&brief.id);
                return Err(e);
            }
        };
        let now = u64::try_from(self.options().clock.now_ms()).unwrap_or(0);
        let run = dimension_run(brief, outcomes, &findings?);
        coordinator.close_scope(&scope, Some(session_report(&run, now)))?;
        let hits = lock(session).cache_stats().hits.saturating_sub(hits_before);
        Ok(DimensionRun {
            cache_hits: hits,
            ..run
        })
    }
}

fn dimension_run(
    brief: &DimensionBrief,
    outcomes: Vec<StageOutcome>,
    findings: &[Finding],
) -> DimensionRun {
    let mut run = DimensionRun {
        dimension: brief.id.clone(),
        candidates: Vec::new(),
        duplicates_refused: 0,
        usage: UsageReport::default(),
        cache_hits: 0,
        tool_calls: 0,
        analysis: String::new(),
        digest: None,
        findings: Vec::new(),
        stages: Vec::new(),
    };
    for o in outcomes {
        run.usage.absorb(&o.usage);
        run.tool_calls += o.tool_calls.len();
        for call in o.tool_calls.iter().filter(|c| is_submit(&c.name)) {
            let title = call.arguments.get("title").and_then(|t| t.as_str());
            match (call.is_ok(), title) {
                (true, Some(t)) => run.candidates.push(t.to_string()),
                (false, _) if call.status == "blocked" => run.duplicates_refused += 1,
                _ => {}
            }
        }
        run.digest = DimensionDigest::from_reply(&o.report.answer);
        run.analysis = match &run.digest {
            Some(d) if !d.summary.trim().is_empty() => d.summary.trim().to_string(),
            _ => o.report.answer.clone(),
        };
        run.stages.push(o.report);
    }
    let mut sorted = findings.to_vec();
    sorted.sort_by_key(|f| std::cmp::Reverse(f.importance));
    run.findings = session_findings(&sorted);
    run
}

/// Working-memory findings as session findings.
pub(crate) fn session_findings(findings: &[Finding]) -> Vec<SessionFinding> {
    findings
        .iter()
        .map(|f| SessionFinding {
            finding: f.finding.clone(),
            evidence: f.evidence.clone(),
            importance: f.importance,
        })
        .collect()
}

/// The files `findings` cite as evidence, sorted, once each.
pub(crate) fn referenced_files(findings: &[SessionFinding]) -> Vec<String> {
    let mut files: Vec<String> = findings
        .iter()
        .flat_map(|f| alembic_context::session::evidence_files(&f.evidence))
        .collect();
    files.sort();
    files.dedup();
    files
}

fn is_submit(tool: &str) -> bool {
    alembic_context::is_submit_tool(tool)
}

/// What the dimension leaves in the session for the dimensions after it.
fn session_report(run: &DimensionRun, now_ms: u64) -> DimensionReport {
    let files = referenced_files(&run.findings);
    DimensionReport {
        dim_id: run.dimension.clone(),
        completed_at_ms: now_ms.max(1),
        analysis_text: run.analysis.clone(),
        findings: run.findings.clone(),
        referenced_files: files,
        candidates: run
            .candidates
            .iter()
            .map(|t| CandidateSummary {
                title: t.clone(),
                ..CandidateSummary::default()
            })
            .collect(),
        // close_scope adds the distillate.
        distilled: None,
        digest: run.digest.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_carries_the_guide_but_not_the_reflections() {
        let brief = DimensionBrief {
            id: "networking".into(),
            label: "Networking".into(),
            guide: "How requests are made and retried.".into(),
            knowledge_types: vec!["code-pattern".into(), "best-practice".into()],
            tier: 2,
        };
        let text = dimension_prompt(&brief);
        assert!(text.starts_with("Bootstrap dimension \"Networking\" (networking), tier 2."));
        assert!(text.contains("## What to extract\nHow requests are made and retried."));
        assert!(text.contains("Knowledge types you may submit: code-pattern, best-practice."));
        assert!(!text.contains("tier 1"), "{text}");
    }
}
