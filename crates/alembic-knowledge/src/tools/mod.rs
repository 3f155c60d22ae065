//! The knowledge tools: `query` (6), `lifecycle` (10), `knowledge-graph` (2), `guard` (4),
//! `evolution-tools` (3), the composites `submit_with_check`, `knowledge_overview` and
//! `analyze_code`, the infrastructure tool `graph_impact_analysis`, the team operator
//! tools (`team_knowledge_status|push|pull`, [`TEAM_TOOL_NAMES`]) and the operator tool
//! `set_guard_overrides`; and, registered apart
//! with the project's LLM provider, the `ai-analysis` tools `enrich_candidate` and
//! `refine_bootstrap_candidates` ([`register_analysis_tools`]).
//!
//! Each tool's arguments are a struct (see [`args`] for the shapes they share) and its
//! handler receives the [`KnowledgeService`] and the runtime's [`SafetyServices`] it was
//! registered with. The service opens `.alembic/alembic.db` on first use, so a runtime that
//! only lists tools writes nothing. Every write records the caller's id as "who" in the
//! entry's history.

mod analysis;
mod args;
mod composite;
mod evolution;
mod graph;
mod guard;
mod lifecycle;
mod overrides;
mod query;
mod submit;
mod team;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use alembic_safety::PathGuard;
use alembic_safety::tools::SafetyServices;
use alembic_tools::{
    RegistryError, ToolArgs, ToolContext, ToolDefinition, ToolError, ToolOutput, ToolRegistry,
    TypedTool,
};

pub use analysis::{ANALYSIS_TOOL_NAMES, ProviderSlot, register_analysis_tools};
pub use submit::check_submission;
pub use team::{MoveReport, Revise, TEAM_TOOL_NAMES, register_team_tools};

use crate::backend::KnowledgeBackend;
use crate::error::KnowledgeError;
use crate::guard::{GuardRules, PROJECT_RULES_PATH};
use crate::store::KnowledgeStore;

/// Opens the team's knowledge store; the error names the server and the cause.
pub type KnowledgeOpener = Box<dyn Fn() -> Result<Box<dyn KnowledgeBackend>, String> + Send + Sync>;

/// The team store of a [`KnowledgeService`]: opened on first use, retried after a failure.
struct TeamSlot {
    label: String,
    open: KnowledgeOpener,
    store: Mutex<Option<Box<dyn KnowledgeBackend>>>,
}

/// The project's knowledge base as a shared service: the project database (opened on first
/// use) or, with a team configured ([`KnowledgeService::with_team`]), the team's store, which
/// every tool, the CLI and MCP then read and write.
pub struct KnowledgeService {
    root: PathBuf,
    store: OnceLock<Result<Mutex<Box<dyn KnowledgeBackend>>, String>>,
    team: Option<TeamSlot>,
}

impl std::fmt::Debug for KnowledgeService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KnowledgeService")
            .field("root", &self.root)
            .field("team", &self.team_label())
            .finish_non_exhaustive()
    }
}

impl KnowledgeService {
    /// The knowledge base of the project at `root`, opened when a tool first needs it.
    pub fn for_project(root: &Path) -> Self {
        KnowledgeService {
            root: root.to_path_buf(),
            store: OnceLock::new(),
            team: None,
        }
    }

    /// A service over an already open store (tests, in-memory runs).
    pub fn from_store(root: &Path, store: impl KnowledgeBackend + 'static) -> Self {
        let service = Self::for_project(root);
        let _ = service.store.set(Ok(Mutex::new(Box::new(store))));
        service
    }

    /// Keeps the knowledge base in the store `open` returns (the team's), opened on first
    /// use, so a server that is down fails knowledge calls only, naming it, and never stops
    /// other work. A failed open is retried at the next call.
    pub fn with_team(mut self, label: impl Into<String>, open: KnowledgeOpener) -> Self {
        self.team = Some(TeamSlot {
            label: label.into(),
            open,
            store: Mutex::new(None),
        });
        self
    }

    /// Whether the team's server answers now, checked on a connection of its own (bounded by
    /// the connect timeout) without holding the service's store, so a poller that asks
    /// while the server is down never makes a tool call wait; `None` without a team.
    pub fn probe_team(&self) -> Option<Result<(), String>> {
        let team = self.team.as_ref()?;
        Some((team.open)().map(drop))
    }

