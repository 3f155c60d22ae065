//! Working memory, session memory, memory coordination, the context window and exploration
//! control for Alembic agents.
//!
//! Main types:
//! - [`ActiveContext`]: working memory of one scope (scratchpad, observation log counted in
//!   rounds, plan, reasoning trace); `build_context(budget)` and `distill()`.
//! - [`SessionStore`]: memory of one bootstrap session (reports, evidence, cross-references,
//!   tier reflections, the read-only tool-result cache, SQLite checkpoints).
//! - [`MemoryCoordinator`]: budgets (`user`/`analyst`/`producer` profiles), the static and
//!   dynamic memory prompts, explicit scopes.
//! - [`ContextWindow`]: the message history of a run, compacted at three levels.
//! - [`ExplorationTracker`]: phases, transitions, `tool_choice`, nudges (with
//!   [`SignalDetector`] and [`PlanTracker`]).
//! - [`memory_middlewares`] and [`LoopMemory`]: the pipeline middlewares (CacheCheck,
//!   SubmitDedup, ObservationRecord, TrackerSignal, TraceRecord); [`tools::register_tools`]
//!   adds `note_finding`, `get_previous_analysis`, `get_previous_evidence`,
//!   `review_my_output` (checks the run's submissions, [`review`]) and `collect_scan_recipe`
//!   (validates and collects into the run's [`RunResults`], [`scan`]).
//!
//! One iteration of an agent loop, as the runtime drives it:
//!
//! ```
//! use alembic_context::*;
//! let coordinator = MemoryCoordinator::for_model("gpt-4o");
//! let scope = ScopeId::new("networking:analyst");
//! coordinator.open_scope(scope.clone(), BudgetProfile::Analyst, ActiveContextOptions::default());
//! let static_text = coordinator.static_prompt(&scope, &StaticPromptRequest::default()).unwrap();
//! let mut tracker = ExplorationTracker::new(Strategy::Analyst, ExplorationBudget::default());
//! let mut window = ContextWindow::for_model("Analyse networking.", "gpt-4o", RunKind::System);
//!
//! tracker.tick();
//! assert_eq!(tracker.should_exit(), ExitDecision::Continue);
//! coordinator.with_active(&scope, |ac| {
//!     ac.start_round(1);
//!     if let Some(nudge) = tracker.next_nudge(ac) {
//!         window.push_user(nudge.text);
//!     }
//! }).unwrap();
//! let dynamic = coordinator.dynamic_prompt(&scope).unwrap();
//! window.set_system_prompt(format!("{static_text}\n\n{dynamic}{}", tracker.phase_context()));
//! window.compact();
//! let (_messages, _choice) = (window.render(), tracker.tool_choice());
//! // ... call the model; run tool calls through the pipeline (the middlewares record them);
//! // then `tracker.end_round(ac)` after a tool round or `tracker.on_text_response(ac)`.
//! assert_eq!(tracker.phase(), Phase::Scan);
//! ```

pub mod active;
pub mod coordinator;
pub mod exploration;
pub mod message;
pub mod middleware;
pub mod observation;
pub mod review;
pub mod run;
pub mod scan;
pub mod session;
mod text;
pub mod tools;
pub mod window;

pub use active::{
    ActiveContext, ActiveContextOptions, DistilledContext, Finding, Plan, PlanStep, RecentSummary,
    ScopeId, StepStatus,
};
pub use coordinator::{
    Allocation, BudgetProfile, ContextSplit, CoordinatorError, MemoryCoordinator, PersistentRecall,
    RecalledMemory, StaticPromptRequest,
};
pub use exploration::{
    ExitDecision, ExitReason, ExplorationBudget, ExplorationTracker, Metrics, Nudge, NudgeKind,
    Phase, PlanTracker, SignalDetector, Strategy, TextVerdict, ToolChoice,
};
pub use message::{Message, Role, ToolCallRequest};
pub use middleware::{
    DedupMessage, IsNew, IsSubmit, LoopDirectory, LoopMemory, MillisClock, memory_middlewares,
};
pub use observation::{ToolObservation, is_submit_tool};
pub use run::{DuplicateRecipe, RunResults};
pub use session::{
    CandidateSummary, CrossReference, DimensionDigest, DimensionReport, ProducerContext,
    SessionFinding, SessionStore, TierReflection,
};
pub use text::TokenMeter;
pub use window::{
    CompactionLevel, CompactionReport, ContextWindow, L2_SUMMARY_MAX_TOKENS, L2Batch, RunKind,
    budget_for_context, context_size, token_budget,
};
