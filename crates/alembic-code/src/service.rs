//! [`CodeService`]: the shared, thread-safe front of the index that tool handlers use.
//!
//! Every query first refreshes the index (a walk plus `stat`s when nothing changed), so
//! answers follow the files on disk. After a change the graph is updated incrementally
//! (only what the changed files reach; see [`ProjectGraph::update`]) when it is next
//! asked for; the semantic index is rebuilt, re-embedding only chunks whose text changed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use alembic_safety::PathGuard;

use crate::graph::ProjectGraph;
use crate::index::{CodeIndex, IndexChanges, IndexError, IndexPlan, IndexReport, Progress};
use crate::semantic::{CodeEmbedder, SemanticIndex};
use crate::summary::FileSummary;

struct State {
    index: Option<CodeIndex>,
    graph: Option<Arc<ProjectGraph>>,
    /// Changes the graph has not seen yet. Invariant: `previous` holds, per path, the
    /// summary the graph was last updated with (none for files it never saw).
    pending: IndexChanges,
    semantic: Option<Arc<SemanticIndex>>,
    /// The semantic index before the last change, whose vectors the next build reuses.
    stale_semantic: Option<Arc<SemanticIndex>>,
    graph_build_ms: u64,
}

/// Code intelligence for one project root, shared by the tools.
pub struct CodeService {
    root: PathBuf,
    guard: PathGuard,
    embedder: Option<Arc<dyn CodeEmbedder>>,
    state: Mutex<State>,
}

impl std::fmt::Debug for CodeService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeService")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl CodeService {
    /// A service for `root`; the index database is opened on first use.
    pub fn new(root: &Path) -> Result<CodeService, IndexError> {
        let guard = PathGuard::new(root).map_err(|source| IndexError::Guard {
            root: root.to_path_buf(),
            source,
        })?;
        Ok(CodeService {
            root: root.to_path_buf(),
            guard,
            embedder: None,
            state: Mutex::new(State {
                index: None,
                graph: None,
                pending: IndexChanges::default(),
                semantic: None,
                stale_semantic: None,
                graph_build_ms: 0,
            }),
        })
    }

    /// Uses `embedder` for `semantic_search_code` (hybrid mode).
    pub fn with_embedder(mut self, embedder: Arc<dyn CodeEmbedder>) -> CodeService {
        self.embedder = Some(embedder);
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn guard(&self) -> &PathGuard {
        &self.guard
    }

    pub fn embedder(&self) -> Option<&dyn CodeEmbedder> {
        self.embedder.as_deref()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep using it.
        alembic_base::lock(&self.state)
    }

    /// Refreshes the index from disk and drops derived data if anything changed.
    pub fn refresh(&self) -> Result<IndexReport, IndexError> {
        let mut state = self.lock();
        refresh_locked(&self.root, &mut state)
    }

    /// What a refresh would change now; reads no file and writes nothing.
    pub fn plan(&self) -> Result<IndexPlan, IndexError> {
        let mut state = self.lock();
        Ok(open_locked(&self.root, &mut state)?.plan())
    }

    /// Refreshes the index (parsing every file again when `force`) with `progress`, and drops
    /// the graph and semantic index built from the old summaries (with `force` the semantic
    /// index reuses no vector, so every chunk is embedded again).
    pub fn rebuild(
        &self,
        force: bool,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<IndexReport, IndexError> {
        let mut state = self.lock();
        let index = open_locked(&self.root, &mut state)?;
        if force {
            index.clear()?;
        }
        let (report, _) = index.refresh_tracked(progress)?;
        state.graph = None;
        state.pending = IndexChanges::default();
        let old = state.semantic.take();
        state.stale_semantic = if force {
            None
        } else {
            old.or(state.stale_semantic.take())
        };
        Ok(report)
    }

    /// The current project graph: built on first use, then updated incrementally.
    pub fn graph(&self) -> Result<Arc<ProjectGraph>, IndexError> {
        let mut state = self.lock();
        refresh_locked(&self.root, &mut state)?;
        let started = Instant::now();
        let pending = std::mem::take(&mut state.pending);
        let State { index, graph, .. } = &mut *state;
        if let (Some(g), Some(index)) = (graph.as_mut(), index.as_ref()) {
            if !pending.is_empty() {
                // Copies the graph only if a tool still holds the previous version.
                index.update_graph(Arc::make_mut(g), &pending);
                state.graph_build_ms =
                    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            }
            if let Some(g) = &state.graph {
                return Ok(Arc::clone(g));
            }
        }
        let graph = Arc::new(
            state
                .index
                .as_ref()
                .map(CodeIndex::graph)
                .unwrap_or_default(),
        );
        state.graph_build_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        state.graph = Some(Arc::clone(&graph));
        Ok(graph)
    }

    /// Milliseconds the last graph build took.
    pub fn graph_build_ms(&self) -> u64 {
        self.lock().graph_build_ms
    }

    /// The stored summary of an indexed file.
    pub fn summary(&self, path: &str) -> Result<Option<FileSummary>, IndexError> {
        let mut state = self.lock();
        refresh_locked(&self.root, &mut state)?;
        Ok(state.index.as_ref().and_then(|i| i.summary(path)).cloned())
    }

    /// The semantic index over the current summaries.
    pub fn semantic(&self) -> Result<Arc<SemanticIndex>, IndexError> {
        let mut state = self.lock();
        refresh_locked(&self.root, &mut state)?;
        if let Some(s) = &state.semantic {
            return Ok(Arc::clone(s));
        }
        let summaries: Vec<&FileSummary> = state
            .index
            .as_ref()
            .map(|i| i.summaries().collect())
            .unwrap_or_default();
        let built = Arc::new(SemanticIndex::build(
            &self.guard,
            summaries,
            self.embedder.as_deref(),
            state.stale_semantic.as_deref(),
        ));
        state.stale_semantic = None;
        state.semantic = Some(Arc::clone(&built));
        Ok(built)
    }
}

/// The index, opened on first use.
fn open_locked<'a>(root: &Path, state: &'a mut State) -> Result<&'a mut CodeIndex, IndexError> {
    let index = match state.index.take() {
        Some(index) => index,
        None => CodeIndex::open(root)?,
    };
    Ok(state.index.insert(index))
}

fn refresh_locked(root: &Path, state: &mut State) -> Result<IndexReport, IndexError> {
    let index = open_locked(root, state)?;
    let (report, changes) = index.refresh_tracked(&|_| {})?;
    if !changes.is_empty() {
        if let Some(s) = state.semantic.take() {
            state.stale_semantic = Some(s);
        }
        if state.graph.is_some() {
            add_pending(&mut state.pending, changes);
        }
    }
    Ok(report)
}

/// Adds a refresh's changes to those the graph has not seen, keeping for each path the
/// oldest previous summary (the one the graph knows).
fn add_pending(pending: &mut IndexChanges, changes: IndexChanges) {
    let seen: std::collections::HashSet<String> = pending.paths.iter().cloned().collect();
    for old in changes.previous {
        if !seen.contains(&old.path) {
            pending.previous.push(old);
        }
    }
    for path in changes.paths {
        if !seen.contains(&path) {
            pending.paths.push(path);
        }
    }
}
