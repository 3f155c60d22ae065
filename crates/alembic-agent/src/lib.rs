//! The ReAct agent runtime of Alembic: a model ([`alembic_llm`]) answering questions about a
//! project with the tools of a preset, under Alembic's memory and exploration control.
//!
//! One round of the loop (see `stage.rs` for the details):
//! - working memory opens the round; the [`alembic_context::ExplorationTracker`] ticks, may
//!   end the stage or force its terminal phase, and may queue a nudge (a user message);
//! - the system prompt is rebuilt: the stage's base prompt, the static memory prompt (long-term
//!   memory recalled for the question, built once per run by the
//!   [`alembic_context::MemoryCoordinator`]), the phase context, and the dynamic prompt (the
//!   run's ActiveContext within its budget plus the static stage's surplus);
//! - the [`alembic_context::ContextWindow`] compacts (L1/L2/L3) with the system prompt and tool
//!   schemas counted;
//! - the model is called with the tracker's `tool_choice` (`none` ⇒ no tools sent at all);
//! - tool calls (at most 8 per turn) run through the pipeline as a caller holding the stage's
//!   allowlist, so unknown names come back with "did you mean", tools outside the preset are
//!   refused, and the memory middlewares (cache, submit dedup, observation, tracker signal,
//!   trace) see every call; malformed argument JSON is answered with the parser's feedback;
//! - a text reply ends the stage (when the tracker agrees), an empty reply is retried once
//!   with a nudge, model errors follow the 2-strike policy, and when the rounds run out one
//!   last request with tools off asks for a summary;
//! - when compaction would fold old rounds (L2), the model summarises them first in one
//!   bounded call per round range; a failed call leaves the rule-based record lines.
//!
//! Presets ([`AgentPreset`]): `chat` (one loop, user memory profile), `insight` (an analyst
//! stage with the code_analysis tools, then a producer stage with the knowledge_production
//! tools that starts from the analyst's distilled findings) and `bootstrap` (one stage under
//! the Bootstrap strategy: explore, submit, summarise). At the end, noted findings of
//! importance ≥ 7 and what the model extracts from the conversation (facts, and preferences
//! the user stated; for chat, the answer's first sentence when the extraction fails) are
//! consolidated into long-term memory with the run id and question as provenance; `/remember`
//! in chat does the same on demand ([`AgentRuntime::remember`]).
//!
//! ```no_run
//! use std::sync::Arc;
//! use alembic_agent::{AgentOptions, AgentPreset, AgentRuntime, AgentTools, RunRequest};
//! # async fn run(provider: Arc<dyn alembic_llm::LlmProvider>, tools: AgentTools) -> Result<(), alembic_agent::AgentError> {
//! let agent = AgentRuntime::new(provider, tools, None, AgentOptions::default());
//! let request = RunRequest::new("Which pattern does the Payment module use?", AgentPreset::from_name("chat"));
//! let report = agent.run(&request, &tokio_util::sync::CancellationToken::new()).await?;
//! println!("{}\n{}", report.answer, report.trace_line());
//! # Ok(())
//! # }
//! ```

pub mod bootstrap;
mod convert;
mod error;
mod events;
pub mod memory;
mod preset;
mod prompt;
mod remember;
mod report;
mod runtime;
mod stage;
mod tools;

pub use bootstrap::{DimensionBrief, DimensionRun, SharedSession, finish_tier, new_session};
pub use convert::CallLedger;
pub use error::AgentError;
pub use events::{AgentEvent, EventSink};
pub use memory::SharedMemory;
pub use preset::{
    ANALYST_TOOLS_PRESET, AgentPreset, BOOTSTRAP_TOOLS_PRESET, INSIGHT_TOOLS_PRESET,
    PRODUCER_TOOLS_PRESET, StageLimits, StageSpec, cold_start_stage,
};
pub use prompt::{EMPTY_REPLY_NUDGE, FORCED_SUMMARY_NUDGE};
pub use remember::{EXTRACTION_MAX_TOKENS, MEMORY_EXTRACTION_SYSTEM_PROMPT};
pub use report::{
    Extraction, MemoryReport, RunReport, SavedMemory, StageEnd, StageReport, ToolCallRecord,
    UsageReport,
};
pub use runtime::{AgentOptions, AgentRuntime, RunRequest};
pub use stage::L2_SUMMARY_SYSTEM_PROMPT;
pub use tools::{AgentTools, WorkingMemorySafety};
