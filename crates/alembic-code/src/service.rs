//! [`CodeService`]: the shared, thread-safe front of the index that tool handlers use.
//!
//! Every query first refreshes the index (a walk plus `stat`s when nothing changed), so
//! answers follow the files on disk; a watched service ([`CodeService::watch`]) walks only
//! after the watcher saw a change. Type queries (class, protocol, overrides, one type's
//! categories) read only the summaries they need ([`CodeService::graph_around`], see
//! [`crate::focus`]); queries over the whole project (overview, code graph, call graph)
//! load every summary once and keep the full graph, which is then updated incrementally
//! after a change (only what the changed files reach; see [`ProjectGraph::update`]) when it
//! is next asked for. The overview's counts, the hierarchy and category map without a name,
//! and semantic search read the per-file stats and chunk rows instead
//! ([`crate::index::stat_rows`]); chunk vectors are stored by chunk hash, so only chunks whose
//! text changed are embedded again.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use alembic_safety::PathGuard;

use crate::call_view::CallView;
use crate::calls::CallEdge;
use crate::focus::Reach;
use crate::graph::{ProjectGraph, Summaries, Totals};
use crate::index::topology_rows::TypeOfNote;
use crate::index::{ChunkVectors, CodeIndex, IndexError, IndexPlan, IndexReport, Progress};
use crate::semantic::{CodeEmbedder, SemanticSearch};
use crate::summary::FileSummary;
use crate::topology::{EntryPoint, ModuleGraph};
use crate::watch::TreeWatch;

/// The whole-project graph and the summaries it was built from.
struct FullGraph {
    graph: Arc<ProjectGraph>,
    /// Invariant: per path, the summary the graph was last updated with.
    summaries: BTreeMap<String, FileSummary>,
}

