//! The knowledge tools: `query` (6), `lifecycle` (10), `knowledge-graph` (2), `guard` (4),
//! `evolution-tools` (3), and the composites `submit_with_check` and `knowledge_overview`.
//!
//! Handlers find the store as the [`KnowledgeService`] in the pipeline's services (one per
//! project root is created on demand when a runtime has none). The service opens
//! `.alembic/alembic.db` on first use, so a runtime that only lists tools writes nothing.
//! Every write records the caller's id as "who" in the entry's history.

mod args;
mod evolution;
mod graph;
mod guard;
mod lifecycle;
mod query;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use alembic_safety::PathGuard;
use alembic_tools::{
    EffectClass, RegistryError, ToolContext, ToolDefinition, ToolError, ToolModule, ToolOutput,
    ToolRegistry, handler_fn,
};
use serde_json::Value;

use crate::error::KnowledgeError;
use crate::guard::{GuardRules, PROJECT_RULES_PATH};
use crate::store::KnowledgeStore;

/// The project's knowledge base as a shared service, opened on first use.
pub struct KnowledgeService {
    root: PathBuf,
    store: OnceLock<Result<Mutex<KnowledgeStore>, String>>,
    guard: OnceLock<Result<PathGuard, String>>,
}

impl std::fmt::Debug for KnowledgeService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnowledgeService")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl KnowledgeService {
    /// The knowledge base of the project at `root`, opened when a tool first needs it.
    pub fn for_project(root: &Path) -> Self {
        KnowledgeService {
            root: root.to_path_buf(),
            store: OnceLock::new(),
            guard: OnceLock::new(),
        }
    }

    /// A service over an already open store (tests, in-memory runs); files are read
    /// beneath `root`.
    pub fn from_store(root: &Path, store: KnowledgeStore) -> Self {
        let service = Self::for_project(root);
        let _ = service.store.set(Ok(Mutex::new(store)));
        service
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Runs `f` with the store, opening it first if needed.
    pub fn with<T>(
        &self,
        f: impl FnOnce(&mut KnowledgeStore) -> Result<T, KnowledgeError>,
    ) -> Result<T, ToolError> {
        let store = self.store.get_or_init(|| {
            KnowledgeStore::open_project(&self.root)
                .map(Mutex::new)
                .map_err(|e| e.to_string())
        });
        let store = store.as_ref().map_err(|e| ToolError::failed(e.clone()))?;
        let mut guard = store.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut guard).map_err(tool_error)
    }

    /// Confinement for reading project files (checked files, project rules).
    fn path_guard(&self) -> Result<&PathGuard, ToolError> {
        self.guard
            .get_or_init(|| PathGuard::new(&self.root).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| ToolError::failed(format!("cannot confine file access: {e}")))
    }

    /// Built-in guard rules overlaid with the project's `.alembic/guard-rules.toml`, plus the
    /// guards of published rule entries. Read on every call, so edits apply at once.
    pub fn guard_rules(&self, ctx: &ToolContext) -> Result<GuardRules, ToolError> {
        let guard = file_guard(ctx, self)?;
        let project = match guard.read_to_string(PROJECT_RULES_PATH) {
            Ok(text) => Some(text),
            Err(alembic_safety::PathError::NotFound { .. }) => None,
            Err(e) => return Err(ToolError::failed(format!("{PROJECT_RULES_PATH}: {e}"))),
        };
        let rules = GuardRules::load(project.as_deref()).map_err(tool_error)?;
        let filter = crate::store::Filter {
            statuses: vec![crate::model::Status::Published],
            kind: Some(crate::model::Kind::Rule),
            limit: 100_000,
            ..crate::store::Filter::default()
        };
        let entries = self.with(|kb| kb.list(&filter))?;
        Ok(rules.with_entries(&entries))
    }
}

