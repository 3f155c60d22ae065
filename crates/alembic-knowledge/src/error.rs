//! Errors of the knowledge base.

use crate::model::Status;

/// What went wrong in a knowledge operation. Messages say what was wrong and what is accepted.
#[derive(Debug, thiserror::Error)]
pub enum KnowledgeError {
    #[error("cannot open the knowledge base: {0}")]
    Store(#[from] alembic_store::StoreError),
    #[error("knowledge base query failed: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("knowledge entry '{id}' not found")]
    NotFound { id: String },
    #[error(
        "cannot move entry '{id}' from {from} to {to}: allowed next states from {from} are {}",
        allowed_list(allowed)
    )]
    InvalidTransition {
        id: String,
        from: Status,
        to: Status,
        allowed: &'static [Status],
    },
    #[error("a reason is required to move entry '{id}' to {to}")]
    ReasonRequired { id: String, to: Status },
    #[error("unknown {field} '{value}': accepted values are {accepted}")]
    UnknownValue {
        field: &'static str,
        value: String,
        accepted: &'static str,
    },
    #[error("invalid candidate: {}", errors.join("; "))]
    Invalid { errors: Vec<String> },
    #[error(
        "an entry titled '{title}' already exists ({existing_id}, {status}); update it or choose another title"
    )]
    DuplicateTitle {
        title: String,
        existing_id: String,
        status: Status,
    },
    #[error(
        "entry '{id}' is {status}; only draft, submitted or rejected candidates can be edited (propose an evolution for published recipes)"
    )]
    NotEditable { id: String, status: Status },
    #[error("an edge cannot connect entry '{id}' to itself")]
    SelfEdge { id: String },
    #[error("invalid guard rule '{id}': {reason}")]
    BadRule { id: String, reason: String },
    #[error("cannot read guard rules from {path}: {reason}")]
    RuleFile { path: String, reason: String },
    #[error("an open {kind} proposal for '{entry_id}' already exists ({proposal_id})")]
    DuplicateProposal {
        entry_id: String,
        kind: String,
        proposal_id: String,
    },
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// An optimistic write found the entry at another version: someone else changed it
    /// since it was read. Nothing was written; read it again and retry.
    #[error(
        "entry '{id}' was changed by someone else (expected version {expected}, it is now at {found}); nothing was written, read it again and retry"
    )]
    Conflict {
        id: String,
        expected: i64,
        found: i64,
    },
    /// A failure of a storage backend other than SQLite (the team server), naming it.
    #[error("{0}")]
    Backend(Box<dyn std::error::Error + Send + Sync>),
}

fn allowed_list(allowed: &[Status]) -> String {
    if allowed.is_empty() {
        return "none (it is final)".to_string();
    }
    allowed
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
