//! ContextWindow: the message history of one run, with three levels of compaction.
//!
//! Invariants, enforced here:
//! 1. `messages[0]` is the task prompt and never changes (history belongs in the static
//!    memory prompt, not before the task).
//! 2. An assistant message with tool calls and the results that follow it form one unit:
//!    compaction removes whole rounds or shortens contents, it never splits a round.
//! 3. After [`ContextWindow::compact`], usage is within the budget, and the messages within the
//!    history cap, whenever the system prompt, tool schemas and the task prompt fit in them.
//!
//! Usage counts the system prompt and the tool schemas too (the reference counted only the
//! messages, although the system prompt grows every round). Two limits apply: the budget (what
//! the model's context leaves for the whole request) and the history cap, the seed's
//! model-aware cap on the messages alone ([`ContextWindow::with_history_cap`],
//! [`model_budget::budget_for_context`]). The usage ratio is the larger of the two ratios, so on
//! a 1M-token model compaction starts once the history passes 60 % of its cap, not of 1M.
//!
//! Levels (by usage ratio before compaction; a level that does not bring usage below the next
//! threshold escalates to the next one):
//! - **L1** (60–80 %): tool results older than the last 4 rounds are truncated.
//! - **L2** (80–95 %): rounds older than the last 2 become one-line summaries in a record
//!   message at index 1 — or one LLM summary of them, when the caller offered one for exactly
//!   those rounds ([`ContextWindow::pending_l2`], [`ContextWindow::offer_summary`]).
//! - **L3** (> 95 %): only the task prompt, the record of submissions and the last round stay.

mod history_cap;
pub mod model_budget;
mod summary;

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::message::{Message, Role};
use crate::observation::{is_submit_tool, str_field};
use crate::text::{TokenMeter, cut_chars, first_line};
pub use model_budget::{RunKind, budget_for_context, context_size, token_budget};
pub use summary::{L2_SUMMARY_MAX_TOKENS, L2Batch};

/// Rounds kept complete at L1.
const L1_KEEP_ROUNDS: usize = 4;
/// Rounds kept complete at L2.
const L2_KEEP_ROUNDS: usize = 2;
/// Tool results longer than this are truncated at L1 (characters).
const L1_TRUNCATE_ABOVE: usize = 2000;
/// What an L1-truncated tool result keeps (characters).
const L1_KEEP_CHARS: usize = 500;
/// One-line round summaries kept in the record before the oldest are folded into a count.
const MAX_SUMMARY_LINES: usize = 40;
/// Fixed cost of a message besides its content (role, separators), in tokens.
const MESSAGE_OVERHEAD: usize = 4;
/// Marker that starts the record message at index 1.
const RECORD_MARKER: &str = "[context compacted]";

/// Which compaction level ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CompactionLevel {
    None,
    L1,
    L2,
    L3,
}

/// What one call to [`ContextWindow::compact`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionReport {
    pub level: CompactionLevel,
    pub truncated: usize,
    pub removed_messages: usize,
    pub tokens_before: usize,
    pub tokens_after: usize,
    /// Tokens of the messages alone (what the history cap limits), after compaction.
    pub history_tokens_after: usize,
    /// True when even the minimal history does not fit (prompt or system prompt too large).
    pub over_budget: bool,
}

/// The message history of a run. See the module docs.
#[derive(Debug, Clone)]
pub struct ContextWindow {
    budget: usize,
    /// Tokens the messages alone may take (see `history_cap.rs`); `None`: only `budget`.
    history_cap: Option<usize>,
    meter: TokenMeter,
    system_prompt: String,
    system_tokens: usize,
    /// Token counts of the system prompt's sections ("\n\n"-separated) from the last call:
    /// most sections (instructions, static memory) do not change between rounds.
    section_costs: HashMap<String, usize>,
    tool_schema_tokens: usize,
    messages: Vec<Message>,
    /// Token cost of each message, kept in step with `messages` (counting is the expensive
    /// part with an exact tokenizer, so each message is counted once).
    costs: Vec<usize>,
    has_record: bool,
    summaries: Vec<String>,
    folded_summaries: usize,
    submitted: Vec<String>,
    removed_rounds: usize,
    failed_calls: HashSet<String>,
    /// LLM summaries offered for round ranges (first, last), used by the next L2 that removes
    /// exactly those rounds (see `summary.rs`).
    offered_summaries: HashMap<(usize, usize), String>,
}

