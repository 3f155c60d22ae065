//! Code intelligence for Alembic.
//!
//! placeholder docs, rewritten below once the crate is complete.

pub mod calls;
pub mod extract;
pub mod files;
pub mod graph;
pub mod index;
pub mod language;
pub mod search;
pub mod semantic;
pub mod summary;
pub mod topology;
pub mod walk;

pub use calls::{CallEdge, Resolution};
pub use extract::{ParseError, summarize};
pub use graph::{MethodInfo, ProjectGraph, TypeInfo};
pub use index::{CodeIndex, IndexError, IndexReport, Progress};
pub use language::Lang;
pub use summary::{
    CallSite, FileSummary, Import, Method, Property, ReceiverKind, TypeDecl, TypeKind,
};
