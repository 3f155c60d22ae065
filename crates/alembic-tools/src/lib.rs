//! The core of Alembic's tool runtime: what a tool is, how tools are registered and found, how
//! arguments from any LLM vendor are normalised and validated, which tools a caller may use,
//! and the one pipeline every call passes through (gates, cache, records, audit).
//!
//! Main types: [`ToolRegistry`], [`ToolDefinition`], [`Pipeline`], [`Middleware`],
//! [`ToolCall`], [`ToolOutcome`], [`PresetCatalog`], [`AuditLog`].
//!
//! ```
//! use std::sync::Arc;
//! use alembic_tools::*;
//! use serde_json::json;
//!
//! /// Arguments of `echo_text`: the schema is derived from this struct.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct EchoArgs {
//!     /// the text to echo
//!     text: String,
//! }
//!
//! let registry = Arc::new(ToolRegistry::new());
//! let tool = ToolDefinition::typed::<EchoArgs>(
//!     "echo_text", "Echo the text back.", ToolModule::Composite, EffectClass::ReadOnly,
//! )
//! .handler((), |(), args, _ctx| async move { Ok(ToolOutput::new(json!({}), args.text)) });
//! registry.register(tool).unwrap();
//! let pipeline = Pipeline::builder(registry, ".").build();
//! let rt = tokio::runtime::Runtime::new().unwrap();
//! let caller = Caller::new("doc", Allowlist::only(["echo_text"]));
//! let outcome = rt.block_on(pipeline.execute(ToolCall::new("echo_text", json!({"text": "hi"}), caller)));
//! assert_eq!(outcome.text_for_model(), "hi");
//! ```

pub mod args;
pub mod audit;
pub mod cache;
pub mod call;
pub mod canonical;
pub mod capability;
pub mod context;
pub mod definition;
pub mod events;
pub mod extensions;
pub mod gate;
pub mod grants;
pub mod meta;
pub mod middleware;
pub mod pipeline;
pub mod redact;
pub mod registry;
pub mod typed;

pub use args::{ArgumentError, ArgumentErrors, Coercion, PARAM_ALIASES, Rename, RenameRule};
pub use audit::{
    AuditEntry, AuditError, AuditInput, AuditLog, AuditRecord, AuditSink, VerifyReport,
};
pub use cache::{ResultCache, cache_key};
pub use call::{
    CallChain, CallResult, Caller, OutcomeStatus, ToolCall, ToolMetadata, ToolOutcome, ToolOutput,
};
pub use capability::{Allowlist, PresetCatalog, PresetError};
pub use context::{CallRunner, ToolContext};
pub use definition::{
    EffectClass, HandlerFuture, ToolDefinition, ToolError, ToolHandler, ToolModule, ToolSchema,
    handler_fn,
};
pub use events::{EventBus, ToolEvent, ToolEventKind};
pub use extensions::{Extensions, MetadataExtension};
pub use gate::{
    AllowlistGate, ReadOnlySafety, SafetyCheck, SafetyDecision, SafetyGate, trusted_caller,
};
pub use grants::SessionGrants;
pub use middleware::{BeforeVerdict, Middleware, MiddlewareError, MiddlewareSlot, PreparedCall};
pub use pipeline::{
    DEFAULT_TIMEOUT, MAX_NESTED_CALLS, MAX_NESTING_DEPTH, Pipeline, PipelineBuilder,
};
pub use registry::{RegisteredTool, RegistryError, ToolRegistry, is_snake_case};
pub use typed::{ToolArgs, TypedTool, args_schema, parse_args};

/// Re-exported so that argument structs derive `JsonSchema` without a direct dependency.
pub use schemars;

/// Re-exported so that middleware implementations need not depend on async-trait themselves.
pub use async_trait::async_trait;
