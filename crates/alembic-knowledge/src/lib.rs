//! Alembic's knowledge base: candidates and recipes with a reviewed lifecycle, full-text
//! search, duplicate detection, a typed knowledge graph, guard rules with compliance checks
//! and evolution proposals — and the tools of the `query`, `lifecycle`, `knowledge-graph`,
//! `guard` and `evolution-tools` modules over it.
//!
//! Main types: [`KnowledgeBackend`] (the one storage trait: [`KnowledgeStore`] here, SQLite
//! on the project database with versioned migrations; the team store on PostgreSQL in
//! `alembic-team`),
//! [`Entry`] / [`NewEntry`], [`Status`] (draft → submitted → approved | rejected → published
//! → deprecated; every move is a history row with who and why), [`GuardRules`], and
//! [`tools::KnowledgeService`], the service the tools are registered with.
//!
//! ```
//! use alembic_knowledge::{KnowledgeBackend, KnowledgeStore, NewEntry, Status, Filter};
//! let mut kb = KnowledgeStore::open_in_memory().unwrap();
//! let new = NewEntry {
//!     title: "Retry requests with exponential backoff".into(),
//!     content: "Network calls go through `Client.send`, which retries ...".into(),
//!     ..NewEntry::default()
//! };
//! let e = kb.create(&new, Status::Submitted, "agent", None).unwrap();
//! kb.transition(&e.id, Status::Approved, "reviewer", None, None).unwrap();
//! // With the version it read, a reviewer's move fails if someone else moved the entry.
//! let e = kb.transition(&e.id, Status::Published, "reviewer", None, Some(2)).unwrap();
//! assert_eq!(e.status, Status::Published);
//! let hits = kb.search("backoff", &Filter::default()).unwrap();
//! assert_eq!(hits[0].entry.id, e.id);
//! // Publishing again is refused, naming the current state and what may follow it.
//! let err = kb.transition(&e.id, Status::Published, "x", None, None).unwrap_err();
//! assert!(err.to_string().contains("allowed next states from published are deprecated"));
//! ```

pub mod backend;
#[cfg(feature = "test-support")]
pub mod contract;
pub mod error;
pub mod evolution;
pub mod export;
pub mod graph;
pub mod guard;
pub mod model;
pub mod quality;
pub mod schema;
pub mod similar;
pub mod store;
pub mod text;
pub mod tools;

pub use backend::{HistoryRow, ImportReport, KnowledgeBackend, KnowledgeExport, Moved};
pub use error::KnowledgeError;
pub use evolution::Proposal;
pub use graph::{Impact, Impacted, Neighbour, Neighbours, Stats};
pub use guard::{FileViews, GuardRules, Scope, Severity, Violation};
pub use model::{Edge, Entry, Kind, NewEntry, RELATIONS, Status, Transition};
pub use quality::{Quality, Validation};
pub use store::{Clock, Filter, Hit, KnowledgeStore, Usage};
pub use tools::{KnowledgeService, register_tools};
