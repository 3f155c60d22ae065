//! Code intelligence for Alembic.
//!
//! placeholder docs, rewritten below once the crate is complete.

pub mod extract;
pub mod language;
pub mod summary;

pub use extract::{ParseError, summarize};
pub use language::Lang;
pub use summary::{
    CallSite, FileSummary, Import, Method, Property, ReceiverKind, TypeDecl, TypeKind,
};
