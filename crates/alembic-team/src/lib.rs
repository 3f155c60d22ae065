//! Team stores for Alembic on PostgreSQL: what several people and CI share.
//!
//! SQLite stays the embedded default; with `[team]` configured, team-scoped memories live
//! on a PostgreSQL server here, behind the same [`alembic_memory::MemoryBackend`] trait and
//! scored, ranked and consolidated by the same rules (the memory crate's).
//!
//! Main types:
//! - [`TeamConfig`]: server URL (sslmode passed through), team, author, connect timeout.
//! - [`PgClient`]: a synchronous handle on a connection pool (one thread runs its tokio
//!   runtime), with errors that name the server and the cause.
//! - [`PgMemory`]: the team memory backend (team-filtered queries, versioned rows, author
//!   on every write, one transaction per write under the team's advisory lock).
//! - [`schema`]: versioned migrations; a server schema newer than the build is refused.
//!
//! ```no_run
//! use std::sync::Arc;
//! use alembic_memory::{MemoryBackend, MemoryConfig, NewMemory, Scope, SystemClock};
//! use alembic_team::{PgMemory, TeamConfig};
//!
//! let team = TeamConfig::new("postgres://alembic@127.0.0.1:5432/alembic", "platform", "ana");
//! let mut memory = PgMemory::open(&team, MemoryConfig::default(), Arc::new(SystemClock)).unwrap();
//! memory.add(NewMemory::fact("Releases are cut on Tuesdays").with_scope(Scope::Team)).unwrap();
//! ```

mod client;
mod config;
mod error;
mod knowledge;
mod memory;
pub mod schema;
pub mod tx;

pub use client::PgClient;
pub use config::{DEFAULT_CONNECT_TIMEOUT, TeamConfig, check_url};
pub use error::TeamError;
pub use knowledge::{PgKnowledge, knowledge_opener};
pub use memory::{PgMemory, Versioned, check_team_name, team_opener};
