//! Code intelligence for Alembic: what the project-access and ast-graph tools know about
//! a project's source code.
//!
//! - [`summarize`] parses one file with tree-sitter (Swift, Objective-C, Rust, Python,
//!   TypeScript/TSX, JavaScript, Go, Java, Kotlin, C, C++) into a [`FileSummary`]: types
//!   with parents and conformances, methods, properties, imports and call sites.
//! - [`CodeIndex`] keeps those summaries in the project database and refreshes them
//!   incrementally (mtime + SHA-256), honouring `.gitignore`/`.ignore`/`.alembicignore` and
//!   skipping vendored directories ([`walk`]).
//! - [`ProjectGraph`] merges summaries: inheritance and conformance, overrides, a call graph
//!   whose edges carry a resolution confidence ([`calls`]), modules with Tarjan SCCs and
//!   layers ([`topology`]), entry points. Types are keyed by simple name when it is unique
//!   and by `scope::Name` when several types share it ([`merge`]); lookups by simple name
//!   list the candidates. [`ProjectGraph::update`] applies changed files incrementally and
//!   gives the same graph as a full build.
//! - [`mask`] blanks comments and string literals (from the syntax tree) so line matchers
//!   see only code.
//! - [`role`] classifies a file as source, test, fixture, example, vendored or generated.
//! - [`search`], [`files`] and [`semantic`] back the project-access tools; every file read
//!   goes through `alembic_safety::PathGuard`.
//! - [`focus`] finds the few summaries a type query needs through the index's declaration
//!   rows, so [`CodeService::graph_around`] answers it without loading the project; call
//!   and entity queries read the call rows the same way (`focus_calls.rs`, `call_view.rs`);
//!   [`CodeService::watch`] keeps a long-running service's index live (`notify`).
//! - [`register_tools`] adds the 13 tools to an `alembic_tools::ToolRegistry`;
//!   [`CodeService`] is the shared state they use.
//!
//! ```
//! use alembic_code::{Lang, ProjectGraph, summarize};
//! let src = "class Base {}\nclass Circle: Base { override func area() {} }\n";
//! let summary = summarize("Shapes.swift", Lang::Swift, src).unwrap();
//! let graph = ProjectGraph::build([&summary]);
//! assert_eq!(graph.inheritance_chain("Circle"), ["Circle", "Base"]);
//! ```

mod call_view;
pub mod calls;
pub mod extract;
pub mod files;
pub mod focus;
mod focus_calls;
pub mod graph;
pub mod index;
pub mod language;
pub mod mask;
pub mod merge;
pub mod role;
pub mod search;
pub mod semantic;
pub mod service;
pub mod summary;
pub mod tools;
pub mod topology;
pub mod topology_rows;
pub mod walk;
mod watch;

pub use calls::{CallEdge, Resolution};
pub use extract::{ParseError, summarize};
pub use focus::Reach;
pub use graph::{MethodInfo, ProjectGraph, TypeInfo};
pub use index::{
    ChunkVectors, CodeIndex, IndexChanges, IndexError, IndexPhase, IndexPlan, IndexReport,
    Progress, ProjectStats, WideClosure,
};
pub use language::Lang;
pub use semantic::{CodeEmbedder, SearchMode, SemanticSearch};
pub use service::CodeService;
pub use summary::{
    CallSite, FileSummary, Import, ImportedName, Method, ParentOrigin, Property, ReceiverKind,
    TypeDecl, TypeKind,
};
pub use tools::{TOOL_NAMES, register_tools};
