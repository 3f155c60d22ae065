//! [`MemoryService`]: the project's one persistent memory, shared by the memory tools, the
//! CLI's reads and the agent loop.
//!
//! The store opens `.alembic/alembic.db` on first use, so a runtime that only lists tools
//! writes nothing. The embedder is built the first time a caller may compare vectors
//! ([`MemoryService::with_store`]); [`MemoryService::read`] never builds it, so listing or
//! exporting memories does not load a model.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use alembic_tools::ToolError;

use crate::{
    Embedder, EmbedderConfig, MemoryBackend, MemoryConfig, MemoryError, PersistentMemory,
    build_embedder,
};

/// Opens the team store (given the embedder to use); the error names the server and cause.
pub type TeamOpener =
    Box<dyn Fn(Option<Arc<dyn Embedder>>) -> Result<Box<dyn MemoryBackend>, String> + Send + Sync>;

/// The project's persistent memory as a shared service, opened on first use.
pub struct MemoryService {
    root: PathBuf,
    config: MemoryConfig,
    embedder: EmbedderConfig,
    store: OnceLock<Result<Mutex<OpenStore>, String>>,
    built_embedder: OnceLock<Option<Arc<dyn Embedder>>>,
    /// With a team configured: team-scoped memories live in this store, opened on first use
    /// (so a server that is down fails team work only, never local work).
    team: Option<TeamStore>,
}

struct TeamStore {
    /// Who it is, for messages ("team platform on db:5432/alembic").
    label: String,
    open: TeamOpener,
    store: Mutex<Option<OpenTeam>>,
}

/// The open team store and whether the configured embedder was attached to it yet (a store
/// opened for a list is not given one, so listing never loads a model).
struct OpenTeam {
    store: Box<dyn MemoryBackend>,
    embedder_attached: bool,
}

/// The open store and whether the configured embedder was attached to it yet.
struct OpenStore {
    memory: PersistentMemory,
    embedder_attached: bool,
}

impl std::fmt::Debug for MemoryService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryService")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl MemoryService {
    /// The memory of the project at `root`, opened when a tool first needs it.
    pub fn for_project(root: &Path, config: MemoryConfig) -> Self {
        MemoryService {
            root: root.to_path_buf(),
            config,
            embedder: EmbedderConfig::None,
            store: OnceLock::new(),
            built_embedder: OnceLock::new(),
            team: None,
        }
    }

    /// Keeps team-scoped memories in the store `open` returns (see [`Self::with_team_store`]).
    /// A failed open is retried at the next team call, so a server that comes back is used.
    pub fn with_team(mut self, label: impl Into<String>, open: TeamOpener) -> Self {
        self.team = Some(TeamStore {
            label: label.into(),
            open,
            store: Mutex::new(None),
        });
        self
    }

    /// The team store's label when a team is configured.
    pub fn team_label(&self) -> Option<&str> {
        self.team.as_ref().map(|t| t.label.as_str())
    }

    /// Runs `f` on the team store, opening it first if needed: `Ok(None)` when no team is
    /// configured, an error naming the server and the cause when it cannot be reached.
    pub fn with_team_store<T>(
        &self,
        f: impl FnOnce(&mut dyn MemoryBackend) -> Result<T, MemoryError>,
    ) -> Result<Option<T>, ToolError> {
        self.on_team_store(true, f)
    }

    /// Runs a read-only `f` on the team store like [`Self::with_team_store`], but never
    /// builds the embedder (listing team memories does not load a model).
    pub fn read_team<T>(
        &self,
        f: impl FnOnce(&dyn MemoryBackend) -> Result<T, MemoryError>,
    ) -> Result<Option<T>, ToolError> {
        self.on_team_store(false, |store| f(store))
    }

    fn on_team_store<T>(
        &self,
        embed: bool,
        f: impl FnOnce(&mut dyn MemoryBackend) -> Result<T, MemoryError>,
    ) -> Result<Option<T>, ToolError> {
        let Some(team) = &self.team else {
            return Ok(None);
        };
        let mut slot = team.store.lock().unwrap_or_else(|e| e.into_inner());
        let open = match slot.as_mut() {
            Some(open) => open,
            None => {
                let embedder = if embed {
                    self.shared_embedder()
                } else {
                    self.built_embedder.get().cloned().flatten()
                };
                let store = (team.open)(embedder).map_err(ToolError::failed)?;
                slot.insert(OpenTeam {
                    store,
                    embedder_attached: embed,
                })
            }
        };
        if embed && !open.embedder_attached {
            open.embedder_attached = true;
            open.store.set_embedder(self.shared_embedder());
        }
        f(open.store.as_mut())
            .map(Some)
            .map_err(|e| ToolError::failed(format!("{}: {e}", team.label)))
    }

    /// The configured embedder, built once and shared by the local and the team store. If
    /// it cannot be built, memory works lexically and the reason is logged.
    fn shared_embedder(&self) -> Option<Arc<dyn Embedder>> {
        self.built_embedder
            .get_or_init(|| {
                build_embedder(&self.embedder).unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "memory embedder unavailable; memory is lexical");
                    None
                })
            })
            .clone()
    }

    /// Embeds memories and queries with this embedder (built when a writer or a search first
    /// needs it). If it cannot be built, memory works lexically and the reason is logged.
    pub fn with_embedder_config(mut self, embedder: EmbedderConfig) -> Self {
        self.embedder = embedder;
        self
    }

    /// A service over an already open store (tests, embedders); its embedder is kept as is.
    pub fn from_store(memory: PersistentMemory) -> Self {
        let service = MemoryService {
            root: PathBuf::new(),
            config: memory.config().clone(),
            embedder: EmbedderConfig::None,
            store: OnceLock::new(),
            built_embedder: OnceLock::new(),
            team: None,
        };
        let open = OpenStore {
            memory,
            embedder_attached: true,
        };
        let _ = service.store.set(Ok(Mutex::new(open)));
        service
    }

    /// The `[memory]` settings this service applies.
    pub fn config(&self) -> &MemoryConfig {
        &self.config
    }

    /// The embedder this service attaches to its store.
    pub fn embedder_config(&self) -> &EmbedderConfig {
        &self.embedder
    }

    /// Runs `f` with the store and its embedder, opening and building them first if needed.
    /// The tools, the CLI and the agent loop all share this one store.
    pub fn with_store<T>(
        &self,
        f: impl FnOnce(&mut PersistentMemory) -> Result<T, MemoryError>,
    ) -> Result<T, ToolError> {
        let mut open = self.lock()?;
        if !open.embedder_attached {
            open.embedder_attached = true;
            open.memory.set_embedder(self.shared_embedder());
        }
        f(&mut open.memory).map_err(|e| ToolError::failed(e.to_string()))
    }

    /// Runs a read-only `f` with the store, opening it first if needed but never building
    /// the embedder. Its result is returned as is; only opening the store can fail here.
    pub fn read<T>(&self, f: impl FnOnce(&PersistentMemory) -> T) -> Result<T, ToolError> {
        let open = self.lock()?;
        Ok(f(&open.memory))
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, OpenStore>, ToolError> {
        let store = self.store.get_or_init(|| {
            PersistentMemory::open_project(&self.root, self.config.clone())
                .map(|memory| {
                    Mutex::new(OpenStore {
                        memory,
                        embedder_attached: false,
                    })
                })
                .map_err(|e| format!("cannot open the persistent memory: {e}"))
        });
        let store = store.as_ref().map_err(|e| ToolError::failed(e.clone()))?;
        Ok(store.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
