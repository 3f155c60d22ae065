//! One place that turns a project directory into a working tool runtime: configuration,
//! the registry with every built-in tool, shared services, the safety policy and the audit
//! log. The CLI and the MCP server both start here, so they expose the same tools under the
//! same rules.
//!
//! ```no_run
//! use alembic_runtime::ProjectRuntime;
//! let rt = ProjectRuntime::open(std::path::Path::new(".")).unwrap();
//! let caller = rt.caller("cli", Some("chat")).unwrap();
//! let pipeline = rt.pipeline();
//! # let _ = (caller, pipeline);
//! ```

pub mod code_embedder;
pub mod config;
pub mod memory_config;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use alembic_tools::{
    AuditError, AuditLog, Caller, Pipeline, PresetError, RegistryError, SafetyCheck, Services,
    ToolRegistry,
};

pub use config::{ConfigError, DEFAULT_CONFIG, ProjectConfig};

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("project directory {path} does not exist or is not a directory")]
    NoProject { path: PathBuf },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Preset(#[from] PresetError),
    #[error("cannot open the audit log: {0}")]
    Audit(#[from] AuditError),
    #[error("cannot register built-in tools: {0}")]
    Registry(#[from] RegistryError),
    #[error("{0}")]
    Setup(String),
}

/// Everything needed to run tools for one project.
pub struct ProjectRuntime {
    pub root: PathBuf,
    pub config: ProjectConfig,
    pub registry: Arc<ToolRegistry>,
    services: Services,
    safety: Arc<dyn SafetyCheck>,
    audit: Option<Arc<AuditLog>>,
    forged_tools: Vec<String>,
}

impl std::fmt::Debug for ProjectRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProjectRuntime")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// Registers every built-in tool. Each domain crate owns its tools; this is the one list.
pub fn register_builtin_tools(registry: &ToolRegistry) -> Result<(), RegistryError> {
    alembic_tools::meta::register_tools(registry)?;
    alembic_code::register_tools(registry)?;
    alembic_safety::register_tools(registry)?;
    alembic_context::tools::register_tools(registry)?;
    alembic_memory::tools::register_tools(registry)?;
    alembic_knowledge::register_tools(registry)?;
    Ok(())
}

/// Shared state handed to tool handlers. Each domain crate adds what its tools need.
fn build_services(root: &Path, config: &ProjectConfig) -> Result<Services, RuntimeError> {
    let mut builder = Services::builder();
    // Code intelligence; `semantic_search_code` is hybrid when the config chooses an embedder.
    let code_embedder = code_embedder::configured_embedder(config)?;
    builder.add(Arc::new(code_embedder::code_service(root, code_embedder)?));
    // Agent runs attach their working memory here; the memory tools (note_finding…) find it.
    builder.add(Arc::new(alembic_context::LoopDirectory::default()));
    // The memory tools' store, with the `[memory]` settings; it opens .alembic/alembic.db
    // on first use, not here. Without an `embedder` key the tools are lexical.
    let memory = memory_config::memory_settings(config)?;
    builder.add(Arc::new(
        alembic_memory::tools::MemoryService::for_project(root, memory.memory)
            .with_embedder_config(memory.embedder.unwrap_or_default()),
    ));
    // The knowledge base (candidates, recipes, guard runs); opens .alembic/alembic.db on first use.
    builder.add(Arc::new(alembic_knowledge::KnowledgeService::for_project(
        root,
    )));
    Ok(builder.build())
}

impl ProjectRuntime {
    /// Opens a project for inspection only: no audit log is opened and nothing is written.
    pub fn inspect(root: &Path) -> Result<Self, RuntimeError> {
        let root = project_root(root)?;
        let config = ProjectConfig::load(&root)?;
        let registry = Arc::new(ToolRegistry::new());
        register_builtin_tools(&registry)?;
        let forged = load_forged_tools(&registry, &root, &config);
        let forged_tools = forged.saved.into_iter().chain(forged.temporary).collect();
        let services = build_services(&root, &config)?;
        let safety =
            alembic_safety::PolicySafetyCheck::for_root(&root).map_err(RuntimeError::Setup)?;
        Ok(ProjectRuntime {
            root,
            config,
            registry,
            services,
            safety: Arc::new(safety),
            audit: None,
            forged_tools,
        })
    }

    /// Opens a project to run tools: as [`ProjectRuntime::inspect`], plus the audit log
    /// (creating `.alembic/alembic.db` when needed).
    pub fn open(root: &Path) -> Result<Self, RuntimeError> {
        let mut rt = Self::inspect(root)?;
        rt.audit = Some(Arc::new(AuditLog::open_project(&rt.root)?));
        Ok(rt)
    }

    /// A caller with the allowlist of `preset` (the config's default preset when `None`),
    /// plus the tools the project forged and saved. Adding those grants nothing new: each of
    /// their steps is a nested call checked against this same allowlist.
    pub fn caller(&self, id: &str, preset: Option<&str>) -> Result<Caller, RuntimeError> {
        let preset = preset.unwrap_or(self.config.default_preset());
        let mut allowlist = self.config.presets.allowlist(preset)?;
        for name in &self.forged_tools {
            allowlist.insert(name.clone());
        }
        Ok(Caller::new(id, allowlist))
    }

    /// Names of the forged tools loaded from `.alembic/tools/`.
    pub fn forged_tools(&self) -> &[String] {
        &self.forged_tools
    }

    /// A pipeline over the built-in tools with the project's safety policy and audit log.
    pub fn pipeline(&self) -> Arc<Pipeline> {
        self.pipeline_builder().build()
    }

    /// The builder, for callers that add their own middlewares (the agent loop, MCP).
    pub fn pipeline_builder(&self) -> alembic_tools::PipelineBuilder {
        let mut b = Pipeline::builder(Arc::clone(&self.registry), self.root.clone())
            .services(self.services.clone())
            .safety(Arc::clone(&self.safety));
        if let Some(secs) = self.config.tools.timeout_secs {
            b = b.default_timeout(Duration::from_secs(secs.max(1)));
        }
        if let Some(audit) = &self.audit {
            b = b.audit(Arc::clone(audit) as Arc<dyn alembic_tools::AuditSink>);
        }
        b
    }

    /// The directory agent runs attach their working memory to (a service of every pipeline).
    pub fn loop_directory(&self) -> Option<Arc<alembic_context::LoopDirectory>> {
        self.services.get::<alembic_context::LoopDirectory>()
    }

    /// The project's safety policy, for callers that wrap it (the agent runtime).
    pub fn safety(&self) -> Arc<dyn SafetyCheck> {
        Arc::clone(&self.safety)
    }

    /// Waits until every audit record written so far is on disk.
    pub fn flush_audit(&self) -> Result<(), RuntimeError> {
        match &self.audit {
            Some(a) => a.flush().map_err(RuntimeError::from),
            None => Ok(()),
        }
    }
}

fn project_root(root: &Path) -> Result<PathBuf, RuntimeError> {
    if !root.is_dir() {
        return Err(RuntimeError::NoProject {
            path: root.to_path_buf(),
        });
    }
    // An absolute root keeps audit records and PathGuard independent of the process cwd.
    std::path::absolute(root).map_err(|_| RuntimeError::NoProject {
        path: root.to_path_buf(),
    })
}

/// Registers the project's saved forged tools (`.alembic/tools/`, see `alembic forge`). A broken
/// file is logged and skipped, so one bad tool never stops the runtime; a forged tool never
/// replaces a built-in.
pub fn load_forged_tools(
    registry: &Arc<ToolRegistry>,
    root: &Path,
    config: &ProjectConfig,
) -> alembic_forge::store::LoadReport {
    let temporary = alembic_forge::TemporaryToolRegistry::new(Arc::clone(registry));
    let generate = alembic_forge::generate::generate_enabled_here(config.section("forge"));
    let report = alembic_forge::store::load_into(registry, &temporary, root, generate);
    for error in &report.errors {
        tracing::warn!("forged tool not loaded: {error}");
    }
    report
}
