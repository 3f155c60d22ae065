//! Persistent memory for Alembic: long-term facts, insights and preferences of a project,
//! user or team, kept in the project's SQLite database (`.alembic/alembic.db`).
//!
//! Main types:
//! - [`PersistentMemory`]: the store. Add, get, update, list, forget, history, gc (TTL
//!   expiry, archiving after 30 days without access, forgetting after 90), a capacity of 500
//!   current memories per scope enforced in the insert's transaction, export/import.
//! - [`MemoryRetriever`]: score = w_r·recency + w_i·importance + w_v·relevance, with FTS5
//!   BM25 (CJK-aware) fused with embedding cosine when an [`Embedder`] is configured, a
//!   relevance floor, and relevance-banded re-ranking by recency and importance.
//! - [`MemoryConsolidator`]: conflict pre-resolution (REPLACE), then UPDATE / MERGE / ADD
//!   by similarity; REPLACE and MERGE keep the old version as history.
//! - [`Embedder`]: [`MiniLmEmbedder`] (local, feature `local-embeddings`),
//!   [`OpenAiEmbedder`], or none.
//! - [`Clock`]: injectable time ([`ManualClock`] in tests).
//!
//! ```
//! use std::sync::Arc;
//! use alembic_memory::{ManualClock, MemoryConfig, NewMemory, PersistentMemory, RetrieveOptions};
//!
//! let clock = Arc::new(ManualClock::new(1_700_000_000_000));
//! let mut memory = PersistentMemory::open_in_memory(MemoryConfig::default(), clock).unwrap();
//! memory.add(NewMemory::fact("The Payment module uses the Coordinator + Repository pattern")).unwrap();
//! memory.add(NewMemory::fact("CI runs on GitHub Actions")).unwrap();
//! let hits = memory.retrieve("payment pattern", &RetrieveOptions::default()).unwrap();
//! assert_eq!(hits.len(), 1);
//! assert!(hits[0].memory.content.contains("Coordinator"));
//! ```

mod backend;
mod clock;
mod config;
mod consolidate;
pub mod embed;
mod error;
mod model;
mod operator_tools;
mod readers;
mod reindex;
mod retriever;
mod rows;
mod schema;
mod service;
pub mod shared_tx;
mod store;
pub mod team_tools;
pub mod text;
pub mod tools;

pub use backend::{MemoryBackend, try_embed};
pub use clock::{Clock, DAY_MS, ManualClock, SystemClock};
pub use config::{ConsolidationConfig, MemoryConfig, Ranking, RetrievalConfig};
pub use consolidate::{Action, ConsolidateStats, Decision, MemoryConsolidator, Outcome};
#[cfg(feature = "local-embeddings")]
pub use embed::MiniLmEmbedder;
pub use embed::{
    EmbedError, Embedder, EmbedderConfig, OpenAiEmbedder, build_embedder, default_model_dir,
};
pub use error::MemoryError;
pub use model::{Memory, MemorySource, MemoryType, MemoryUpdate, NewMemory, Scope};
pub use readers::{Found, Located, Origin};
pub use retriever::{
    Candidate, ChannelRow, MemoryRetriever, RetrieveOptions, ScoreParts, ScoredMemory, cosine,
};
pub use schema::{COMPONENT as SCHEMA_COMPONENT, MIGRATIONS};
pub use service::{MemoryService, TeamOpener};
pub use store::{GcStats, ListFilter, MemoryStats, PersistentMemory, apply_update, prepare_memory};
