//! Progress events of a run, for interfaces that show the run as it happens.

use std::sync::Arc;

use serde_json::Value;

/// Something that happened during a run.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    StageStarted {
        stage: String,
        tools: Vec<String>,
    },
    RoundStarted {
        stage: String,
        round: u32,
    },
    /// A piece of model text as it streams (only with streaming on).
    TextDelta {
        text: String,
    },
    Nudge {
        kind: String,
        text: String,
    },
    ToolCallStarted {
        name: String,
        arguments: Value,
    },
    ToolCallFinished {
        name: String,
        status: String,
    },
    /// The message window was compacted before a model call.
    ContextCompacted {
        /// `L1`, `L2` or `L3` (the highest level that ran).
        level: String,
        tokens_before: usize,
        tokens_after: usize,
        budget: usize,
        /// Tokens of the messages alone after compaction, and the model-aware cap on them.
        history_tokens_after: usize,
        history_cap: Option<usize>,
        /// L2 wrote the model's summary of the old rounds (not its rule-based lines).
        llm_summary: bool,
    },
    /// The model could not summarise old rounds for L2; the rule-based lines are used.
    L2SummaryFailed {
        first_round: usize,
        last_round: usize,
        error: String,
    },
    /// The model call failed once; the round is asked again.
    Retrying {
        error: String,
    },
}

/// Receives the events of a run. Called on the run's task: keep it quick.
pub type EventSink = Arc<dyn Fn(&AgentEvent) + Send + Sync>;