struct State {
    index: Option<CodeIndex>,
    /// Loaded when a tool first needs the whole project.
    full: Option<FullGraph>,
    /// Paths changed since `full` was last updated.
    pending: BTreeSet<String>,
    /// The embedded chunks' vectors, read when a hybrid search first needs them.
    vectors: Option<Arc<ChunkVectors>>,
    /// Every type, merged from the stored type skeletons (when `full` is not loaded).
    types: Option<Arc<ProjectGraph>>,
    graph_build_ms: u64,
    max_file_bytes: Option<u64>,
    max_query_files: Option<usize>,
    /// While set, a query walks the tree only after the watcher saw a change.
    watch: Option<TreeWatch>,
    /// Most directories [`CodeService::watch`] may watch (`None`: the system's limit).
    watch_limit: Option<usize>,
    /// Most files whose topology rows are recomputed in a focused graph.
    focused_topology: usize,
    /// Watching failed (and was logged); queries walk on every call.
    unwatched: bool,
    /// Times a query walked the tree.
    walks: u64,
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
                full: None,
                pending: BTreeSet::new(),
                vectors: None,
                types: None,
                graph_build_ms: 0,
                max_file_bytes: None,
                max_query_files: None,
                watch: None,
                watch_limit: None,
                focused_topology: crate::topology_rows::FOCUSED_FILES,
                unwatched: false,
                walks: 0,
            }),
        })
    }

    /// Uses `embedder` for `semantic_search_code` (hybrid mode).
    pub fn with_embedder(mut self, embedder: Arc<dyn CodeEmbedder>) -> CodeService {
        self.embedder = Some(embedder);
        self
    }

    /// Recomputes the topology rows a change reaches in a graph focused on what they read
    /// when at most `files` are reached (default [`crate::topology_rows::FOCUSED_FILES`]),
    /// else in the graph of every type skeleton; 0 always uses the latter. Both give the
    /// same rows; this trades one cost for the other.
    pub fn with_focused_topology_files(self, files: usize) -> CodeService {
        self.lock().focused_topology = files;
        self
    }

    /// Parses files up to `bytes` long (the project's `[index] max_file_bytes`).
    pub fn with_max_file_bytes(self, bytes: u64) -> CodeService {
        self.lock().max_file_bytes = Some(bytes);
        self
    }

    /// Reads at most `files` files for one query about a type's descendants and conformers
    /// (the project's `[index] max_query_files`; see [`crate::WideClosure`]).
    pub fn with_max_query_files(self, files: usize) -> CodeService {
        self.lock().max_query_files = Some(files);
        self
    }

    /// Watches at most `dirs` directories: a larger tree is not watched, as when the
    /// system's inotify limit is reached (queries then walk on every call). Lets tests and
    /// hosts with a small limit choose the fallback up front.
    pub fn with_watch_limit(self, dirs: usize) -> CodeService {
        self.lock().watch_limit = Some(dirs);
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

    /// Keeps the index live with a file-system watcher on the directories the walker keeps,
    /// so queries walk the tree only after something in it changed (long-running servers
    /// call this once). Returns false, and logs why once, when the tree cannot be watched
    /// (inotify limits, some network file systems), now or later as directories are added:
    /// queries then walk the tree on every call, as without a watcher.
    pub fn watch(&self) -> bool {
        let mut state = self.lock();
        if state.watch.is_some() {
            return true;
        }
        if state.unwatched {
            return false;
        }
        match TreeWatch::start(self.guard.root(), state.watch_limit) {
            Ok(watch) => {
                state.watch = Some(watch);
                true
            }
            Err(e) => {
                unwatch(&self.root, &mut state, &e);
                false
            }
        }
    }

    /// Directories the watcher watches (`None` when the tree is not watched).
    pub fn watched_dirs(&self) -> Option<usize> {
        self.lock().watch.as_ref().map(TreeWatch::watched)
    }

    /// How many times queries walked the tree to refresh the index.
    pub fn tree_walks(&self) -> u64 {
        self.lock().walks
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

    /// Refreshes the index (parsing every file again when `force`, in one transaction)
    /// with `progress`, recomputes every topology row when the refresh was large, and drops
    /// the graphs and vectors read from the old rows (with `force` the stored vectors are
    /// dropped too, so every chunk is embedded again).
    pub fn rebuild(
        &self,
        force: bool,
        progress: &(dyn Fn(Progress) + Sync),
    ) -> Result<IndexReport, IndexError> {
        let mut state = self.lock();
        let focused = state.focused_topology;
        let index = open_locked(&self.root, &mut state)?;
        let (report, _) = index.refresh_with(force, progress)?;
        if index.topology_outdated()? {
            progress(Progress::Phase(crate::index::IndexPhase::Graph));
            index.topology(focused)?;
        }
        state.full = None;
        state.pending.clear();
        state.vectors = None;
        state.types = None;
        Ok(report)
    }

    /// The whole-project graph: built on first use from every summary, then updated
    /// incrementally.
    pub fn graph(&self) -> Result<Arc<ProjectGraph>, IndexError> {
        let mut state = self.lock();
        refresh_locked(&self.root, &mut state)?;
        full_graph_locked(&self.root, &mut state)
    }

    /// A graph that answers questions about the types named `name` (simple or qualified)
    /// exactly as [`CodeService::graph`] would: their declarations, ancestors and
    /// descendants as far as `reach`. Reads only those summaries, unless the whole graph is
    /// already loaded.
    pub fn graph_around(&self, name: &str, reach: Reach) -> Result<Arc<ProjectGraph>, IndexError> {
        let mut state = self.lock();
        refresh_locked(&self.root, &mut state)?;
        if state.full.is_some() {
            return full_graph_locked(&self.root, &mut state);
        }
        let index = open_locked(&self.root, &mut state)?;
        let summaries = crate::focus::summaries_around(index, name, reach)?;
        Ok(Arc::new(ProjectGraph::build(&summaries)))
    }

    /// Every type key of the whole-project graph (for "did you mean" suggestions).
    pub fn type_keys(&self) -> Result<BTreeSet<String>, IndexError> {
        let mut state = self.lock();
        if let Some(full) = &state.full {
            return Ok(full.graph.types.keys().cloned().collect());
        }
        open_locked(&self.root, &mut state)?.type_keys()
    }

    /// Milliseconds the last graph build took.
    pub fn graph_build_ms(&self) -> u64 {
        self.lock().graph_build_ms
    }

    /// The stored summary of an indexed file.
    pub fn summary(&self, path: &str) -> Result<Option<FileSummary>, IndexError> {
        let mut state = self.lock();
        refresh_locked(&self.root, &mut state)?;
        open_locked(&self.root, &mut state)?.summary(path)
    }

    /// The stored chunks, with their vectors when an embedder is configured (embedding the
    /// chunks that have none for its model).
    pub fn semantic(&self) -> Result<Arc<ChunkVectors>, IndexError> {
        let mut state = self.lock();
        refresh_locked(&self.root, &mut state)?;
        self.vectors_locked(&mut state)
    }

    fn vectors_locked(&self, state: &mut State) -> Result<Arc<ChunkVectors>, IndexError> {
        if let Some(v) = &state.vectors {
            return Ok(Arc::clone(v));
        }
        let index = open_locked(&self.root, state)?;
        let vectors = Arc::new(match self.embedder.as_deref() {
            Some(e) => index.chunk_vectors(e)?,
            None => ChunkVectors::counted(index.chunk_count()?),
        });
        state.vectors = Some(Arc::clone(&vectors));
        Ok(vectors)
    }

    /// `semantic_search_code`: the best `top_k` chunks for `query` (of `language` if given)
    /// from the stored chunks, and how many chunks there are.
    pub fn semantic_search(
        &self,
        query: &str,
        top_k: usize,
        language: Option<&str>,
    ) -> Result<(SemanticSearch, usize), IndexError> {
        let mut state = self.lock();
        refresh_locked(&self.root, &mut state)?;
        let vectors = self.vectors_locked(&mut state)?;
        let index = open_locked(&self.root, &mut state)?;
        let found = index.search_chunks(query, top_k, language, Some(&vectors), self.embedder())?;
        Ok((found, vectors.len()))
    }

    /// Every type of the project, as the full graph has them (keys, kinds, extensions,
    /// resolved parents, subclasses and conformers), merged from the stored type skeletons
    /// rather than every summary; the full graph itself when it is loaded.
    pub fn type_graph(&self) -> Result<Arc<ProjectGraph>, IndexError> {
        let mut state = self.lock();
        refresh_locked(&self.root, &mut state)?;
        if state.full.is_some() {
            return full_graph_locked(&self.root, &mut state);
        }
        if let Some(g) = &state.types {
            return Ok(Arc::clone(g));
        }
        let skeletons = open_locked(&self.root, &mut state)?.type_skeletons()?;
        let graph = Arc::new(ProjectGraph::build(&skeletons));
        state.types = Some(Arc::clone(&graph));
        Ok(graph)
    }

    /// The module topology (modules, layers, cycles), entry points, call-edge counts and
    /// type totals: from the whole-project graph when it is loaded, else summed from the
    /// index's per-file topology rows, recomputing those a change reached first (see
    /// [`crate::topology_rows`]; the same answers).
    pub fn module_graph(&self) -> Result<ProjectTopology, IndexError> {
        let mut state = self.lock();
        topology_locked(&self.root, &mut state)?.summed()
    }

    /// File, function, language and extension counts (from the per-file rows) and
    /// [`CodeService::module_graph`], of the same tree, walked once.
    pub fn overview(&self) -> Result<(crate::index::ProjectStats, ProjectTopology), IndexError> {
        let mut state = self.lock();
        let topology = topology_locked(&self.root, &mut state)?.summed()?;
        let stats = open_locked(&self.root, &mut state)?.project_stats()?;
        Ok((stats, topology))
    }

    /// How many root classes the project has (declared classes whose superclass is not a
    /// declared project type), the first `limit` in key order, and a graph holding every
    /// descendant of those: from the topology rows and the summaries they point to, or the
    /// whole-project graph when it is loaded (the same answers).
    pub(crate) fn root_classes(&self, limit: usize) -> Result<RootClasses, IndexError> {
        let mut state = self.lock();
        let index = match topology_locked(&self.root, &mut state)? {
            TopologyFrom::Full(graph) => {
                let roots: Vec<TypeOfNote> = graph
                    .types
                    .values()
                    .map(|t| crate::topology_rows::type_of_note(&graph, t))
                    .filter(|t| t.root_class)
                    .collect();
                return Ok(RootClasses {
                    total: roots.len(),
                    roots: roots.into_iter().take(limit).collect(),
                    graph,
                });
            }
            TopologyFrom::Rows(index) => index,
        };
        let (total, roots) = index.stored_root_classes(limit)?;
        let mut files = BTreeMap::new();
        for root in &roots {
            crate::focus::load_around(index, &root.key, Reach::subclasses(None), &mut files)?;
        }
        let graph = Arc::new(crate::focus_calls::types_graph(&files));
        Ok(RootClasses {
            total,
            roots,
            graph,
        })
    }

    /// How many types have extensions, and the first `limit`, most extended first, from
    /// the topology rows (or the whole-project graph when it is loaded; the same answers).
    pub(crate) fn extended_types(
        &self,
        limit: usize,
    ) -> Result<(usize, Vec<TypeOfNote>), IndexError> {
        let mut state = self.lock();
        match topology_locked(&self.root, &mut state)? {
            TopologyFrom::Full(graph) => {
                let map = graph.category_map();
                let first = map.iter().take(limit);
                let notes = first.map(|(t, _)| crate::topology_rows::type_of_note(&graph, t));
                Ok((map.len(), notes.collect()))
            }
            TopologyFrom::Rows(index) => index.stored_extended_types(limit),
        }
    }

    /// Runs `query` on a [`CallView`] of the current tree: the whole-project graph when it
    /// is already loaded, else the index's call rows and the few summaries they point to
    /// (the same answers; see [`crate::focus_calls`]). `query` must not call the service.
    pub(crate) fn with_calls<R>(
        &self,
        query: impl FnOnce(&mut CallView<'_>) -> R,
    ) -> Result<R, IndexError> {
        let mut state = self.lock();
        refresh_locked(&self.root, &mut state)?;
        if state.full.is_some() {
            let graph = full_graph_locked(&self.root, &mut state)?;
            return Ok(query(&mut CallView::Full(graph)));
        }
        let index = open_locked(&self.root, &mut state)?;
        Ok(query(&mut CallView::focused(index)))
    }

    /// The edges into `key` (callers) and out of it (callees), in source order, as the
    /// whole-project graph has them, read from the index's rows and the few summaries they
    /// point to (also when the full graph is loaded), and how many summaries were read.
    pub fn focused_call_edges(
        &self,
        key: &str,
    ) -> Result<(Vec<CallEdge>, Vec<CallEdge>, usize), IndexError> {
        let mut state = self.lock();
        refresh_locked(&self.root, &mut state)?;
        let index = open_locked(&self.root, &mut state)?;
        let mut view = CallView::focused(index);
        let keys = [key.to_string()];
        let g = view.edges(&keys, &keys)?;
        let callers = g.callers(key).into_iter().cloned().collect();
        let callees = g.callees(key).into_iter().cloned().collect();
        Ok((callers, callees, view.loaded()))
    }
}

/// The first root classes and what their trees need (see [`CodeService::root_classes`]).
pub(crate) struct RootClasses {
    pub total: usize,
    pub roots: Vec<TypeOfNote>,
    /// Holds every descendant of `roots`.
    pub graph: Arc<ProjectGraph>,
}

/// What the overview shows of the project's structure besides counts of files and types.
#[derive(Debug, Clone)]
pub struct ProjectTopology {
    pub modules: ModuleGraph,
    pub entry_points: Vec<EntryPoint>,
    /// Whole-project counts (types, methods, functions, files, call edges).
    pub totals: Totals,
    /// Number of type keys.
    pub types: usize,
}

/// Where topology answers come from.
enum TopologyFrom<'a> {
    /// The whole-project graph, already loaded.
    Full(Arc<ProjectGraph>),
    /// The index, its topology rows brought up to date.
    Rows(&'a mut CodeIndex),
}

impl TopologyFrom<'_> {
    /// The topology the source holds.
    fn summed(self) -> Result<ProjectTopology, IndexError> {
        match self {
            TopologyFrom::Full(g) => Ok(ProjectTopology {
                modules: g.modules.clone(),
                entry_points: g.entry_points.clone(),
                totals: g.totals.clone(),
                types: g.types.len(),
            }),
            TopologyFrom::Rows(index) => index.summed_topology(),
        }
    }
}

/// Refreshes the tree, then picks the loaded whole-project graph, or the index after
/// applying its pending topology marks.
fn topology_locked<'a>(root: &Path, state: &'a mut State) -> Result<TopologyFrom<'a>, IndexError> {
    refresh_locked(root, state)?;
    if state.full.is_some() {
        return full_graph_locked(root, state).map(TopologyFrom::Full);
    }
    let focused = state.focused_topology;
    let index = open_locked(root, state)?;
    crate::topology_rows::refresh(index, focused)?;
    Ok(TopologyFrom::Rows(index))
}

