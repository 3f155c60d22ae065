//! Errors of the memory crate.

/// Errors from the persistent memory.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error(transparent)]
    Store(#[from] alembic_store::StoreError),
    #[error("memory database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("no memory with id {id}")]
    NotFound { id: String },
    #[error("memory content is empty; give at least {min} non-blank characters")]
    EmptyContent { min: usize },
    #[error("memory content has {len} characters; at most {max} are accepted")]
    ContentTooLong { len: usize, max: usize },
    #[error("importance {value} is out of range; expected a number from 1 to 10")]
    BadImportance { value: f64 },
    #[error("unknown {field} {value:?}; accepted: {accepted}")]
    UnknownValue {
        field: &'static str,
        value: String,
        accepted: &'static str,
    },
    #[error("invalid stored row for memory {id}: {reason}")]
    CorruptRow { id: String, reason: String },
    #[error(transparent)]
    Embed(#[from] crate::embed::EmbedError),
    /// An optimistic write lost: someone changed the memory since it was read.
    #[error(
        "memory {id} was changed by someone else since it was read (version {version} is no longer current); read it again and retry"
    )]
    Conflict { id: String, version: i64 },
    /// A failure of another storage backend (a team server), with its own message.
    #[error(transparent)]
    Backend(Box<dyn std::error::Error + Send + Sync>),
}
