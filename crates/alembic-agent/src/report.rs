//! What a run reports: the answer, rounds, tool calls, token usage, and how it ended.

use serde::Serialize;
use serde_json::Value;

/// Characters of a memory shown in [`MemoryReport::saved_line`].
const SAVED_LINE_CHARS: usize = 100;

/// Why a run (or stage) stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StageEnd {
    /// The model gave its answer in text.
    Answered,
    /// The rounds ran out; the answer is a summary asked for without tools.
    ForcedSummary,
}

/// One tool call the model made, as the pipeline answered it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallRecord {
    pub stage: String,
    pub round: u32,
    pub name: String,
    pub arguments: Value,
    /// The pipeline's status (`ok`, `unknown_tool`, `blocked`, …), or `malformed_arguments`
    /// and `over_turn_limit` for calls the loop answered itself.
    pub status: String,
    /// Did-you-mean names for an unknown tool.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<String>,
}

impl ToolCallRecord {
    pub fn is_ok(&self) -> bool {
        self.status == "ok"
    }
}

/// Tokens the provider counted, summed over every request of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct UsageReport {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub requests: u32,
    /// Of `requests`, the calls that summarised old rounds for the context window's L2.
    pub summary_requests: u32,
}

impl UsageReport {
    pub fn add(&mut self, usage: alembic_llm::Usage) {
        self.input_tokens += usage.input_tokens;
        self.output_tokens += usage.output_tokens;
        self.requests += 1;
    }

    /// Adds another stage's (or run's) usage.
    pub fn absorb(&mut self, other: &UsageReport) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.requests += other.requests;
        self.summary_requests += other.summary_requests;
    }

    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// One stage of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageReport {
    pub name: String,
    pub rounds: u32,
    pub end: StageEnd,
    pub answer: String,
}

/// How the model's memory extraction went (see `remember.rs`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum Extraction {
    /// No long-term memory: nothing was extracted or kept.
    #[default]
    NotRun,
    /// `[memory] extract_from_conversations = false`: nothing was kept, no call was made.
    Off,
    /// The model's answer was valid; `memories` of the candidates came from it.
    Used { memories: usize },
    /// The call failed or its answer was not valid; the rule-based candidates were used.
    Failed { error: String },
}

/// A memory consolidation saved (added, updated, merged or replaced).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SavedMemory {
    pub action: alembic_memory::Action,
    pub kind: alembic_memory::MemoryType,
    pub content: String,
}

/// What long-term memory kept from a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemoryReport {
    /// The candidates offered to the consolidator.
    pub candidates: Vec<String>,
    pub added: usize,
    pub updated: usize,
    pub merged: usize,
    pub replaced: usize,
    pub skipped: usize,
    /// What was saved, in the order of the candidates.
    pub saved: Vec<SavedMemory>,
    pub extraction: Extraction,
    /// Tokens of the extraction call (not in the run's usage).
    pub extraction_usage: UsageReport,
    /// Why nothing could be written, when the store failed (the answer is still returned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The result of [`crate::AgentRuntime::run`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    pub run_id: String,
    pub preset: String,
    pub answer: String,
    /// Model rounds over all stages (the forced summary, when there is one, not included).
    pub rounds: u32,
    pub tool_calls: Vec<ToolCallRecord>,
    pub usage: UsageReport,
    pub stages: Vec<StageReport>,
    pub memory: MemoryReport,
}

impl MemoryReport {
    /// Memories added, updated, merged or replaced.
    pub fn kept(&self) -> usize {
        self.added + self.updated + self.merged + self.replaced
    }

    /// The line shown after an answer when something was kept, e.g.
    /// `long-term memory: 2 saved (added preference "…", updated fact "…")`.
    pub fn saved_line(&self) -> Option<String> {
        if self.saved.is_empty() {
            return None;
        }
        let items: Vec<String> = self
            .saved
            .iter()
            .map(|m| {
                let action = serde_json::to_value(m.action).unwrap_or_default();
                let mut short: String = m.content.chars().take(SAVED_LINE_CHARS).collect();
                if m.content.chars().count() > SAVED_LINE_CHARS {
                    short.push('…');
                }
                format!("{} {} \"{short}\"", action.as_str().unwrap_or(""), m.kind)
            })
            .collect();
        Some(format!(
            "long-term memory: {} saved ({})",
            self.saved.len(),
            items.join(", ")
        ))
    }
}

impl RunReport {
    /// Names of the tools called, in order.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tool_calls.iter().map(|c| c.name.as_str()).collect()
    }

    /// The short trace printed after an answer.
    pub fn trace_line(&self) -> String {
        let tools = if self.tool_calls.is_empty() {
            "none".to_string()
        } else {
            self.tool_names().join(", ")
        };
        format!(
            "rounds: {} · tools: {} · tokens: {} in / {} out",
            self.rounds, tools, self.usage.input_tokens, self.usage.output_tokens
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alembic_memory::{Action, MemoryType};
    use pretty_assertions::assert_eq;

    #[test]
    fn the_saved_line_names_each_memory_and_cuts_long_ones() {
        let saved = |action, kind, content: &str| SavedMemory {
            action,
            kind,
            content: content.to_string(),
        };
        let report = MemoryReport {
            saved: vec![
                saved(Action::Added, MemoryType::Preference, "Answers in German."),
                saved(Action::Updated, MemoryType::Fact, &"x".repeat(120)),
            ],
            ..MemoryReport::default()
        };
        assert_eq!(
            report.saved_line().unwrap(),
            format!(
                "long-term memory: 2 saved (added preference \"Answers in German.\", updated fact \"{}…\")",
                "x".repeat(100)
            )
        );
        assert_eq!(MemoryReport::default().saved_line(), None);
    }
}
