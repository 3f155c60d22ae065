//! The LLM path of a bootstrap dimension: [`AgentRuntime::run_dimension`] runs an analyst
//! stage (explore, with the `bootstrap-analyst` tools) and then a producer stage (submit, with
//! the `bootstrap-producer` tools) — the EXPLORE and PRODUCE phases of the Bootstrap
//! strategy — inside one [`SessionStore`] that every dimension of the run shares:
//!
//! - the coordinator is built with the session, so the static prompt of a dimension carries
//!   the results of earlier dimensions and the tier reflections (`context_for_dimension`), and
//!   `get_previous_analysis` / `get_previous_evidence` read the run's real reports;
//! - the session's read-only tool cache serves a call another dimension already made;
//! - SubmitDedup refuses a title another dimension of the session already submitted;
//! - when the dimension ends, its report (analysis, findings with evidence, candidates,
//!   distilled working memory) is stored in the session for the dimensions after it.
//!
//! After each tier, [`finish_tier`] builds the [`TierReflection`]; pass the reflections so far
//! as `prior` to the next tier's dimensions and they appear in their task prompt.

use std::sync::{Arc, Mutex};

use alembic_base::lock;
use alembic_context::{
    ActiveContextOptions, BudgetProfile, CandidateSummary, DimensionReport, Finding, ScopeId,
    SessionFinding, SessionStore, StaticPromptRequest, TierReflection,
};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::error::AgentError;
use crate::preset::AgentPreset;
use crate::report::{StageReport, UsageReport};
use crate::runtime::{AgentRuntime, RunContext, run_stages};
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
    /// The analyst's report.
    pub analysis: String,
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

/// The task of a dimension: its label, guide and knowledge types, then what earlier tiers
/// found (their reflections), so a tier-2 dimension starts from tier 1's results.
pub fn dimension_prompt(brief: &DimensionBrief, prior: &[TierReflection]) -> String {
    let mut text = format!(
        "Bootstrap dimension \"{}\" ({}), tier {}.\n\n## What to extract\n{}\n\nKnowledge types you may submit: {}.",
        brief.label,
        brief.id,
        brief.tier,
        brief.guide.trim(),
        brief.knowledge_types.join(", ")
    );
    for r in prior {
        text.push_str(&format!(
            "\n\n## What tier {} found ({})",
            r.tier_index,
            r.completed_dimensions.join(", ")
        ));
        for (dim, f) in &r.top_findings {
            let evidence = if f.evidence.is_empty() {
                String::new()
            } else {
                format!(" ({})", f.evidence)
            };
            text.push_str(&format!("\n- [{dim}] {}{evidence}", f.finding));
        }
        for p in &r.cross_dimension_patterns {
            text.push_str(&format!("\n- shared: {p}"));
        }
        for s in &r.suggestions_for_next_tier {
            text.push_str(&format!("\n- suggestion: {s}"));
        }
    }
    text.push_str("\n\nDo not repeat what earlier dimensions submitted; build on it.");
    text
}

impl AgentRuntime {
    /// Runs dimension `brief` in `session` (see the module docs). `prior` are the reflections
    /// of the tiers already finished.
    pub async fn run_dimension(
        &self,
        session: &SharedSession,
        brief: &DimensionBrief,
        prior: &[TierReflection],
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
        let task = dimension_prompt(brief, prior);
        let keywords: Vec<&str> = brief.label.split_whitespace().collect();
        let static_memory = coordinator.static_prompt(
            &scope,
            &StaticPromptRequest {
                query: Some(&task),
                dimension: Some(&brief.id),
                focus_keywords: &keywords,
                conversation_summary: None,
            },
        )?;
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
            static_memory: &static_memory,
            cancel,
        };
        let stages = AgentPreset::Insight.stages(&self.options().limits);
        let outcomes = run_stages(&ctx, &stages, &task).await;
        let findings = coordinator.with_active(&scope, |ac| ac.findings().to_vec());
        let outcomes = match outcomes {
            Ok(o) => o,
            Err(e) => {
                coordinator.close_scope(&scope, None)?;
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
        if o.report.name == "analyst" {
            run.analysis = o.report.answer.clone();
        }
        run.stages.push(o.report);
    }
    let mut sorted = findings.to_vec();
    sorted.sort_by_key(|f| std::cmp::Reverse(f.importance));
    run.findings = sorted
        .into_iter()
        .map(|f| SessionFinding {
            finding: f.finding,
            evidence: f.evidence,
            importance: f.importance,
        })
        .collect();
    run
}

fn is_submit(tool: &str) -> bool {
    alembic_context::is_submit_tool(tool)
}

/// What the dimension leaves in the session for the dimensions after it.
fn session_report(run: &DimensionRun, now_ms: u64) -> DimensionReport {
    let mut files: Vec<String> = run
        .findings
        .iter()
        .flat_map(|f| alembic_context::session::evidence_files(&f.evidence))
        .collect();
    files.sort();
    files.dedup();
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
        distilled: None,
        digest: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_carries_the_guide_and_what_earlier_tiers_found() {
        let brief = DimensionBrief {
            id: "networking".into(),
            label: "Networking".into(),
            guide: "How requests are made and retried.".into(),
            knowledge_types: vec!["code-pattern".into(), "best-practice".into()],
            tier: 2,
        };
        let reflection = TierReflection {
            tier_index: 1,
            completed_dimensions: vec!["architecture".into()],
            top_findings: vec![(
                "architecture".into(),
                SessionFinding {
                    finding: "HttpClient is the only network entry".into(),
                    evidence: "src/net.rs:4".into(),
                    importance: 8,
                },
            )],
            cross_dimension_patterns: vec!["src/net.rs is cited by 2 dimensions".into()],
            suggestions_for_next_tier: vec!["check retries".into()],
        };
        let text = dimension_prompt(&brief, &[reflection]);
        assert!(text.starts_with("Bootstrap dimension \"Networking\" (networking), tier 2."));
        assert!(text.contains("Knowledge types you may submit: code-pattern, best-practice."));
        assert!(text.contains("## What tier 1 found (architecture)\n- [architecture] HttpClient is the only network entry (src/net.rs:4)"));
        assert!(text.contains(
            "- shared: src/net.rs is cited by 2 dimensions\n- suggestion: check retries"
        ));
    }
}
