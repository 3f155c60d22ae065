//! Errors of a bootstrap run.

/// What can stop a bootstrap run or one of its dimensions.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    #[error("{0}")]
    Config(String),
    #[error("unknown dimension {id:?}; accepted: {accepted}")]
    UnknownDimension { id: String, accepted: String },
    #[error("project directory {0} does not exist or is not a directory")]
    NoProject(String),
    #[error("cannot index the project: {0}")]
    Index(#[from] alembic_code::IndexError),
    #[error("cannot open the project database: {0}")]
    Store(#[from] alembic_store::StoreError),
    #[error("database error: {0}")]
    Sqlite(#[from] alembic_store::rusqlite::Error),
    #[error("cannot write a candidate: {0}")]
    Knowledge(#[from] alembic_knowledge::KnowledgeError),
    #[error("cannot write a memory: {0}")]
    Memory(#[from] alembic_memory::MemoryError),
    #[error("--resume: no interrupted bootstrap run to resume: {why}; run without --resume")]
    NothingToResume { why: String },
    #[error("dimension {dimension} failed: {message}")]
    Analysis { dimension: String, message: String },
    #[error("checkpoint data is not valid: {0}")]
    Corrupt(#[from] serde_json::Error),
}
