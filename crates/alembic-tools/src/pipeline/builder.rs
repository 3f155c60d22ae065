//! Assembling a [`Pipeline`]: middlewares, safety check, audit sink, events.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{DEFAULT_TIMEOUT, Pipeline};
use crate::audit::AuditSink;
use crate::events::EventBus;
use crate::gate::{AllowlistGate, ReadOnlySafety, SafetyCheck, SafetyGate};
use crate::middleware::Middleware;
use crate::registry::ToolRegistry;

/// Builds a [`Pipeline`].
pub struct PipelineBuilder {
    registry: Arc<ToolRegistry>,
    project_root: PathBuf,
    middlewares: Vec<Arc<dyn Middleware>>,
    safety: Arc<dyn SafetyCheck>,
    audit: Option<Arc<dyn AuditSink>>,
    events: EventBus,
    timeout: Duration,
}

impl PipelineBuilder {
    pub fn safety(mut self, safety: Arc<dyn SafetyCheck>) -> Self {
        self.safety = safety;
        self
    }
    pub fn middleware(mut self, m: Arc<dyn Middleware>) -> Self {
        self.middlewares.push(m);
        self
    }
    pub fn audit(mut self, sink: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(sink);
        self
    }
    pub fn events(mut self, bus: EventBus) -> Self {
        self.events = bus;
        self
    }
    pub fn default_timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    pub fn build(self) -> Arc<Pipeline> {
        // The built-in gates come first within their slots.
        let mut middlewares: Vec<Arc<dyn Middleware>> = vec![
            Arc::new(AllowlistGate),
            Arc::new(SafetyGate::new(self.safety)),
        ];
        middlewares.extend(self.middlewares);
        // Stable sort: the order contract comes from the slot, ties keep insertion order.
        middlewares.sort_by_key(|m| m.slot());
        Arc::new(Pipeline {
            registry: self.registry,
            project_root: self.project_root,
            middlewares,
            audit: self.audit,
            events: self.events,
            default_timeout: self.timeout,
        })
    }
}

impl Pipeline {
    pub fn builder(
        registry: Arc<ToolRegistry>,
        project_root: impl Into<PathBuf>,
    ) -> PipelineBuilder {
        PipelineBuilder {
            registry,
            project_root: project_root.into(),
            middlewares: Vec::new(),
            safety: Arc::new(ReadOnlySafety),
            audit: None,
            events: EventBus::default(),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}