impl ContextWindow {
    /// A window of `budget` tokens whose first message is the task `prompt`.
    pub fn new(prompt: impl Into<String>, budget: usize, meter: TokenMeter) -> ContextWindow {
        let first = Message::user(prompt);
        let first_cost = message_tokens(&meter, &first);
        ContextWindow {
            budget,
            history_cap: None,
            meter,
            system_prompt: String::new(),
            system_tokens: 0,
            section_costs: HashMap::new(),
            tool_schema_tokens: 0,
            messages: vec![first],
            costs: vec![first_cost],
            has_record: false,
            summaries: Vec::new(),
            folded_summaries: 0,
            submitted: Vec::new(),
            removed_rounds: 0,
            failed_calls: HashSet::new(),
            offered_summaries: HashMap::new(),
        }
    }

    /// A window sized for `model` alone: its whole context as the budget, the model table's
    /// cap on the history, exact token counts when the model's tokenizer is known. (The agent
    /// sizes the budget from its context split instead, with the same cap.)
    pub fn for_model(prompt: impl Into<String>, model: &str, kind: RunKind) -> ContextWindow {
        Self::new(prompt, context_size(model), TokenMeter::for_model(model))
            .with_history_cap(token_budget(model, kind))
    }

    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Replaces the system prompt (it changes every round: phase context, dynamic memory).
    /// Separate its parts with a blank line: unchanged parts are not counted again.
    pub fn set_system_prompt(&mut self, text: impl Into<String>) {
        self.system_prompt = text.into();
        let mut costs = HashMap::new();
        let mut total = 0;
        for section in self.system_prompt.split("\n\n") {
            let cost = match self.section_costs.remove(section) {
                Some(c) => c,
                None => self.meter.count(section),
            };
            total += cost + 1;
            costs.insert(section.to_string(), cost);
        }
        // Sections are counted apart, so the total may differ from a count of the whole text
        // by about a token per section boundary; the separator is counted as one token.
        self.system_tokens = total.saturating_sub(1);
        self.section_costs = costs;
    }

