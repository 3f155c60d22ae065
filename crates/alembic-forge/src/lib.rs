//! ToolForge: creating tools at run time, in three modes of rising cost.
//!
//! - **Reuse** ([`reuse`]): a request `(intent, action, target)` is matched to an existing tool
//!   with pre-filled arguments taken from the tool's schema (the target "Network" fills the
//!   `category` parameter of `search_recipes`); the match registers as an alias tool that still
//!   validates every call against the original's schema.
//! - **Compose** ([`compose`]): a [`CompositionSpec`] (JSON or TOML) chains existing tools with
//!   `${params.NAME}` / `${steps.N.path}` templates; each step is a normal, gated and audited
//!   pipeline call with the composed call as its parent.
//! - **Generate** ([`generate`]): an LLM writes a JavaScript `toolHandler(params, tools)` plus
//!   test cases; the code runs in a QuickJS [`sandbox`] with heap, stack, CPU and wall-clock
//!   limits, and is registered only after every test case passes. Off unless
//!   `ALEMBIC_ENABLE_FORGE_GENERATE=true` or `[forge] generate = true`.
//!
//! Forged tools live in a [`TemporaryToolRegistry`] (TTL, default 30 minutes) over the main
//! registry and never replace a tool they did not create. [`store`] saves them under
//! `.alembic/tools/` (loaded at start by `alembic-runtime`) and promotes them to skills.
//! [`tools`] has the operator tools (`forge_save`, `forge_remove`, `forge_promote`) through
//! which the CLI changes them, as audited pipeline calls.
//!
//! ```
//! use std::sync::Arc;
//! use alembic_forge::{CompositionSpec, TemporaryToolRegistry, ForgeMode, composed_tool};
//! use alembic_tools::ToolRegistry;
//!
//! let registry = Arc::new(ToolRegistry::new());
//! alembic_tools::meta::register_tools(&registry).unwrap();
//! let spec = CompositionSpec::from_json(r#"{
//!     "name": "tool_overview", "description": "List the tools.",
//!     "steps": [{"tool": "get_tool_details", "args": {"toolName": "plan_task"}}]
//! }"#).unwrap();
//! spec.validate(&|n| registry.contains(n), &Default::default()).unwrap();
//! let temporary = TemporaryToolRegistry::new(Arc::clone(&registry));
//! temporary.register(composed_tool(spec, &registry), ForgeMode::Compose, Some(alembic_forge::DEFAULT_TTL)).unwrap();
//! assert!(registry.contains("tool_overview"));
//! ```

pub mod clock;
pub mod compose;
pub mod error;
pub mod forge;
pub mod forge_tool;
pub mod generate;
pub mod nested;
pub mod reuse;
pub mod sandbox;
pub mod skill;
pub mod store;
pub mod temporary;
pub mod tools;

pub use clock::{Clock, ManualClock, SystemClock};
pub use compose::{
    CompositionSpec, CompositionStep, CompositionTemplate, DynamicComposer, MergeStrategy,
    composed_tool,
};
pub use error::ForgeError;
pub use forge::{ForgeInputs, ForgeOutcome, ToolForge};
pub use generate::{
    CodeGenerator, GeneratedTool, LlmCodeGenerator, SandboxTestCase, generate_enabled,
};
pub use reuse::{
    AliasSpec, ForgeRequest, REUSE_THRESHOLD, ReuseMatch, alias_name, alias_tool, find_reuse,
};
pub use temporary::{DEFAULT_TTL, ForgeMode, TemporaryToolInfo, TemporaryToolRegistry};
