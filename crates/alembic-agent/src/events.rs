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
    /// The model call failed once; the round is asked again.
    Retrying {
        error: String,
    },
}

/// Receives the events of a run. Called on the run's task: keep it quick.
pub type EventSink = Arc<dyn Fn(&AgentEvent) + Send + Sync>;
