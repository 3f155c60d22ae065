//! Working memory, session memory, memory coordination, the context window and exploration
//! control for Alembic agents.
//!
//! - [`ActiveContext`]: working memory of one scope (scratchpad, observation log, plan).
//! - [`ContextWindow`]: the message history of a run with three compaction levels.
//!
//! ```
//! use alembic_context::{ActiveContext, ActiveContextOptions, ScopeId, TokenMeter};
//! let mut ac = ActiveContext::new(ScopeId::new("networking:analyst"), ActiveContextOptions::default());
//! ac.start_round(1);
//! ac.note_finding("requests go through APIClient", "Net/APIClient.swift:40", 8.0);
//! assert!(ac.build_context(&TokenMeter::default(), 500).contains("APIClient"));
//! ```

pub mod active;
pub mod coordinator;
pub mod exploration;
pub mod message;
pub mod middleware;
pub mod observation;
pub mod session;
mod text;
pub mod tools;
pub mod window;

pub use active::{
    ActiveContext, ActiveContextOptions, DistilledContext, Finding, Plan, PlanStep, RecentSummary,
    ScopeId, StepStatus,
};
pub use coordinator::{
    Allocation, BudgetProfile, CoordinatorError, MemoryCoordinator, PersistentRecall,
    RecalledMemory, StaticPromptRequest,
};
pub use exploration::{
    ExitDecision, ExitReason, ExplorationBudget, ExplorationTracker, Metrics, Nudge, NudgeKind,
    Phase, PlanTracker, SignalDetector, Strategy, TextVerdict, ToolChoice,
};
pub use message::{Message, Role, ToolCallRequest};
pub use middleware::{LoopDirectory, LoopMemory, MillisClock, memory_middlewares};
pub use observation::{ToolObservation, is_submit_tool};
pub use session::{
    CandidateSummary, CrossReference, DimensionDigest, DimensionReport, ProducerContext,
    SessionError, SessionFinding, SessionStore, TierReflection,
};
pub use text::TokenMeter;
pub use window::{
    CompactionLevel, CompactionReport, ContextWindow, RunKind, context_size, token_budget,
};
