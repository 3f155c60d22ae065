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

use crate::calls::{CallEdge, EdgeKey, FileResolver, file_call_deps};
use crate::focus_calls::CallFocus;
use crate::graph::{ProjectGraph, TypeInfo};
use crate::index::rows::decode;
use crate::index::topology_rows::{Dirty, NameTotals, TopologyRow, TypeOfNote};
use crate::index::{CodeIndex, IndexError};
use crate::language::Lang;
use crate::service::ProjectTopology;
use crate::summary::{FileSummary, TypeKind};
use crate::topology::{
    ModuleGraph, files_by_stem, import_stem, import_target, is_app_delegate, main_entry, module_of,
    type_dependency_files,
};

/// Summaries read and resolved at a time, bounding memory when every row is recomputed.
const CHUNK: usize = 1000;

/// Up to this many reached files, their rows are recomputed in a graph focused on what
/// they read ([`CallFocus`]); beyond, in the graph of every type skeleton, which costs
/// about a second on 13,000 files but does not grow with the files reached.
pub const FOCUSED_FILES: usize = 300;

impl CodeIndex {
    /// The module topology, entry points and totals, summed from the topology rows after
    /// recomputing those the pending marks reach (see [`refresh`]).
    pub fn topology(&mut self, focused_files: usize) -> Result<ProjectTopology, IndexError> {
        refresh(self, focused_files)?;
        self.summed_topology()
    }

    /// The topology the rows sum to as they are (current once the marks are applied).
    pub(crate) fn summed_topology(&self) -> Result<ProjectTopology, IndexError> {
        let stored = self.stored_topology()?;
        Ok(ProjectTopology {
            modules: ModuleGraph::build(&stored.modules, &[&stored.deps]),
            entry_points: stored.entry_points,
            totals: stored.totals,
            types: stored.types,
        })
    }

    /// True when every topology row waits to be recomputed (after a first, forced or
    /// large refresh): `alembic index` does it then, rather than the next query.
    pub fn topology_outdated(&self) -> Result<bool, IndexError> {
        Ok(self.topology_dirty()?.all)
    }
}

/// Recomputes the rows the pending marks reach (every row after a bulk change), in a
/// focused graph when they reach at most `focused_files` files.
pub(crate) fn refresh(index: &mut CodeIndex, focused_files: usize) -> Result<(), IndexError> {
    let dirty = index.topology_dirty()?;
    if dirty.is_empty() {
        return Ok(());
    }
    let started = Instant::now();
    let (reached, names) = if dirty.all {
        (None, BTreeSet::new())
    } else {
        let indexed: BTreeSet<&str> = index.paths().collect();
        let (files, names) = reached(index, &dirty)?;
        let files = files.into_iter().filter(|p| indexed.contains(p.as_str()));
        (Some(files.collect::<Vec<_>>()), names)
    };
    let focused = reached.as_ref().is_some_and(|r| r.len() <= focused_files);
    let (rows, names) = match reached {
        Some(paths) if focused => focused_rows(index, &paths, &names)?,
        Some(paths) => global_rows(index, &paths, Some(&names))?,
        None => {
            let paths: Vec<String> = index.paths().map(str::to_string).collect();
            global_rows(index, &paths, None)?
        }
    };
    log_step("rows and totals", started);
    index.write_topology(&rows, &names, &dirty)?;
    tracing::debug!(
        files = rows.len(),
        all = dirty.all,
        focused,
        ms = alembic_base::millis(started.elapsed()),
        "topology rows recomputed"
    );
    Ok(())
}

/// The rows of `paths` and the totals of `names` (every name when `None`), resolved in the
/// graph of every file's type skeleton and free-function names.
fn global_rows(
    index: &CodeIndex,
    paths: &[String],
    names: Option<&BTreeSet<String>>,
) -> Result<(Vec<TopologyRow>, Vec<NameTotals>), IndexError> {
    let started = Instant::now();
    let skeletons = index.resolution_skeletons()?;
    log_step("skeletons read", started);
    let graph = ProjectGraph::build(&skeletons);
    log_step("graph built", started);
    let context = Context::new(&graph, index);
    log_step("context built", started);
    let mut rows = Vec::with_capacity(paths.len());
    for chunk in paths.chunks(CHUNK) {
        let stored = index.stored_summaries(chunk)?;
        let chunk_rows = stored.par_iter().map_init(
            || FileResolver::new(&graph),
            |resolver, (path, stored)| {
                let s = decode(path, stored)?;
                Some(context.row(&s, &resolver.resolve(&s)))
            },
        );
        rows.par_extend(chunk_rows.flatten());
    }
    log_step("rows resolved", started);
    let names = match names {
        Some(names) => name_totals(&graph, names.iter()),
        None => {
            let all: BTreeSet<&String> = graph.types.values().map(|t| &t.simple_name).collect();
            name_totals(&graph, all.into_iter())
        }
    };
    Ok((rows, names))
}

/// Logs (at debug) how long a topology recomputation has run when `step` ended.
fn log_step(step: &str, started: Instant) {
    tracing::debug!(
        step,
        ms = alembic_base::millis(started.elapsed()),
        "topology rows"
    );
}

