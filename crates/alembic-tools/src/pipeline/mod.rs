//! The ToolExecutionPipeline: every tool call, from any caller, passes through here.
//!
//! Order contract (fixed by [`MiddlewareSlot`], whatever order middlewares are added in):
//!
//! 0. bound nesting: a nested call too deep or past its top-level call's budget is refused
//!    (`nesting.depth`, `nesting.budget`; see `nesting.rs`)
//! 1. resolve the name (unknown → refused with "did you mean")
//! 2. normalise + validate arguments (refused with the argument path on error)
//! 3. `before` hooks: AllowlistGate → SafetyGate → CacheCheck → SubmitDedup (any may block;
//!    a hook that errors blocks; CacheCheck may answer, which skips only the handler)
//! 4. the handler, with a timeout and a cancellation token; errors and panics become outcomes
//! 5. `after` hooks: ObservationRecord → TrackerSignal → TraceRecord (they also see blocked calls)
//! 6. the audit record and the finished event, for every attempted call
//!
//! The parts: [`crate::call`] holds the values of a call, [`crate::middleware`] the stage
//! trait and its slots, [`crate::gate`] the built-in gates; here are the [`Pipeline`] itself,
//! its builder (`builder.rs`) and the execution of one call (`execute.rs`).

mod builder;
mod execute;
pub mod nesting;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::audit::AuditSink;
use crate::context::{CallRunner, ToolContext};
use crate::events::EventBus;
use crate::registry::ToolRegistry;

pub use builder::PipelineBuilder;
pub use nesting::{MAX_NESTED_CALLS, MAX_NESTING_DEPTH};
// The call values, stages and gates were defined here once; their old paths keep working.
pub use crate::call::{
    CallChain, CallResult, Caller, OutcomeStatus, ToolCall, ToolMetadata, ToolOutcome,
};
pub use crate::gate::{
    AllowlistGate, ReadOnlySafety, SafetyCheck, SafetyDecision, SafetyGate, trusted_caller,
};
pub use crate::middleware::{
    BeforeVerdict, Middleware, MiddlewareError, MiddlewareSlot, PreparedCall,
};

/// Default time limit of one call when the tool sets none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The one path from a caller to a handler.
pub struct Pipeline {
    registry: Arc<ToolRegistry>,
    project_root: PathBuf,
    middlewares: Vec<Arc<dyn Middleware>>,
    audit: Option<Arc<dyn AuditSink>>,
    events: EventBus,
    default_timeout: Duration,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("project_root", &self.project_root)
            .field("middlewares", &self.middleware_names())
            .finish_non_exhaustive()
    }
}

impl Pipeline {
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }
    pub fn project_root(&self) -> &Path {
        &self.project_root
    }
    pub fn events(&self) -> &EventBus {
        &self.events
    }
    /// Names of the installed middlewares, in execution order.
    pub fn middleware_names(&self) -> Vec<String> {
        self.middlewares
            .iter()
            .map(|m| m.name().to_string())
            .collect()
    }
}

impl CallRunner for Pipeline {
    fn project_root(&self) -> &Path {
        &self.project_root
    }
    fn events(&self) -> &EventBus {
        &self.events
    }
    fn run_nested(
        self: Arc<Self>,
        call: ToolCall,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ToolOutcome> {
        Box::pin(async move { self.execute_with_cancel(call, cancel).await })
    }
}

impl ToolContext {
    /// A context outside any pipeline call, for calling a handler directly (benchmarks,
    /// handler unit tests). Nested calls made through it are still full pipeline calls.
    pub fn detached(pipeline: Arc<Pipeline>, caller: Caller) -> Self {
        Self::detached_with(pipeline, caller)
    }

    /// The pipeline this call runs in (for registry lookups by meta tools); `None` only for a
    /// context made over another [`CallRunner`].
    pub fn pipeline(&self) -> Option<&Pipeline> {
        self.runner_as::<Pipeline>()
    }
}
