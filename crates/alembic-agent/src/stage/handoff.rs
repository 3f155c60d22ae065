//! EXPLORE → PRODUCE in a Bootstrap stage: the seed's hand-over from analysis to production.
//!
//! When the tracker enters PRODUCE the stage switches the scope to the producer profile and
//! builds its static memory prompt again, so the session section gets the producer's share
//! (55 % instead of the analyst's 35 %). In a cold-start dimension (the coordinator has a
//! session and the run names its dimension) the findings so far are stored in the session as
//! the dimension's unfinished report, with the working memory's distillate, and the model gets
//! [`alembic_context::SessionStore::distilled_for_producer`] as its next message: "analysis
//! is over; produce candidates from these findings" (seed: NudgeGenerator's phase hand-over).

use alembic_base::lock;
use alembic_context::{BudgetProfile, DimensionReport, Phase, ProducerContext, Strategy};

use super::StageLoop;
use crate::bootstrap::{referenced_files, session_findings};
use crate::error::AgentError;
use crate::events::AgentEvent;

/// Findings and tool lines the hand-over lists at most.
const HANDOFF_FINDINGS: usize = 20;
const HANDOFF_TOOL_LINES: usize = 15;

impl StageLoop<'_> {
    /// Does the hand-over once, in the round the tracker is first in PRODUCE.
    pub(super) fn enter_produce_if_due(&mut self) -> Result<(), AgentError> {
        if self.produce_started || self.spec.strategy != Some(Strategy::Bootstrap) {
            return Ok(());
        }
        let in_produce = self
            .tracker
            .as_ref()
            .is_some_and(|t| lock(t).phase() == Phase::Produce);
        if !in_produce {
            return Ok(());
        }
        self.produce_started = true;
        let coordinator = self.ctx.coordinator;
        coordinator.set_profile(self.ctx.scope, BudgetProfile::Producer)?;
        if let (Some(session), Some(dim)) =
            (coordinator.session(), self.ctx.memory.dimension.as_deref())
        {
            let (findings, distilled) =
                self.with_active(|ac| (ac.findings().to_vec(), ac.distill()))?;
            let findings = session_findings(&findings);
            let report = DimensionReport {
                dim_id: dim.to_string(),
                referenced_files: referenced_files(&findings),
                findings,
                distilled: Some(distilled),
                ..DimensionReport::default()
            };
            let mut session = lock(session);
            session.store_report(report);
            if let Some(context) = session.distilled_for_producer(dim) {
                let text = producer_handoff(&context);
                self.window.push_user(text.clone());
                self.ctx.emit(AgentEvent::Nudge {
                    kind: "ProducerHandoff".into(),
                    text,
                });
            }
        }
        self.static_memory = self.ctx.memory.static_prompt(coordinator, self.ctx.scope)?;
        Ok(())
    }
}

/// The hand-over message: what the analysis phase found, what the tools showed, the files it
/// read and what other dimensions suggested for this one.
pub(crate) fn producer_handoff(context: &ProducerContext) -> String {
    let mut text = String::from(
        "## Hand-over from the analysis phase\nThe analysis phase is over. Produce knowledge candidates from these findings and submit each with the submit tool.",
    );
    let findings: Vec<String> = context
        .findings
        .iter()
        .take(HANDOFF_FINDINGS)
        .map(|f| {
            if f.evidence.is_empty() {
                format!("- [{}/10] {}", f.importance, f.finding)
            } else {
                format!("- [{}/10] {} ({})", f.importance, f.finding, f.evidence)
            }
        })
        .collect();
    push_section(&mut text, "### Findings", &findings);
    let tools: Vec<String> = context
        .tool_call_summary
        .iter()
        .take(HANDOFF_TOOL_LINES)
        .map(|l| format!("- {l}"))
        .collect();
    push_section(&mut text, "### What the tools showed", &tools);
    if !context.referenced_files.is_empty() {
        text.push_str("\n\n### Files cited\n");
        text.push_str(&context.referenced_files.join(", "));
    }
    let refs: Vec<String> = context
        .cross_refs
        .iter()
        .map(|c| format!("- [from {}] {}", c.from, c.detail))
        .collect();
    push_section(&mut text, "### Suggestions from other dimensions", &refs);
    text
}

fn push_section(text: &mut String, title: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    text.push_str("\n\n");
    text.push_str(title);
    for l in lines {
        text.push('\n');
        text.push_str(l);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alembic_context::{CrossReference, SessionFinding};

    #[test]
    fn the_handoff_lists_findings_tools_files_and_suggestions() {
        let context = ProducerContext {
            findings: vec![SessionFinding {
                finding: "HttpClient retries three times".into(),
                evidence: "src/net.rs:4".into(),
                importance: 8,
            }],
            key_findings: Vec::new(),
            tool_call_summary: vec!["read_project_file src/net.rs".into()],
            referenced_files: vec!["src/net.rs".into()],
            cross_refs: vec![CrossReference {
                from: "architecture".into(),
                to: "networking".into(),
                detail: "check the retry policy".into(),
            }],
        };
        let text = producer_handoff(&context);
        assert!(text.starts_with("## Hand-over from the analysis phase\n"));
        assert!(
            text.contains("### Findings\n- [8/10] HttpClient retries three times (src/net.rs:4)")
        );
        assert!(text.contains("### What the tools showed\n- read_project_file src/net.rs"));
        assert!(text.contains("### Files cited\nsrc/net.rs"));
        assert!(text.contains(
            "### Suggestions from other dimensions\n- [from architecture] check the retry policy"
        ));
    }
}