/// The PathGuard the read tools use: the safety services' (with the project's configured
/// protections) when the runtime has them, else the knowledge service's own.
pub(crate) fn file_guard<'a>(
    ctx: &ToolContext,
    service: &'a KnowledgeService,
) -> Result<GuardRef<'a>, ToolError> {
    if let Some(safety) = ctx.service::<alembic_safety::tools::SafetyServices>() {
        return Ok(GuardRef::Shared(safety));
    }
    Ok(GuardRef::Own(service.path_guard()?))
}

/// Either the runtime's guard or the service's own.
pub(crate) enum GuardRef<'a> {
    Shared(Arc<alembic_safety::tools::SafetyServices>),
    Own(&'a PathGuard),
}

impl std::ops::Deref for GuardRef<'_> {
    type Target = PathGuard;
    fn deref(&self) -> &PathGuard {
        match self {
            GuardRef::Shared(s) => &s.guard,
            GuardRef::Own(g) => g,
        }
    }
}

/// Maps a knowledge error to the tool error a model should see.
pub(crate) fn tool_error(e: KnowledgeError) -> ToolError {
    match e {
        KnowledgeError::NotFound { id } => ToolError::NotFound(format!(
            "knowledge entry '{id}' (check the id with search_recipes or search_candidates)"
        )),
        e @ (KnowledgeError::UnknownValue { .. } | KnowledgeError::SelfEdge { .. }) => {
            ToolError::Invalid(e.to_string())
        }
        e => ToolError::failed(e.to_string()),
    }
}

/// Services created on demand, one per project root, for runtimes that registered none.
#[derive(Default)]
pub(crate) struct ServiceCache {
    by_root: Mutex<HashMap<PathBuf, Arc<KnowledgeService>>>,
}

impl ServiceCache {
    pub(crate) fn for_context(&self, ctx: &ToolContext) -> Arc<KnowledgeService> {
        if let Some(s) = ctx.service::<KnowledgeService>()
            && s.root() == ctx.project_root
        {
            return s;
        }
        let mut map = self.by_root.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(
            map.entry(ctx.project_root.clone())
                .or_insert_with(|| Arc::new(KnowledgeService::for_project(&ctx.project_root))),
        )
    }
}

/// A handler body: service, arguments and context in, output out.
pub(crate) type Body = fn(&KnowledgeService, &Value, &ToolContext) -> Result<ToolOutput, ToolError>;

/// Builds a tool whose handler runs `body` with the project's knowledge service.
pub(crate) fn tool(
    cache: &Arc<ServiceCache>,
    name: &str,
    description: &str,
    schema: Value,
    module: ToolModule,
    effect: EffectClass,
    body: Body,
) -> ToolDefinition {
    let cache = Arc::clone(cache);
    ToolDefinition::new(
        name,
        description,
        schema,
        module,
        effect,
        handler_fn(move |args, ctx| {
            let service = cache.for_context(&ctx);
            async move { body(&service, &args, &ctx) }
        }),
    )
}

/// Registers every knowledge tool.
pub fn register_tools(registry: &ToolRegistry) -> Result<(), RegistryError> {
    let cache = Arc::new(ServiceCache::default());
    for def in query::tools(&cache)
        .into_iter()
        .chain(lifecycle::tools(&cache))
        .chain(graph::tools(&cache))
        .chain(guard::tools(&cache))
        .chain(evolution::tools(&cache))
    {
        registry.register(def)?;
    }
    Ok(())
}

/// Names of every tool [`register_tools`] registers.
pub const TOOL_NAMES: &[&str] = &[
    "search_recipes",
    "search_candidates",
    "get_recipe_detail",
    "get_project_stats",
    "search_knowledge",
    "get_related_recipes",
    "knowledge_overview",
    "submit_knowledge",
    "submit_with_check",
    "approve_candidate",
    "reject_candidate",
    "publish_recipe",
    "deprecate_recipe",
    "update_recipe",
    "record_usage",
    "quality_score",
    "validate_candidate",
    "get_feedback_stats",
    "check_duplicate",
    "add_graph_edge",
    "list_guard_rules",
    "guard_check_code",
    "get_recommendations",
    "query_violations",
    "propose_evolution",
    "confirm_deprecation",
    "skip_evolution",
];