    /// The team store's label when a team is configured.
    pub fn team_label(&self) -> Option<&str> {
        self.team.as_ref().map(|t| t.label.as_str())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Runs `f` with the knowledge base: the team's store when a team is configured, else
    /// the project database (opened first if needed).
    pub fn with<T>(
        &self,
        f: impl FnOnce(&mut dyn KnowledgeBackend) -> Result<T, KnowledgeError>,
    ) -> Result<T, ToolError> {
        match self.team_answer(f) {
            TeamAnswer::NoTeam(f) => self.with_local(f),
            TeamAnswer::Done(result) => result,
        }
    }

    /// Runs `f` with the project database's knowledge base, whether or not a team is
    /// configured (`alembic team push|pull`, bootstrap's local transaction).
    pub fn with_local<T>(
        &self,
        f: impl FnOnce(&mut dyn KnowledgeBackend) -> Result<T, KnowledgeError>,
    ) -> Result<T, ToolError> {
        let store = self.store.get_or_init(|| {
            KnowledgeStore::open_project(&self.root)
                .map(|s| Mutex::new(Box::new(s) as Box<dyn KnowledgeBackend>))
                .map_err(|e| e.to_string())
        });
        let store = store.as_ref().map_err(|e| ToolError::failed(e.clone()))?;
        let mut guard = store.lock().unwrap_or_else(PoisonError::into_inner);
        f(guard.as_mut()).map_err(tool_error)
    }

    /// Runs `f` with the team's store: `Ok(None)` when no team is configured.
    pub fn with_team_store<T>(
        &self,
        f: impl FnOnce(&mut dyn KnowledgeBackend) -> Result<T, KnowledgeError>,
    ) -> Result<Option<T>, ToolError> {
        match self.team_answer(f) {
            TeamAnswer::NoTeam(_) => Ok(None),
            TeamAnswer::Done(result) => result.map(Some),
        }
    }

    fn team_answer<T, F>(&self, f: F) -> TeamAnswer<F, T>
    where
        F: FnOnce(&mut dyn KnowledgeBackend) -> Result<T, KnowledgeError>,
    {
        let Some(team) = &self.team else {
            return TeamAnswer::NoTeam(f);
        };
        let mut slot = team.store.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            match (team.open)() {
                Ok(store) => *slot = Some(store),
                Err(e) => return TeamAnswer::Done(Err(ToolError::failed(e))),
            }
        }
        let Some(store) = slot.as_mut() else {
            return TeamAnswer::Done(Err(ToolError::failed(format!(
                "{}: the store is not open",
                team.label
            ))));
        };
        TeamAnswer::Done(f(store.as_mut()).map_err(tool_error))
    }

    /// Built-in guard rules overlaid with the store's overrides (the team's, when a team is
    /// configured) and the project's `.alembic/guard-rules.toml` (read through `guard`),
    /// plus the guards of published rule entries. Read on every call, so edits apply at once.
    pub fn guard_rules(&self, guard: &PathGuard) -> Result<GuardRules, ToolError> {
        let project = match guard.read_to_string(PROJECT_RULES_PATH) {
            Ok(text) => Some(text),
            Err(alembic_safety::PathError::NotFound { .. }) => None,
            Err(e) => return Err(ToolError::failed(format!("{PROJECT_RULES_PATH}: {e}"))),
        };
        let filter = crate::store::Filter {
            statuses: vec![crate::model::Status::Published],
            kind: Some(crate::model::Kind::Rule),
            limit: 100_000,
            ..crate::store::Filter::default()
        };
        let (stored, entries) = self.with(|kb| Ok((kb.guard_overrides()?, kb.list(&filter)?)))?;
        let rules =
            GuardRules::load_layers(stored.as_deref(), project.as_deref()).map_err(tool_error)?;
        Ok(rules.with_entries(&entries))
    }
}

/// Either the team store's answer or, without a team, the closure back for the local store.
enum TeamAnswer<F, T> {
    NoTeam(F),
    Done(Result<T, ToolError>),
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

/// What every knowledge handler is registered with: the knowledge base, and the runtime's
/// safety services (whose PathGuard, with the project's configured protections, confines the
/// files the guard tools read).
#[derive(Clone)]
pub(crate) struct Knowledge {
    pub(crate) kb: Arc<KnowledgeService>,
    pub(crate) safety: Arc<SafetyServices>,
}

/// A handler body: state, typed arguments and context in, output out.
pub(crate) type Body<A> = fn(&Knowledge, A, &ToolContext) -> Result<ToolOutput, ToolError>;

/// Binds `body` as the handler of `tool`, with the knowledge state.
pub(crate) fn bind<A: ToolArgs>(
    tool: TypedTool<A>,
    state: &Knowledge,
    body: Body<A>,
) -> ToolDefinition {
    tool.handler(state.clone(), move |state, args, ctx| async move {
        body(&state, args, &ctx)
    })
}

/// Registers every knowledge tool over `kb`, confining file reads with `safety`'s PathGuard.
pub fn register_tools(
    registry: &ToolRegistry,
    kb: Arc<KnowledgeService>,
    safety: Arc<SafetyServices>,
) -> Result<(), RegistryError> {
    let state = Knowledge { kb, safety };
    for def in query::tools(&state)
        .into_iter()
        .chain(lifecycle::tools(&state))
        .chain(graph::tools(&state))
        .chain(guard::tools(&state))
        .chain(evolution::tools(&state))
        .chain(composite::tools(&state))
    {
        registry.register(def)?;
    }
    registry.register(overrides::overrides_tool(Arc::clone(&state.kb)))?;
    team::register_team_tools(registry, state.kb)
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
    "graph_impact_analysis",
    "list_guard_rules",
    "guard_check_code",
    "get_recommendations",
    "query_violations",
    "propose_evolution",
    "confirm_deprecation",
    "skip_evolution",
    "analyze_code",
];