    /// Tokens taken by the tool schemas sent with every call.
    pub fn set_tool_schema_tokens(&mut self, tokens: usize) {
        self.tool_schema_tokens = tokens;
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The system prompt followed by the history, ready for a provider.
    pub fn render(&self) -> Vec<Message> {
        let mut out = Vec::with_capacity(self.messages.len() + 1);
        if !self.system_prompt.is_empty() {
            out.push(Message::system(self.system_prompt.clone()));
        }
        out.extend(self.messages.iter().cloned());
        out
    }

    /// Titles of submissions removed from the history so far.
    pub fn submitted_titles(&self) -> &[String] {
        &self.submitted
    }

    /// Appends an assistant turn (with or without tool calls).
    pub fn push_assistant(&mut self, message: Message) {
        self.push(message);
    }

    fn push(&mut self, message: Message) {
        self.costs.push(message_tokens(&self.meter, &message));
        self.messages.push(message);
    }

    fn insert(&mut self, index: usize, message: Message) {
        self.costs
            .insert(index, message_tokens(&self.meter, &message));
        self.messages.insert(index, message);
    }

    /// Replaces the content of message `index` (and its cost).
    fn set_content(&mut self, index: usize, content: String) {
        self.messages[index].content = content;
        self.costs[index] = message_tokens(&self.meter, &self.messages[index]);
    }

    /// Removes messages `from..to` and their costs.
    fn drain(&mut self, from: usize, to: usize) -> Vec<Message> {
        self.costs.drain(from..to);
        self.messages.drain(from..to).collect()
    }

    /// Appends a user message (a controller nudge or a follow-up question).
    pub fn push_user(&mut self, text: impl Into<String>) {
        self.push(Message::user(text));
    }

    /// Appends the result of `call_id`, cut to the quota of the current usage (see
    /// [`ContextWindow::tool_result_quota`]). `failed` marks errors and refusals, so that a
    /// refused submit is not recorded as a submission.
    pub fn push_tool_result(&mut self, call_id: &str, content: &str, failed: bool) {
        let quota = self.tool_result_quota();
        let text = truncate_at_line(content, quota, "… [truncated]");
        self.push_tool_result_exact(call_id, &text, failed);
    }

    /// Appends the result of `call_id` as given (the caller already limited its size).
    pub fn push_tool_result_exact(&mut self, call_id: &str, content: &str, failed: bool) {
        if failed {
            self.failed_calls.insert(call_id.to_string());
        }
        self.push(Message::tool_result(call_id, content));
    }

    /// Characters a new tool result may take: less as the window fills up.
    pub fn tool_result_quota(&self) -> usize {
        match self.usage_ratio() {
            r if r < 0.4 => 6000,
            r if r < 0.6 => 3000,
            r if r < 0.8 => 1500,
            _ => 800,
        }
    }

    /// Tokens of the system prompt, tool schemas and messages.
    pub fn usage_tokens(&self) -> usize {
        self.system_tokens + self.tool_schema_tokens + self.costs.iter().sum::<usize>()
    }

    /// Usage counted from scratch (checks that the cached costs stay in step).
    #[cfg(test)]
    pub(crate) fn recounted_tokens(&self) -> usize {
        let messages: usize = self
            .messages
            .iter()
            .map(|m| message_tokens(&self.meter, m))
            .sum();
        self.system_tokens + self.tool_schema_tokens + messages
    }

    /// Usage as a fraction of the budget, or the history as a fraction of its cap, whichever
    /// is larger: compaction levels and result quotas follow the tighter limit.
    pub fn usage_ratio(&self) -> f64 {
        let total = ratio(self.usage_tokens(), self.budget);
        match self.history_cap {
            Some(cap) => total.max(ratio(self.history_tokens(), cap)),
            None => total,
        }
    }

    /// Index of the first message after the prompt and the record.
    fn history_start(&self) -> usize {
        1 + usize::from(self.has_record)
    }

    /// Start indices of the units after the prompt and record: a leading run of non-assistant
    /// messages is one unit, then every assistant message starts a round that runs to the
    /// next assistant message.
    fn unit_starts(&self) -> Vec<usize> {
        let start = self.history_start();
        let mut starts = Vec::new();
        for (i, m) in self.messages.iter().enumerate().skip(start) {
            if i == start || m.role == Role::Assistant {
                starts.push(i);
            }
        }
        starts
    }

    /// Compacts the history when usage calls for it. Runs before every LLM call.
    pub fn compact(&mut self) -> CompactionReport {
        let tokens_before = self.usage_tokens();
        let mut report = CompactionReport {
            level: CompactionLevel::None,
            truncated: 0,
            removed_messages: 0,
            tokens_before,
            tokens_after: tokens_before,
            history_tokens_after: self.history_tokens(),
            over_budget: false,
        };
        let ratio = self.usage_ratio();
        if (0.6..0.8).contains(&ratio) {
            report.level = CompactionLevel::L1;
            report.truncated += self.truncate_old_results(L1_KEEP_ROUNDS);
        }
        if (0.8..0.95).contains(&self.usage_ratio()) {
            report.level = CompactionLevel::L2;
            report.removed_messages += self.distill_old_rounds(L2_KEEP_ROUNDS, true);
        }
        if self.usage_ratio() >= 0.95 {
            report.level = CompactionLevel::L3;
            report.removed_messages += self.distill_old_rounds(1, false);
            if self.over_limit() {
                report.truncated += self.shrink_last_round();
            }
        }
        report.tokens_after = self.usage_tokens();
        report.history_tokens_after = self.history_tokens();
        report.over_budget = self.over_limit();
        report
    }

    /// L1: truncates long tool results outside the last `keep` units.
    fn truncate_old_results(&mut self, keep: usize) -> usize {
        let starts = self.unit_starts();
        let Some(&cut) = starts.len().checked_sub(keep).and_then(|i| starts.get(i)) else {
            return 0;
        };
        let mut truncated = 0;
        for i in 1..cut {
            let m = &self.messages[i];
            let chars = m.content.chars().count();
            if m.role == Role::Tool && chars > L1_TRUNCATE_ABOVE {
                let kept = truncate_at_line(&m.content, L1_KEEP_CHARS, "");
                self.set_content(i, format!("{kept}\n… [truncated from {chars} chars]"));
                truncated += 1;
            }
        }
        truncated
    }

    /// L2/L3: removes every unit but the last `keep`, recording submissions and (with
    /// `summarise`) one line per removed round in the record message at index 1.
    fn distill_old_rounds(&mut self, keep: usize, summarise: bool) -> usize {
        let starts = self.unit_starts();
        let Some(&cut) = starts.len().checked_sub(keep).and_then(|i| starts.get(i)) else {
            return 0;
        };
        let from = self.history_start();
        if cut <= from {
            if !summarise {
                self.drop_summaries();
            }
            return 0;
        }
        let removed = self.drain(from, cut);
        let rounds_before = self.removed_rounds;
        self.absorb_removed(&removed, summarise);
        if summarise {
            self.use_offered_summary(rounds_before);
        }
        if !summarise {
            self.drop_summaries();
        }
        self.write_record();
        removed.len()
    }

    fn drop_summaries(&mut self) {
        self.folded_summaries += self.summaries.len();
        self.summaries.clear();
        if self.has_record {
            self.write_record();
        }
    }

    /// Harvests submissions and one-line summaries from removed messages.
    fn absorb_removed(&mut self, removed: &[Message], summarise: bool) {
        let mut round: Option<Vec<String>> = None;
        for m in removed {
            if m.role == Role::Assistant {
                if let Some(parts) = round.take() {
                    self.push_summary(parts, summarise);
                }
                round = Some(Vec::new());
            }
            self.harvest_submits(m, removed);
            if m.role == Role::Tool
                && let Some(parts) = round.as_mut()
            {
                parts.push(format!(
                    "{} → {}",
                    call_label(removed, m),
                    first_line(&m.content, 60)
                ));
            }
        }
        if let Some(parts) = round {
            self.push_summary(parts, summarise);
        }
    }

    fn push_summary(&mut self, parts: Vec<String>, summarise: bool) {
        self.removed_rounds += 1;
        if !summarise {
            self.folded_summaries += 1;
            return;
        }
        let body = if parts.is_empty() {
            "text only".to_string()
        } else {
            parts.join("; ")
        };
        self.summaries
            .push(format!("- round {}: {body}", self.removed_rounds));
        if self.summaries.len() > MAX_SUMMARY_LINES {
            self.summaries.remove(0);
            self.folded_summaries += 1;
        }
    }

    fn harvest_submits(&mut self, m: &Message, removed: &[Message]) {
        for call in m.tool_calls.iter().filter(|c| is_submit_tool(&c.name)) {
            if self.failed_calls.contains(&call.id)
                || !has_result(removed, &self.messages, &call.id)
            {
                continue;
            }
            let title = str_field(&call.args, &["title", "category"]).unwrap_or("untitled");
            if !self.submitted.iter().any(|t| t == title) {
                self.submitted.push(title.to_string());
            }
        }
    }

    /// Writes (or rewrites) the record message at index 1.
    fn write_record(&mut self) {
        let mut text = format!(
            "{RECORD_MARKER} {} earlier tool rounds were removed from the history.",
            self.removed_rounds
        );
        if !self.submitted.is_empty() {
            text.push_str(&format!(
                "\nSubmitted so far: {}",
                self.submitted.join(", ")
            ));
        }
        if !self.summaries.is_empty() {
            text.push_str("\nEarlier rounds:");
            if self.folded_summaries > 0 {
                text.push_str(&format!("\n- …{} rounds not listed", self.folded_summaries));
            }
            for s in &self.summaries {
                text.push('\n');
                text.push_str(s);
            }
        }
        if self.has_record {
            self.set_content(1, text);
        } else {
            self.insert(1, Message::user(text));
            self.has_record = true;
        }
    }

    /// Last resort after L3: shortens the contents of the remaining round, largest first,
    /// until the window fits (or nothing is left to shorten).
    fn shrink_last_round(&mut self) -> usize {
        let mut shrunk = 0;
        let from = self.history_start();
        while self.over_limit() {
            let largest = (from..self.messages.len())
                .filter(|&i| self.messages[i].content.chars().count() > 40)
                .max_by_key(|&i| self.messages[i].content.len());
            let Some(i) = largest else { break };
            let chars = self.messages[i].content.chars().count();
            let kept = cut_chars(&self.messages[i].content, chars / 2).to_string();
            self.set_content(i, format!("{kept}… [truncated]"));
            shrunk += 1;
        }
        if self.over_limit() && self.has_record {
            // The record is the only other thing that can give: keep the submissions only.
            self.summaries.clear();
            self.write_record();
        }
        shrunk
    }

    /// Keeps only the task prompt (after repeated model errors); submissions are kept.
    pub fn reset_to_prompt_only(&mut self) {
        let end = self.messages.len();
        let removed = self.drain(1, end);
        self.has_record = false;
        self.absorb_removed(&removed, false);
        self.summaries.clear();
        if !self.submitted.is_empty() {
            self.write_record();
        }
    }

    /// Starts a new pipeline stage with `prompt` as messages[0]; submissions are kept.
    pub fn reset_for_new_stage(&mut self, prompt: impl Into<String>) {
        let old: Vec<Message> = std::mem::take(&mut self.messages);
        self.costs.clear();
        self.absorb_removed(&old, false);
        self.push(Message::user(prompt));
        self.has_record = false;
        self.summaries.clear();
        if !self.submitted.is_empty() {
            self.write_record();
        }
    }
}

/// `used / limit`, infinite for a zero limit.
fn ratio(used: usize, limit: usize) -> f64 {
    if limit == 0 {
        return f64::INFINITY;
    }
    used as f64 / limit as f64
}

/// Token cost of one message: content, tool calls as JSON, and a fixed overhead.
fn message_tokens(meter: &TokenMeter, m: &Message) -> usize {
    let calls = if m.tool_calls.is_empty() {
        0
    } else {
        serde_json::to_string(&m.tool_calls).map_or(0, |s| meter.count(&s))
    };
    meter.count(&m.content) + calls + MESSAGE_OVERHEAD
}

/// `tool(first argument)` of the call whose result `result` is, from the calls in `messages`.
fn call_label(messages: &[Message], result: &Message) -> String {
    let id = result.tool_call_id.as_deref().unwrap_or("");
    let Some(call) = messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .find(|c| c.id == id)
    else {
        return "tool".to_string();
    };
    let arg = call
        .args
        .as_object()
        .and_then(|o| o.values().find_map(|v| v.as_str()))
        .map(|a| first_line(a, 40));
    match arg {
        Some(a) => format!("{}({a})", call.name),
        None => call.name.clone(),
    }
}

fn has_result(removed: &[Message], kept: &[Message], call_id: &str) -> bool {
    removed
        .iter()
        .chain(kept.iter())
        .any(|m| m.tool_call_id.as_deref() == Some(call_id))
}

/// Cuts `text` to at most `max_chars` characters at a line boundary when there is one in the
/// second half, appending `marker` when anything was removed.
fn truncate_at_line(text: &str, max_chars: usize, marker: &str) -> String {
    let cut = cut_chars(text, max_chars);
    if cut.len() == text.len() {
        return text.to_string();
    }
    let at_line = match cut.rfind('\n') {
        Some(i) if cut[..i].chars().count() >= max_chars / 2 => &cut[..i],
        _ => cut,
    };
    format!("{at_line}{marker}")
}

#[cfg(test)]
mod tests;
