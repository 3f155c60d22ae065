//! Compaction before a model call, with L2 distilled by the model.
//!
//! The window cannot call a model (compaction is synchronous), so before it compacts the stage
//! asks which old rounds the next L2 would fold (`ContextWindow::pending_l2`) and, once per
//! round range, summarises them in one bounded call: no tools, at most
//! [`SUMMARY_MAX_OUTPUT_TOKENS`] output tokens, [`crate::AgentOptions::side_call_timeout`],
//! the run's cancellation. The text is offered to the window
//! (`ContextWindow::offer_summary`), which writes it as one record line when L2 removes
//! exactly those rounds. A failed call (an error, the timeout, or the provider's open circuit
//! breaker, which refuses at once without calling the vendor) leaves the rule-based lines, and
//! the same range is never asked for twice.
//!
//! The window's invariants do not depend on the path: it cuts the summary to 400 tokens, keeps
//! messages[0], removes whole rounds, and escalates to L3 when L2 is not enough. The summary
//! call's tokens count in the stage's usage (`summary_requests` says how many there were).

use std::collections::HashSet;

use alembic_context::{CompactionLevel, L2_SUMMARY_MAX_TOKENS, L2Batch};
use alembic_llm::{ChatRequest, LlmError, Message, ToolChoice};

use super::StageLoop;
use crate::events::AgentEvent;

/// Output tokens the summary call may use (the window keeps at most this much of it).
pub(crate) const SUMMARY_MAX_OUTPUT_TOKENS: u32 = L2_SUMMARY_MAX_TOKENS as u32;

/// The summary call's instructions; its system prompt starts with this line.
pub const L2_SUMMARY_SYSTEM_PROMPT: &str = "You condense the older rounds of an AI agent's session on a software project so that it can continue with less context.\nSummarise the transcript in at most 150 words of plain text: what was looked at (files, symbols, searches), what was found (with file paths and line numbers), and what turned out to be irrelevant. No preamble, no headings, no advice.";

/// The round ranges the stage already asked the model about (answered or not).
#[derive(Debug, Default)]
pub(crate) struct L2Cache {
    asked: HashSet<(usize, usize)>,
}

impl StageLoop<'_> {
    /// Compacts the window; first offers a model summary of the rounds L2 would fold.
    pub(super) async fn compact(&mut self) {
        let offered = match self.window.pending_l2() {
            Some(batch) if self.ctx.options.l2_summary => self.summarise(batch).await,
            _ => None,
        };
        let report = self.window.compact();
        if report.level == CompactionLevel::None {
            return;
        }
        let llm_summary = report.level >= CompactionLevel::L2
            && offered.is_some_and(|(first, last)| !self.window.has_summary_for(first, last));
        tracing::debug!(?report, llm_summary, "context compacted");
        self.ctx.emit(AgentEvent::ContextCompacted {
            level: format!("{:?}", report.level),
            tokens_before: report.tokens_before,
            tokens_after: report.tokens_after,
            budget: self.window.budget(),
            history_tokens_after: report.history_tokens_after,
            history_cap: self.window.history_cap(),
            llm_summary,
        });
    }

    /// Asks the model to summarise `batch` unless this range was asked before; returns the
    /// range when a summary is on offer for it.
    async fn summarise(&mut self, batch: L2Batch) -> Option<(usize, usize)> {
        let range = (batch.first_round, batch.last_round);
        if self.window.has_summary_for(range.0, range.1) {
            return Some(range);
        }
        if !self.l2_cache.asked.insert(range) {
            return None;
        }
        match self.summary_call(&batch).await {
            Ok(text) => {
                self.window.offer_summary(range.0, range.1, &text);
                Some(range).filter(|r| self.window.has_summary_for(r.0, r.1))
            }
            Err(error) => {
                tracing::info!(
                    "L2 summary of rounds {}–{} failed: {error}",
                    range.0,
                    range.1
                );
                self.ctx.emit(AgentEvent::L2SummaryFailed {
                    first_round: range.0,
                    last_round: range.1,
                    error,
                });
                None
            }
        }
    }

    /// One bounded call; the text of the answer, or why there is none.
    async fn summary_call(&mut self, batch: &L2Batch) -> Result<String, String> {
        let prompt = format!(
            "Transcript of rounds {} to {}:\n\n{}",
            batch.first_round, batch.last_round, batch.transcript
        );
        let mut request = ChatRequest::new(self.ctx.provider.model(), vec![Message::user(prompt)]);
        request.system = L2_SUMMARY_SYSTEM_PROMPT.to_string();
        request.tool_choice = ToolChoice::None;
        request.max_tokens = Some(SUMMARY_MAX_OUTPUT_TOKENS);
        request.temperature = Some(0.2);
        let limit = self.ctx.options.side_call_timeout;
        let call = self.ctx.provider.chat(&request, self.ctx.cancel);
        let reply = match tokio::time::timeout(limit, call).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(e)) => return Err(describe(&e)),
            Err(_) => return Err(format!("no answer within {} s", limit.as_secs_f64())),
        };
        self.usage.add(reply.usage);
        self.usage.summary_requests += 1;
        let text = reply.text.trim();
        if text.is_empty() {
            return Err("the model answered with no text".into());
        }
        Ok(text.to_string())
    }
}

fn describe(error: &LlmError) -> String {
    match error {
        LlmError::CircuitOpen { .. } => format!("circuit breaker open: {error}"),
        other => other.to_string(),
    }
}
