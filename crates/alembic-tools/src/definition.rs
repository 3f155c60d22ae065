//! What a tool is: name, description, schema, module, effect class and handler.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::call::ToolOutput;
use crate::context::ToolContext;

/// The seed's twelve tool modules. Every tool belongs to exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolModule {
    AstGraph,
    Lifecycle,
    Infrastructure,
    Query,
    Composite,
    ProjectAccess,
    Guard,
    SystemInteraction,
    EvolutionTools,
    KnowledgeGraph,
    AiAnalysis,
    ScanRecipe,
}

impl ToolModule {
    pub const ALL: [ToolModule; 12] = [
        ToolModule::AstGraph,
        ToolModule::Lifecycle,
        ToolModule::Infrastructure,
        ToolModule::Query,
        ToolModule::Composite,
        ToolModule::ProjectAccess,
        ToolModule::Guard,
        ToolModule::SystemInteraction,
        ToolModule::EvolutionTools,
        ToolModule::KnowledgeGraph,
        ToolModule::AiAnalysis,
        ToolModule::ScanRecipe,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolModule::AstGraph => "ast-graph",
            ToolModule::Lifecycle => "lifecycle",
            ToolModule::Infrastructure => "infrastructure",
            ToolModule::Query => "query",
            ToolModule::Composite => "composite",
            ToolModule::ProjectAccess => "project-access",
            ToolModule::Guard => "guard",
            ToolModule::SystemInteraction => "system-interaction",
            ToolModule::EvolutionTools => "evolution-tools",
            ToolModule::KnowledgeGraph => "knowledge-graph",
            ToolModule::AiAnalysis => "ai-analysis",
            ToolModule::ScanRecipe => "scan-recipe",
        }
    }
}

impl fmt::Display for ToolModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a tool may do to the world. The safety gate and the cache decide by this class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectClass {
    /// Pure lookups in Alembic's own state.
    ReadOnly,
    /// Reads files beneath the project root.
    ReadsProjectFiles,
    /// Creates or changes files beneath the project root.
    WritesProjectFiles,
    /// Spawns processes.
    RunsCommands,
    /// Writes the knowledge base (recipes, candidates, rules, edges).
    WritesKnowledge,
    /// Writes agent or persistent memory.
    WritesMemory,
    /// Calls an LLM provider (costs money, may be slow).
    CallsLlm,
}

impl EffectClass {
    /// Whether results may be cached and replayed: only calls without side effects.
    pub fn is_side_effect_free(self) -> bool {
        matches!(self, EffectClass::ReadOnly | EffectClass::ReadsProjectFiles)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EffectClass::ReadOnly => "read_only",
            EffectClass::ReadsProjectFiles => "reads_project_files",
            EffectClass::WritesProjectFiles => "writes_project_files",
            EffectClass::RunsCommands => "runs_commands",
            EffectClass::WritesKnowledge => "writes_knowledge",
            EffectClass::WritesMemory => "writes_memory",
            EffectClass::CallsLlm => "calls_llm",
        }
    }
}

impl fmt::Display for EffectClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A handler's failure. `Invalid` means the arguments made no sense to the handler even after
/// schema validation; `Refused` is a policy refusal from inside the tool (for example PathGuard).
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ToolError {
    #[error("{0}")]
    Failed(String),
    #[error("invalid arguments: {0}")]
    Invalid(String),
    #[error("refused by {rule}: {reason}")]
    Refused { reason: String, rule: String },
    #[error("not found: {0}")]
    NotFound(String),
    #[error("cancelled")]
    Cancelled,
}

impl ToolError {
    pub fn failed(msg: impl Into<String>) -> Self {
        ToolError::Failed(msg.into())
    }
    pub fn refused(rule: impl Into<String>, reason: impl Into<String>) -> Self {
        ToolError::Refused {
            reason: reason.into(),
            rule: rule.into(),
        }
    }
}

/// Boxed future returned by handlers.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send>>;

/// The async function behind a tool. Receives normalised, validated arguments.
pub trait ToolHandler: Send + Sync {
    fn call(&self, args: Value, ctx: ToolContext) -> HandlerFuture;
}

struct FnHandler<F>(F);

impl<F, Fut> ToolHandler for FnHandler<F>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn call(&self, args: Value, ctx: ToolContext) -> HandlerFuture {
        Box::pin((self.0)(args, ctx))
    }
}

/// Wraps an async closure as a handler.
pub fn handler_fn<F, Fut>(f: F) -> Arc<dyn ToolHandler>
where
    F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    Arc::new(FnHandler(f))
}

/// One registered tool.
#[derive(Clone)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// A JSON Schema object (`{"type": "object", "properties": {...}}`).
    pub parameters: Value,
    pub module: ToolModule,
    pub effect: EffectClass,
    /// Per-tool time limit; the pipeline default applies when absent.
    pub timeout: Option<Duration>,
    pub handler: Arc<dyn ToolHandler>,
}

impl fmt::Debug for ToolDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDefinition")
            .field("name", &self.name)
            .field("module", &self.module)
            .field("effect", &self.effect)
            .finish_non_exhaustive()
    }
}

impl ToolDefinition {
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        module: ToolModule,
        effect: EffectClass,
        handler: Arc<dyn ToolHandler>,
    ) -> Self {
        ToolDefinition {
            name: name.into(),
            description: description.into(),
            parameters,
            module,
            effect,
            timeout: None,
            handler,
        }
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The part of the definition a model sees.
    pub fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
        }
    }
}

/// Name, description and parameters: what `schemas()` hands to a model or an MCP client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}