/// The index, opened on first use.
fn open_locked<'a>(root: &Path, state: &'a mut State) -> Result<&'a mut CodeIndex, IndexError> {
    let index = match state.index.take() {
        Some(index) => index,
        None => {
            let mut index = CodeIndex::open(root)?;
            if let Some(bytes) = state.max_file_bytes {
                index.set_max_file_bytes(bytes);
            }
            if let Some(files) = state.max_query_files {
                index.set_max_query_files(files);
            }
            index
        }
    };
    Ok(state.index.insert(index))
}

/// Stops watching after `error` and says so once: queries walk on every call from now on.
fn unwatch(root: &Path, state: &mut State, error: &notify::Error) {
    state.watch = None;
    if !std::mem::replace(&mut state.unwatched, true) {
        tracing::warn!(
            root = %root.display(),
            error = %error,
            "cannot watch the project tree; code queries walk it on every call instead"
        );
    }
}

fn refresh_locked(root: &Path, state: &mut State) -> Result<IndexReport, IndexError> {
    if let Some(watch) = state.watch.as_mut() {
        match watch.take_changed() {
            Ok(false) => {
                let files = state.index.as_ref().map_or(0, CodeIndex::len);
                return Ok(IndexReport {
                    files,
                    unchanged: files,
                    ..IndexReport::default()
                });
            }
            Ok(true) => {}
            Err(e) => unwatch(root, state, &e),
        }
    }
    state.walks += 1;
    let refreshed = open_locked(root, state).and_then(|index| index.refresh_tracked(&|_| {}));
    let (report, changes) = match refreshed {
        Ok(done) => done,
        Err(e) => {
            if let Some(watch) = &state.watch {
                watch.mark_changed();
            }
            return Err(e);
        }
    };
    if !changes.is_empty() {
        state.vectors = None;
        state.types = None;
        if state.full.is_some() {
            state.pending.extend(changes.paths);
        }
    }
    Ok(report)
}

