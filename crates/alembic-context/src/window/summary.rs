//! L2 with an LLM summary. The window cannot call a model (compaction is synchronous and this
//! crate has no provider), so the caller asks [`ContextWindow::pending_l2`] which rounds the
//! next L2 would fold, summarises them with its model in one bounded call, and offers the
//! text with [`ContextWindow::offer_summary`]. When L2 then removes exactly those rounds, the
//! record gets one line with the summary instead of a rule-based line per round. Without an
//! offer (no provider, a failed or timed-out call, an open breaker) L2 stays rule-based.
//!
//! The invariants do not depend on the path: the summary is cut to
//! [`L2_SUMMARY_MAX_TOKENS`], it sits in the record (messages[0] untouched), rounds are
//! removed whole, and L3 still runs when L2 with the summary is not enough.

use std::fmt::Write as _;

use super::{ContextWindow, L1_KEEP_ROUNDS, L2_KEEP_ROUNDS};
use crate::message::{Message, Role};
use crate::text::cut_chars;

/// Longest LLM summary kept in the record (tokens).
pub const L2_SUMMARY_MAX_TOKENS: usize = 400;
/// Longest transcript sent for summarising (characters).
const TRANSCRIPT_MAX_CHARS: usize = 12_000;
/// Characters of one message in the transcript.
const MESSAGE_MAX_CHARS: usize = 600;

/// Old rounds the next L2 would fold, to be summarised by a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct L2Batch {
    /// Number of the first and last round (counted over the run's removed rounds, from 1);
    /// the key of the summary cache.
    pub first_round: usize,
    pub last_round: usize,
    /// The rounds as text (assistant turns, tool calls and cut results).
    pub transcript: String,
}

impl ContextWindow {
    /// The rounds L2 would remove if [`ContextWindow::compact`] ran now (after L1), or `None`
    /// when compaction would not reach L2 or would go to L3 (which keeps no summaries).
    pub fn pending_l2(&self) -> Option<L2Batch> {
        if self.usage_ratio() < 0.6 {
            return None;
        }
        let mut probe = self.clone();
        if (0.6..0.8).contains(&probe.usage_ratio()) {
            probe.truncate_old_results(L1_KEEP_ROUNDS);
        }
        if !(0.8..0.95).contains(&probe.usage_ratio()) {
            return None;
        }
        let starts = probe.unit_starts();
        let cut = *starts
            .len()
            .checked_sub(L2_KEEP_ROUNDS)
            .and_then(|i| starts.get(i))?;
        let removed = &probe.messages[probe.history_start()..cut];
        let rounds = removed.iter().filter(|m| m.role == Role::Assistant).count();
        if rounds == 0 {
            return None;
        }
        Some(L2Batch {
            first_round: self.removed_rounds + 1,
            last_round: self.removed_rounds + rounds,
            transcript: transcript(removed),
        })
    }

    /// Offers a summary of rounds `first..=last` for the next L2 (cut to
    /// [`L2_SUMMARY_MAX_TOKENS`]); an empty text is ignored.
    pub fn offer_summary(&mut self, first_round: usize, last_round: usize, text: &str) {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            return;
        }
        let mut cut = text.as_str();
        while self.meter.count(cut) > L2_SUMMARY_MAX_TOKENS {
            cut = cut_chars(cut, cut.chars().count() * 4 / 5);
        }
        self.offered_summaries
            .insert((first_round, last_round), cut.to_string());
    }

    /// Whether a summary for exactly these rounds was offered (the caller's cache check).
    pub fn has_summary_for(&self, first_round: usize, last_round: usize) -> bool {
        self.offered_summaries
            .contains_key(&(first_round, last_round))
    }

    /// After an L2 removal: replaces the rule-based lines of the rounds just removed by the
    /// offered summary of exactly those rounds, if there is one.
    pub(super) fn use_offered_summary(&mut self, rounds_before: usize) {
        let range = (rounds_before + 1, self.removed_rounds);
        let Some(text) = self.offered_summaries.remove(&range) else {
            return;
        };
        // The lines of the rounds just removed are the last ones (older lines overflowing
        // MAX_SUMMARY_LINES are folded from the front).
        let pushed = self.removed_rounds - rounds_before;
        self.summaries
            .truncate(self.summaries.len().saturating_sub(pushed));
        self.summaries.push(format!(
            "- rounds {}–{} (summary): {text}",
            range.0, range.1
        ));
        self.offered_summaries
            .retain(|(first, _), _| *first > range.1);
    }
}

/// The removed rounds as text for the summariser, bounded.
fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        let role = match m.role {
            Role::Assistant => "assistant",
            Role::Tool => "tool result",
            _ => "user",
        };
        let _ = write!(
            out,
            "{role}: {}",
            cut_chars(m.content.trim(), MESSAGE_MAX_CHARS)
        );
        for c in &m.tool_calls {
            let _ = write!(
                out,
                " [call {}({})]",
                c.name,
                cut_chars(&c.args.to_string(), 200)
            );
        }
        out.push('\n');
        if out.chars().count() > TRANSCRIPT_MAX_CHARS {
            return format!(
                "{}\n… [transcript cut]",
                cut_chars(&out, TRANSCRIPT_MAX_CHARS)
            );
        }
    }
    out
}
