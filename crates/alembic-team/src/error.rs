//! Errors of the team stores. Every message about the server names it (host, port and
//! database, never the password) and the cause.

use alembic_memory::MemoryError;

#[derive(Debug, thiserror::Error)]
pub enum TeamError {
    #[error("team server {server} is unreachable: {cause}")]
    Unreachable { server: String, cause: String },
    #[error("team server {server}: {source}")]
    Database {
        server: String,
        #[source]
        source: sqlx::Error,
    },
    /// A query failed; [`crate::PgClient::run`] turns it into `Database` or `Unreachable`.
    #[error(transparent)]
    Sql(#[from] sqlx::Error),
    #[error(
        "team server {server} has {component} schema version {found}, newer than this build knows ({known}); upgrade alembic before using this team store"
    )]
    SchemaTooNew {
        server: String,
        component: String,
        found: i64,
        known: i64,
    },
    #[error("the team URL is not valid: {reason}; expected postgres://user@host:port/database")]
    BadUrl { reason: String },
    #[error("team name {name:?} is not valid; use 1 to 63 lower-case letters, digits, '-' or '_'")]
    BadTeam { name: String },
    #[error("the team store's connection thread stopped: {reason}")]
    Worker { reason: String },
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error(transparent)]
    Knowledge(#[from] alembic_knowledge::KnowledgeError),
}

/// Domain errors (not found, conflict, bad input) keep their memory variant; the rest are
/// backend failures with the server's name.
impl From<TeamError> for MemoryError {
    fn from(e: TeamError) -> MemoryError {
        match e {
            TeamError::Memory(m) => m,
            other => MemoryError::Backend(Box::new(other)),
        }
    }
}

/// Domain errors (not found, conflict, bad input) keep their knowledge variant; the rest are
/// backend failures with the server's name.
impl From<TeamError> for alembic_knowledge::KnowledgeError {
    fn from(e: TeamError) -> alembic_knowledge::KnowledgeError {
        match e {
            TeamError::Knowledge(k) => k,
            other => alembic_knowledge::KnowledgeError::Backend(Box::new(other)),
        }
    }
}