/// The rows of `paths` and the totals of `names`, resolved in a graph holding only what
/// they read: every call site of the files with what its resolution reads, and every
/// declaration (with ancestry) of the type names the files declare and of `names`.
fn focused_rows(
    index: &CodeIndex,
    paths: &[String],
    names: &BTreeSet<String>,
) -> Result<(Vec<TopologyRow>, Vec<NameTotals>), IndexError> {
    let mut focus = CallFocus::new(index);
    for path in paths {
        focus.add_sites(path, |_| true)?;
    }
    let mut declared: BTreeSet<String> = names.clone();
    for path in paths {
        if let Some(s) = focus.summary(path) {
            declared.extend(
                s.types
                    .iter()
                    .map(|t| t.name.clone())
                    .filter(|n| !n.is_empty()),
            );
        }
    }
    for name in &declared {
        focus.load_type(name)?;
    }
    let graph = focus.graph();
    let context = Context::new(&graph, index);
    let none = HashMap::new();
    let rows = paths
        .iter()
        .filter_map(|p| focus.summary(p))
        .map(|s| context.row(s, graph.calls.file_edges(&s.path).unwrap_or(&none)))
        .collect();
    Ok((rows, name_totals(&graph, names.iter())))
}

/// What the types of each name count for in the totals.
fn name_totals<'a>(
    graph: &ProjectGraph,
    names: impl Iterator<Item = &'a String>,
) -> Vec<NameTotals> {
    names
        .map(|name| {
            let mut t = NameTotals {
                name: name.clone(),
                ..NameTotals::default()
            };
            for info in graph.types_named(name) {
                count_type(graph, &mut t, info);
            }
            t
        })
        .collect()
}

/// Counts one merged type as the full graph's totals do, and keeps it when the
/// whole-project hierarchy or category map lists it.
fn count_type(graph: &ProjectGraph, t: &mut NameTotals, info: &TypeInfo) {
    let note = type_of_note(graph, info);
    if note.root_class || !note.categories.is_empty() {
        t.types_of_note.push(note);
    }
    t.types += 1;
    t.totals.add_type(info);
}

/// What the whole-project hierarchy and category map read of a type: whether it is a root
/// class (a declared class whose superclass is not a declared project type), its
/// superclass, and the category (or trait, or `extension`) of each extension.
pub(crate) fn type_of_note(graph: &ProjectGraph, info: &TypeInfo) -> TypeOfNote {
    let root_class = info.kind == TypeKind::Class
        && info.declared
        && info
            .superclass
            .as_ref()
            .is_none_or(|s| !graph.types.get(s).is_some_and(|p| p.declared));
    TypeOfNote {
        key: info.name.clone(),
        root_class,
        superclass: info.superclass.clone(),
        categories: info
            .extensions
            .iter()
            .map(|e| {
                e.category
                    .clone()
                    .unwrap_or_else(|| "extension".to_string())
            })
            .collect(),
    }
}

/// The files whose rows the marks reach (see the module documentation), from the rows,
/// and the type names whose totals and listed types may differ: the marked ones and those
/// naming one as a parent, transitively (a root class stops being one when its superclass
/// becomes a declared project type).
fn reached(
    index: &CodeIndex,
    dirty: &Dirty,
) -> Result<(BTreeSet<String>, BTreeSet<String>), IndexError> {
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
    for owner in &dirty.types {
        for method in index.methods_owned_by(owner)? {
            if !callees.contains(&method) && index.resolvable_by_name(&method)? {
                callees.insert(method);
            }
        }
    }
    let mut files = dirty.files.clone();
    files.extend(index.files_mentioning(&types, &callees)?);
    let mut go = dirty.go;
    for name in &types {
        let declaring = index.files_declaring(name)?;
        go |= dirty.types.contains(name) && declaring.iter().any(|p| p.ends_with(".go"));
        files.extend(declaring);
    }
    files.extend(index.files_importing(&dirty.stems)?);
    if go {
        files.extend(index.files_in_language(Lang::Go)?);
    }
    Ok((files, types))
}

/// What computing one file's row reads besides its summary and its edges.
struct Context<'g> {
    graph: &'g ProjectGraph,
    by_stem: HashMap<&'g str, Vec<&'g str>>,
    /// Target files of the type relations each file is the source of.
    type_deps: HashMap<&'g str, Vec<&'g str>>,
    /// Keys of the application delegates each file declares.
    delegates: HashMap<&'g str, Vec<&'g str>>,
}

impl<'g> Context<'g> {
    fn new(graph: &'g ProjectGraph, index: &'g CodeIndex) -> Context<'g> {
        Context {
            graph,
            by_stem: files_by_stem(index.paths()),
            type_deps: type_deps_by_file(graph),
            delegates: delegates_by_file(graph),
        }
    }

    fn row(&self, s: &FileSummary, edges: &HashMap<EdgeKey, CallEdge>) -> TopologyRow {
        let module = module_of(&s.path);
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
            functions: s.functions.len(),
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
