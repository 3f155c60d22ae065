//! Brings the index's per-file topology rows ([`crate::index::topology_rows`]) up to date,
//! so topology queries sum rows instead of building the whole-project graph.
//!
//! A file's row holds what the full graph counts for it: its module, language and primary
//! types; its call edges (resolved and not) with the module pairs of its confident
//! resolved ones ([`crate::calls::file_call_deps`]); its imports' and its types' module
//! pairs ([`crate::topology::type_dependency_files`]); its entry points.
//!
//! Invariant (checked against full builds by `tests/suite/topology_rows.rs`): once the
//! marks are applied, the rows sum to the full graph's module graph, entry points and
//! call-edge totals. Resolving a file reads only the whole project's type skeletons and
//! free-function names (one small graph, [`ProjectGraph`] over
//! [`crate::index::CodeIndex::resolution_skeletons`]) and its own summary. A change reaches
//! another file's row only through a name, so the marks a write leaves say which rows to
//! recompute:
//!
//! - the changed files themselves;
//! - type names declared before or after, and the names of types naming them as parents,
//!   transitively (their keys, ancestry, methods and files may differ): every file
//!   declaring one or whose call sites mention one (callee, receiver or caller type);
//! - callable names that name-only resolution can pick (few enough types or functions
//!   have them), of the changed files and of the marked types: every file calling one;
//! - stems of added and removed files: every file importing by that stem;
//! - Go: every Go file (Go conformance is implicit, over all Go types).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Instant;

use rayon::prelude::*;

use crate::calls::{MAX_CANDIDATES, file_call_deps, resolve_file};
use crate::graph::ProjectGraph;
use crate::index::topology_rows::{Dirty, StoredTotals, TopologyRow};
use crate::index::{CodeIndex, IndexError};
use crate::language::Lang;
use crate::summary::FileSummary;
use crate::topology::{
    files_by_stem, import_stem, import_target, is_app_delegate, main_entry, module_of,
    type_dependency_files,
};

/// Summaries read and resolved at a time, bounding memory when every row is recomputed.
const CHUNK: usize = 1000;

/// Recomputes the rows the pending marks reach (every row after a bulk change).
pub(crate) fn refresh(index: &mut CodeIndex) -> Result<(), IndexError> {
    let dirty = index.topology_dirty()?;
    if dirty.is_empty() {
        return Ok(());
    }
    let started = Instant::now();
    let skeletons = index.resolution_skeletons()?;
    let graph = ProjectGraph::build(&skeletons);
    let paths: Vec<String> = if dirty.all {
        index.paths().map(str::to_string).collect()
    } else {
        let indexed: BTreeSet<&str> = index.paths().collect();
        reached(index, &graph, &dirty)?
            .into_iter()
            .filter(|p| indexed.contains(p.as_str()))
            .collect()
    };
    let by_stem = files_by_stem(skeletons.iter().map(|s| s.path.as_str()));
    let context = Context {
        graph: &graph,
        by_stem,
        type_deps: type_deps_by_file(&graph),
        delegates: delegates_by_file(&graph),
    };
    let mut rows = Vec::with_capacity(paths.len());
    for chunk in paths.chunks(CHUNK) {
        let mut summaries = Vec::with_capacity(chunk.len());
        for path in chunk {
            summaries.extend(index.summary(path)?);
        }
        rows.par_extend(summaries.par_iter().map(|s| context.row(s)));
    }
    let totals = StoredTotals {
        totals: graph.totals.clone(),
        types: graph.types.len(),
    };
    index.write_topology(&rows, &totals, &dirty)?;
    tracing::debug!(
        files = rows.len(),
        all = dirty.all,
        ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "topology rows recomputed"
    );
    Ok(())
}

