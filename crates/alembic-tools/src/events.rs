//! Progress and lifecycle events of tool calls, for UIs, MCP progress notifications and logs.

use serde::Serialize;
use tokio::sync::broadcast;

use crate::call::OutcomeStatus;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolEventKind {
    Started,
    Progress {
        message: String,
        fraction: Option<f64>,
    },
    Finished {
        status: OutcomeStatus,
        duration_ms: f64,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolEvent {
    pub call_id: String,
    pub tool: String,
    #[serde(flatten)]
    pub kind: ToolEventKind,
}

impl ToolEvent {
    pub fn new(call_id: &str, tool: &str, kind: ToolEventKind) -> Self {
        ToolEvent {
            call_id: call_id.to_string(),
            tool: tool.to_string(),
            kind,
        }
    }
}

/// A broadcast channel; sending with no subscribers costs almost nothing and never blocks.
#[derive(Debug, Clone)]
pub struct EventBus {
    tx: broadcast::Sender<ToolEvent>,
}

impl Default for EventBus {
    fn default() -> Self {
        let (tx, _) = broadcast::channel(1024);
        EventBus { tx }
    }
}

impl EventBus {
    pub fn subscribe(&self) -> broadcast::Receiver<ToolEvent> {
        self.tx.subscribe()
    }

    pub fn send(&self, event: ToolEvent) {
        self.send_with(|| event);
    }

    /// Builds the event only when somebody listens: the pipeline emits two per call, and
    /// their string copies are measurable in the per-call overhead.
    pub fn send_with(&self, event: impl FnOnce() -> ToolEvent) {
        if self.tx.receiver_count() > 0 {
            // An error only means nobody listens any more.
            let _ = self.tx.send(event());
        }
    }
}
