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

/// The crates whose types front ends print or pass through. The CLI depends on this crate
/// (and the MCP server) only; it reaches data types through these paths and never wires a
/// service itself.
pub use alembic_agent as agent;
pub use alembic_base as base;
pub use alembic_bootstrap as bootstrap;
pub use alembic_code as code;
pub use alembic_forge as forge;
pub use alembic_knowledge as knowledge;
pub use alembic_llm as llm;
pub use alembic_memory as memory;
pub use alembic_safety as safety;
pub use alembic_skills as skills;
pub use alembic_store as store;
pub use alembic_team as team;
pub use alembic_tools as tools;

pub mod bootstrap_llm;
pub mod code_embedder;
pub mod config;
pub mod llm_provider;
pub mod mcp_config;
pub mod memory_config;
pub mod project_guard;
mod rebuild;
pub mod retract;
pub mod team_config;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use alembic_tools::{
    AuditError, AuditLog, Caller, Pipeline, PresetError, RegistryError, SafetyCheck, ToolOutcome,
    ToolRegistry,
};

pub use config::{ConfigError, DEFAULT_CONFIG, ProjectConfig};

/// The caller id of the CLI's state-changing commands in the audit log.
pub const CLI_CALLER: &str = "cli";

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("project directory {path} does not exist or is not a directory")]
    NoProject { path: PathBuf },
    #[error("{}", project_guard::explain(path, *why))]
    NotAProject {
        path: PathBuf,
        why: project_guard::NotAProject,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Preset(#[from] PresetError),
    #[error("cannot open the audit log: {0}")]
    Audit(#[from] AuditError),
    #[error("cannot register built-in tools: {0}")]
    Registry(#[from] RegistryError),
    #[error("cannot set up the agent: {0}")]
    Agent(#[from] alembic_agent::AgentError),
    #[error("{0}")]
    Setup(String),
    #[error("cannot write {path}: {message}")]
    Layout { path: PathBuf, message: String },
}

/// Everything needed to run tools for one project.
pub struct ProjectRuntime {
    pub root: PathBuf,
    pub config: ProjectConfig,
    pub registry: Arc<ToolRegistry>,
    services: ProjectServices,
    safety: Arc<dyn SafetyCheck>,
    audit: Option<Arc<AuditLog>>,
    forged_tools: Vec<String>,
    temporary: alembic_forge::TemporaryToolRegistry,
}

impl std::fmt::Debug for ProjectRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProjectRuntime")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// Typed handles to one project's services. Each tool is registered with the handle it needs,
/// so a missing service is a registration error, never a lookup that fails at call time.
#[derive(Clone)]
pub struct ProjectServices {
    /// Code index, graph and search; hybrid semantic search when `[memory] embedder` is set.
    pub code: Arc<alembic_code::CodeService>,
    /// The project's one persistent memory: the `[memory]` settings and the embedder resolved
    /// by [`memory_config::memory_embedder`]; opens `.alembic/alembic.db` on first use.
    pub memory: Arc<alembic_memory::tools::MemoryService>,
    /// The knowledge base; opens `.alembic/alembic.db` on first use.
    pub knowledge: Arc<alembic_knowledge::KnowledgeService>,
    /// PathGuard and command policy from the project's config.
    pub safety: Arc<alembic_safety::tools::SafetyServices>,
    /// Where agent runs attach their working memory (note_finding and friends find it here).
    pub loops: Arc<alembic_context::LoopDirectory>,
    /// Forged tools under `.alembic/tools/` and skills under `.alembic/skills/`.
    pub forge: Arc<alembic_forge::tools::ForgeService>,
    /// Cold-start analysis (`bootstrap_knowledge`, `alembic bootstrap`) over the code service,
    /// with the `[memory]` settings and the `[bootstrap]` dimensions of the config.
    pub bootstrap: Arc<alembic_bootstrap::Bootstrap>,
    /// The LLM provider of the ai-analysis tools, or why there is none
    /// ([`llm_provider::provider_slot`]).
    pub llm: alembic_knowledge::tools::ProviderSlot,
    /// The project's skills (`.alembic/skills/`) and the built-in ones.
    pub skills: Arc<alembic_skills::SkillService>,
    /// The audit log, read-only (`query_audit_log`); the writing side is the pipeline's sink.
    pub audit: Arc<alembic_tools::audit::AuditReader>,
}

impl std::fmt::Debug for ProjectServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProjectServices").finish_non_exhaustive()
    }
}

impl ProjectServices {
    /// Builds every service of the project at `root` (an absolute directory) from `config`.
    /// Nothing is written: stores open on first use.
    pub fn for_project(root: &Path, config: &ProjectConfig) -> Result<Self, RuntimeError> {
        let code_embedder = code_embedder::configured_embedder(config)?;
        let memory = memory_config::memory_settings(config)?;
        let memory_embedder = memory_config::memory_embedder(memory.embedder)?;
        let code = Arc::new(code_embedder::code_service(
            root,
            code_embedder,
            &config.index,
        )?);
        let knowledge = Arc::new(team_config::knowledge_service(root, config)?);
        let bootstrap = Arc::new(
            alembic_bootstrap::Bootstrap::new(
                root,
                Arc::clone(&code),
                memory.memory.clone(),
                config.bootstrap.clone(),
            )
            .publishing_to(Arc::clone(&knowledge)),
        );
        Ok(ProjectServices {
            code,
            memory: Arc::new(team_config::memory_service(
                root,
                config,
                memory.memory,
                memory_embedder,
            )?),
            knowledge,
            safety: Arc::new(
                alembic_safety::tools::SafetyServices::for_root(root)
                    .map_err(RuntimeError::Setup)?,
            ),
            loops: Arc::new(alembic_context::LoopDirectory::default()),
            forge: Arc::new(
                alembic_forge::tools::ForgeService::for_project(root).with_generate(
                    alembic_forge::generate::generate_enabled_here(config.section("forge")),
                ),
            ),
            bootstrap,
            llm: llm_provider::provider_slot(),
            skills: Arc::new(alembic_skills::SkillService::for_project(root)),
            audit: Arc::new(alembic_tools::audit::AuditReader::for_project(root)),
        })
    }
}

/// Registers every built-in tool, each with the service it needs. Each domain crate owns its
/// tools; this is the one list.
pub fn register_builtin_tools(
    registry: &ToolRegistry,
    services: &ProjectServices,
) -> Result<(), RegistryError> {
    alembic_tools::meta::register_tools(registry)?;
    alembic_code::register_tools(registry, Arc::clone(&services.code))?;
    alembic_safety::register_tools(registry, Arc::clone(&services.safety))?;
    alembic_context::tools::register_tools(registry, Arc::clone(&services.loops))?;
    alembic_memory::tools::register_tools(registry, Arc::clone(&services.memory))?;
    alembic_knowledge::register_tools(
        registry,
        Arc::clone(&services.knowledge),
        Arc::clone(&services.safety),
    )?;
    alembic_forge::tools::register_tools(registry, Arc::clone(&services.forge))?;
    alembic_bootstrap::register_tools(registry, Arc::clone(&services.bootstrap))?;
    alembic_knowledge::tools::register_analysis_tools(
        registry,
        Arc::clone(&services.knowledge),
        services.llm.clone(),
    )?;
    alembic_skills::register_tools(
        registry,
        Arc::clone(&services.skills),
        Arc::clone(&services.knowledge),
        Arc::clone(&services.memory),
    )?;
    alembic_tools::audit::register_tools(registry, Arc::clone(&services.audit))?;
    registry.register(rebuild::rebuild_index(services.clone()))?;
    Ok(())
}

impl ProjectRuntime {
    /// [`ProjectRuntime::open`] for a command a person or an IDE started: refuses a directory
    /// that is no project ([`project_guard::require_project`]) before anything is written.
    pub fn open_command(root: &Path) -> Result<Self, RuntimeError> {
        project_guard::require_project(root)?;
        Self::open(root)
    }

    /// [`ProjectRuntime::inspect`] for a command: refuses a directory that is no project, as
    /// [`ProjectRuntime::open_command`] does.
    pub fn inspect_command(root: &Path) -> Result<Self, RuntimeError> {
        project_guard::require_project(root)?;
        Self::inspect(root)
    }

    /// Opens a project for inspection only: no audit log is opened and nothing is written.
    pub fn inspect(root: &Path) -> Result<Self, RuntimeError> {
        let root = project_root(root)?;
        let config = ProjectConfig::load(&root)?;
        let services = ProjectServices::for_project(&root, &config)?;
        let registry = Arc::new(ToolRegistry::new());
        register_builtin_tools(&registry, &services)?;
        let temporary = services.forge.bind_registry(&registry);
        let forged = load_forged_tools(&temporary, &root, &config);
        let forged_tools = forged.saved.into_iter().chain(forged.temporary).collect();
        let safety = alembic_safety::PolicySafetyCheck::new(Arc::clone(&services.safety));
        Ok(ProjectRuntime {
            root,
            config,
            registry,
            services,
            safety: Arc::new(safety),
            audit: None,
            forged_tools,
            temporary,
        })
    }

    /// Opens a project to run tools: as [`ProjectRuntime::inspect`], plus the audit log
    /// (creating `.alembic/alembic.db` when needed). `.alembic/` always gets the
    /// `.gitignore` that `alembic init` writes, so the database never shows up as untracked.
    /// With `ALEMBIC_STATE_DIR` set the database is created beneath it instead and nothing
    /// is written in the checkout ([`alembic_store::local_state_dir`]).
    pub fn open(root: &Path) -> Result<Self, RuntimeError> {
        let absolute = project_root(root)?;
        // With ALEMBIC_STATE_DIR set the database lives there and the checkout is not written.
        if alembic_store::state_dir_override().is_none() {
            let state = absolute.join(alembic_store::STATE_DIR);
            alembic_store::layout::state_dir(&absolute).map_err(|e| RuntimeError::Layout {
                path: state.clone(),
                message: e.to_string(),
            })?;
            alembic_store::layout::ensure_gitignore(&absolute).map_err(|e| {
                RuntimeError::Layout {
                    path: state.join(".gitignore"),
                    message: e.to_string(),
                }
            })?;
        }
        let mut rt = Self::inspect(root)?;
        rt.audit = Some(Arc::new(AuditLog::open_project(&rt.root)?));
        Ok(rt)
    }

    /// A caller with the allowlist of `preset` (the config's default preset when `None`),
    /// plus the tools the project forged and saved and those `forge_tool` forged for caller
    /// `id`. Adding those grants nothing new: each of their steps is a nested call checked
    /// against this same allowlist.
    pub fn caller(&self, id: &str, preset: Option<&str>) -> Result<Caller, RuntimeError> {
        let preset = preset.unwrap_or(self.config.default_preset());
        let mut allowlist = self.config.presets.allowlist(preset)?;
        for name in &self.forged_tools {
            allowlist.insert(name.clone());
        }
        let allowlist = self.services.forge.grants().widen(id, &allowlist);
        Ok(Caller::new(id, allowlist))
    }

    /// Names of the forged tools loaded from `.alembic/tools/`.
    pub fn forged_tools(&self) -> &[String] {
        &self.forged_tools
    }

    /// The project's temporary forged tools (reloaded from `.alembic/tools/.temporary/`, and
    /// those forged during this process). A tool expires when it is next called or when
    /// [`alembic_forge::TemporaryToolRegistry::cleanup`] runs; a long-lived front end (the MCP
    /// server) runs the cleanup on a timer so that an expiry reaches its clients.
    pub fn temporary_tools(&self) -> &alembic_forge::TemporaryToolRegistry {
        &self.temporary
    }

    /// A pipeline over the built-in tools with the project's safety policy and audit log.
    pub fn pipeline(&self) -> Arc<Pipeline> {
        self.pipeline_builder().build()
    }

    /// The builder, for callers that add their own middlewares (the agent loop, MCP). Every
    /// pipeline retracts the memories derived from an entry a reviewer rejects or deprecates
    /// ([`retract`]).
    pub fn pipeline_builder(&self) -> alembic_tools::PipelineBuilder {
        let retract = retract::RetractDerivedMemories::new(
            Arc::clone(&self.services.knowledge),
            Arc::clone(&self.services.memory),
        );
        let mut b = Pipeline::builder(Arc::clone(&self.registry), self.root.clone())
            .safety(Arc::clone(&self.safety))
            .middleware(Arc::new(retract));
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
        Some(Arc::clone(&self.services.loops))
    }

    /// Typed handles to the project's services.
    pub fn services(&self) -> &ProjectServices {
        &self.services
    }

    /// The project's safety policy, for callers that wrap it (the agent runtime).
    pub fn safety(&self) -> Arc<dyn SafetyCheck> {
        Arc::clone(&self.safety)
    }

    /// Runs `tool` for the person at the command line: caller [`CLI_CALLER`], every registered
    /// tool allowed (a person is the reviewer who may approve, publish or forget), through the
    /// whole pipeline, so the change is validated, policy-checked and audited like an agent's
    /// call. The CLI's state-changing commands go through here; reads may use the services.
    pub async fn call_as_cli(&self, tool: &str, args: serde_json::Value) -> ToolOutcome {
        let caller = Caller::new(CLI_CALLER, alembic_tools::Allowlist::All);
        self.pipeline()
            .execute(alembic_tools::ToolCall::new(tool, args, caller))
            .await
    }

    /// The agent for this project: `provider` as its model, a pipeline with the project's
    /// policy, audit log and the working-memory middlewares, and the project's one persistent
    /// memory (the store the memory tools and the CLI use, with the `[memory]` settings). The
    /// agent options take `[memory] max_budget_tokens` (when they set no cap themselves) and
    /// `extract_from_conversations` (which can only switch extraction off).
    pub fn agent(
        &self,
        provider: Arc<dyn alembic_llm::LlmProvider>,
        options: alembic_agent::AgentOptions,
    ) -> Result<alembic_agent::AgentRuntime, RuntimeError> {
        self.agent_on(self.pipeline_builder(), provider, options)
    }

    /// The LLM analyser of `alembic bootstrap` ([`bootstrap_llm`]): the project's agent on the
    /// configured provider, whose pipeline also stages the producers' submissions so that the
    /// bootstrap runner writes them with each dimension's checkpoint. `None` when no provider
    /// is configured (the deterministic path then applies).
    pub fn bootstrap_analyser(
        &self,
        options: alembic_agent::AgentOptions,
    ) -> Result<Option<bootstrap_llm::LlmAnalyser>, RuntimeError> {
        let Ok(provider) = &self.services.llm else {
            return Ok(None);
        };
        let staging = Arc::new(bootstrap_llm::StagedSubmissions::new(
            Arc::clone(&self.services.knowledge),
            Arc::clone(&self.services.loops),
        ));
        let builder = self
            .pipeline_builder()
            .middleware(Arc::clone(&staging) as Arc<dyn alembic_tools::Middleware>);
        let agent = self.agent_on(builder, Arc::clone(provider), options)?;
        Ok(Some(bootstrap_llm::LlmAnalyser::new(agent, staging)))
    }

    fn agent_on(
        &self,
        builder: alembic_tools::PipelineBuilder,
        provider: Arc<dyn alembic_llm::LlmProvider>,
        mut options: alembic_agent::AgentOptions,
    ) -> Result<alembic_agent::AgentRuntime, RuntimeError> {
        let settings = memory_config::memory_settings(&self.config)?.agent;
        if options.memory_budget_cap.is_none() {
            options.memory_budget_cap = settings.max_budget_tokens;
        }
        options.extract_from_conversations &= settings.extract_from_conversations;
        let tools = alembic_agent::AgentTools::build(
            builder,
            Arc::clone(&self.services.loops),
            self.safety(),
            self.config.presets.clone(),
        )?
        .with_grants(self.services.forge.grants());
        if self.services.forge.generate_allowed() {
            let generator = alembic_forge::LlmCodeGenerator::new(Arc::clone(&provider));
            self.services.forge.set_generator(Arc::new(generator));
        }
        let memory = alembic_agent::SharedMemory::new(Arc::clone(&self.services.memory));
        Ok(alembic_agent::AgentRuntime::new(
            provider,
            tools,
            Some(Arc::new(memory)),
            options,
        ))
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

/// Registers the project's saved forged tools (`.alembic/tools/`, see `alembic forge`) through
/// the project's TTL registry (`ProjectServices.forge`), so temporary ones expire. A broken file
/// is logged and skipped, so one bad tool never stops the runtime; a forged tool never replaces
/// a built-in.
pub fn load_forged_tools(
    temporary: &alembic_forge::TemporaryToolRegistry,
    root: &Path,
    config: &ProjectConfig,
) -> alembic_forge::store::LoadReport {
    let generate = alembic_forge::generate::generate_enabled_here(config.section("forge"));
    let Ok(registry) = temporary.registry() else {
        return alembic_forge::store::LoadReport::default();
    };
    let report = alembic_forge::store::load_into(&registry, temporary, root, generate);
    for error in &report.errors {
        tracing::warn!("forged tool not loaded: {error}");
    }
    report
}
