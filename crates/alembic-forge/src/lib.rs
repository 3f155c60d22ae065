//! ToolForge: creating tools at run time, in three modes of rising cost.
//!
//! See the module docs; the crate is assembled step by step.

pub mod sandbox;
