//! Errors of a run.

use alembic_context::CoordinatorError;
use alembic_llm::LlmError;
use alembic_tools::PresetError;

/// Why a run produced no answer.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Preset(#[from] PresetError),
    #[error("the model failed in stage {stage} after {rounds} rounds: {source}")]
    Model {
        stage: String,
        rounds: u32,
        #[source]
        source: LlmError,
    },
    #[error("the run was cancelled")]
    Cancelled,
    #[error("the run took longer than its limit of {} s and was stopped", .limit.as_secs_f64())]
    TimedOut { limit: std::time::Duration },
    #[error("working memory: {0}")]
    Memory(#[from] CoordinatorError),
    #[error("agent setup: {0}")]
    Setup(String),
}