/// The files whose rows the marks reach (see the module documentation).
fn reached(
    index: &CodeIndex,
    graph: &ProjectGraph,
    dirty: &Dirty,
) -> Result<BTreeSet<String>, IndexError> {
    let mut types = dirty.types.clone();
    let mut work: Vec<String> = types.iter().cloned().collect();
    while let Some(name) = work.pop() {
        for child in index.children_of(&name, false)? {
            if types.insert(child.clone()) {
                work.push(child);
            }
        }
    }
    // A marked name's types may have new keys, and so may all their methods.
    let mut callees = dirty.callees.clone();
    let marked = dirty.types.iter().flat_map(|n| graph.types_named(n));
    for m in marked.flat_map(|t| &t.methods) {
        let owners = graph.refs.method_names.get(&m.name).map_or(0, Vec::len);
        if owners <= MAX_CANDIDATES {
            callees.insert(m.name.clone());
        }
    }
    let mut files = dirty.files.clone();
    files.extend(index.files_mentioning(&types, &callees)?);
    for name in &types {
        files.extend(
            graph
                .refs
                .decl_files
                .get(name)
                .into_iter()
                .flatten()
                .cloned(),
        );
    }
    files.extend(index.files_importing(&dirty.stems)?);
    let go_named = dirty
        .types
        .iter()
        .any(|n| graph.types_named(n).iter().any(|t| t.language == Lang::Go));
    if dirty.go || go_named {
        files.extend(index.files_in_language(Lang::Go)?);
    }
    Ok(files)
}

/// What computing one file's row reads besides its summary.
struct Context<'g> {
    graph: &'g ProjectGraph,
    by_stem: HashMap<&'g str, Vec<&'g str>>,
    /// Target files of the type relations each file is the source of.
    type_deps: HashMap<&'g str, Vec<&'g str>>,
    /// Keys of the application delegates each file declares.
    delegates: HashMap<&'g str, Vec<&'g str>>,
}

impl Context<'_> {
    fn row(&self, s: &FileSummary) -> TopologyRow {
        let module = module_of(&s.path);
        let edges = resolve_file(self.graph, s);
        let mut deps: BTreeMap<String, usize> = BTreeMap::new();
        let mut count = |to: String| *deps.entry(to).or_default() += 1;
        for (_, to) in file_call_deps(self.graph, edges.values()) {
            count(to);
        }
        let mut stems = BTreeSet::new();
        for import in &s.imports {
            stems.extend(import_stem(&s.path, &import.module));
            if let Some(target) = import_target(&s.path, &import.module, &self.by_stem) {
                count(module_of(target));
            }
        }
        for to in self.type_deps.get(s.path.as_str()).into_iter().flatten() {
            count(module_of(to));
        }
        let mut entries: Vec<(String, Option<String>)> = main_entry(s)
            .map(|e| (e.kind.to_string(), e.symbol))
            .into_iter()
            .collect();
        for key in self.delegates.get(s.path.as_str()).into_iter().flatten() {
            entries.push(("app-delegate".to_string(), Some(key.to_string())));
        }
        TopologyRow {
            path: s.path.clone(),
            module,
            language: s.language,
            primary_types: s.types.iter().filter(|t| t.kind.is_primary()).count(),
            call_edges: edges.len(),
            resolved_edges: edges.values().filter(|e| e.callee.is_some()).count(),
            entries,
            deps,
            stems,
        }
    }
}

fn type_deps_by_file(graph: &ProjectGraph) -> HashMap<&str, Vec<&str>> {
    let mut out: HashMap<&str, Vec<&str>> = HashMap::new();
    for info in graph.types.values() {
        for (from, to) in type_dependency_files(graph, info) {
            out.entry(from).or_default().push(to);
        }
    }
    out
}

fn delegates_by_file(graph: &ProjectGraph) -> HashMap<&str, Vec<&str>> {
    let mut out: HashMap<&str, Vec<&str>> = HashMap::new();
    for info in graph.types.values().filter(|t| is_app_delegate(t)) {
        out.entry(info.file.as_str())
            .or_default()
            .push(info.name.as_str());
    }
    out
}
