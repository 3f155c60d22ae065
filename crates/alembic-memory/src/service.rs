//! [`MemoryService`]: the project's one persistent memory, shared by the memory tools, the
//! CLI's reads and the agent loop.
//!
//! The store opens `.alembic/alembic.db` on first use, so a runtime that only lists tools
//! writes nothing. The embedder is built the first time a caller may compare vectors
//! ([`MemoryService::with_store`]); [`MemoryService::read`] never builds it, so listing or
//! exporting memories does not load a model.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use alembic_tools::ToolError;

use crate::{EmbedderConfig, MemoryConfig, MemoryError, PersistentMemory, build_embedder};

/// The project's persistent memory as a shared service, opened on first use.
pub struct MemoryService {
    root: PathBuf,
    config: MemoryConfig,
    embedder: EmbedderConfig,
    store: OnceLock<Result<Mutex<OpenStore>, String>>,
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
        }
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
            let embedder = build_embedder(&self.embedder).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "memory embedder unavailable; memory is lexical");
                None
            });
            open.memory.set_embedder(embedder);
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
