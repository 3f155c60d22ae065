//! Cold-start analysis of a project (`alembic bootstrap`): the 25 dimensions as data,
//! project detection, the tier plan (concurrency 3/2/1), deterministic extractors that cite
//! `file:line` evidence, and a runner that writes each dimension's candidates (status
//! `submitted`, created by `bootstrap`), its memory (source `bootstrap`, `sourceDimension`)
//! and its checkpoint in one transaction, so `--resume` continues after a kill.
//!
//! The runner analyses each dimension through [`DimensionAnalyser`]; the deterministic
//! implementation needs no LLM, and an LLM analyser plugs into the same trait.

pub mod analyser;
pub mod checkpoint;
pub mod detect;
pub mod dimensions;
pub mod error;
pub mod extract;
pub mod facts;
pub mod plan;
pub mod report;
pub mod runner;
pub mod tool;

pub use analyser::{DeterministicAnalyser, DimensionAnalyser, DimensionOutcome, TierContext};
pub use dimensions::{BootstrapConfig, Dimension};
pub use error::BootstrapError;
pub use report::{BootstrapReport, DimensionStatus, DimensionSummary};
pub use runner::{Bootstrap, BootstrapOptions, NoProgress, ProgressSink};
pub use tool::register_tools;