/// The whole-project graph, loaded on first use and brought up to date with the pending
/// changes.
fn full_graph_locked(root: &Path, state: &mut State) -> Result<Arc<ProjectGraph>, IndexError> {
    open_locked(root, state)?;
    // The index goes back in place whatever happens.
    let Some(index) = state.index.take() else {
        return Ok(Arc::default());
    };
    let out = update_full_graph(&index, state);
    state.index = Some(index);
    if out.is_err() {
        // A half-applied update is dropped; the next call loads the graph again.
        state.full = None;
        state.pending.clear();
    }
    out
}

fn update_full_graph(
    index: &CodeIndex,
    state: &mut State,
) -> Result<Arc<ProjectGraph>, IndexError> {
    let started = Instant::now();
    let pending = std::mem::take(&mut state.pending);
    if let Some(full) = state.full.as_mut() {
        if !pending.is_empty() {
            let mut previous = Vec::new();
            for path in &pending {
                previous.extend(full.summaries.remove(path));
                if let Some(s) = index.summary(path)? {
                    full.summaries.insert(path.clone(), s);
                }
            }
            let all: Summaries = full
                .summaries
                .iter()
                .map(|(p, s)| (p.as_str(), s))
                .collect();
            let paths: Vec<&str> = pending.iter().map(String::as_str).collect();
            // Copies the graph only if a tool still holds the previous version.
            Arc::make_mut(&mut full.graph).update(&all, &paths, &previous);
            state.graph_build_ms = alembic_base::millis(started.elapsed());
        }
        return Ok(Arc::clone(&full.graph));
    }
    let summaries: BTreeMap<String, FileSummary> = index
        .summaries()?
        .into_iter()
        .map(|s| (s.path.clone(), s))
        .collect();
    let graph = Arc::new(ProjectGraph::build(summaries.values()));
    state.graph_build_ms = alembic_base::millis(started.elapsed());
    state.full = Some(FullGraph {
        graph: Arc::clone(&graph),
        summaries,
    });
    Ok(graph)
}
