//! Call-graph resolution: from call sites to methods, with a confidence.
//!
//! Order of evidence, strongest first: the receiver's type known in the file (self,
//! super, typed local, type name) → the caller's own type (implicit self) → free
//! functions by name (same file, then anywhere) → any method of that name (only when the
//! name is rare enough to be meaningful, at most [`MAX_CANDIDATES`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use rayon::prelude::*;

use serde::Serialize;

use crate::graph::{ProjectGraph, Summaries, method_key};
use crate::summary::FileSummary;
use crate::topology::{
    DEPENDENCY_CONFIDENCE, ModuleDeps, add_dep, callable_file, module_pair, remove_dep,
};

mod reach;
pub(crate) mod resolve;

pub(crate) use reach::Reach;
pub(crate) use resolve::Crowded;
use resolve::{Lookups, MethodNames, file_edges};

/// A name shared by more methods than this is not resolved by name alone.
pub const MAX_CANDIDATES: usize = 5;

/// How an edge's callee was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// Receiver type known in the file (self, super, typed local, type name).
    ReceiverType,
    /// Bare call inside a method of the type that has it.
    ImplicitSelf,
    /// Constructor call through the type name.
    Constructor,
    /// Free function in the same file.
    SameFile,
    /// Matched by name only.
    ByName,
    /// Not found in the project (library or unknown receiver).
    Unresolved,
}

/// One caller → callee relation (call sites of the same pair are merged).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallEdge {
    /// Key of the calling method or function (`Type.method`, `path::function`).
    pub caller: String,
    /// Key of the callee when resolved.
    pub callee: Option<String>,
    /// Name as written at the call site.
    pub callee_name: String,
    /// Receiver type when known, for unresolved edges.
    pub receiver_type: Option<String>,
    pub file: String,
    /// First call site.
    pub line: usize,
    /// Number of call sites merged into this edge.
    pub count: usize,
    /// 0–1: how sure the resolution is.
    pub confidence: f32,
    pub resolution: Resolution,
}

/// Caller key and callee key (`?name` when unresolved): one merged edge.
pub type EdgeKey = (String, String);

/// All edges with indexes by caller and callee.
///
/// Edges are merged per file first, then across files in path order (the first call
/// site gives the line, resolution and receiver; counts add up; the best confidence
/// wins), so an incremental update that re-resolves some files gives the same edges as
/// a full build.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallIndex {
    edges: BTreeMap<EdgeKey, CallEdge>,
    by_callee: HashMap<String, BTreeSet<EdgeKey>>,
    by_caller: HashMap<String, BTreeSet<EdgeKey>>,
    /// Each file's edges, merged within the file.
    per_file: HashMap<String, HashMap<EdgeKey, CallEdge>>,
    /// Files contributing to each edge.
    sources: HashMap<EdgeKey, BTreeSet<String>>,
    /// Files whose call sites mention a name (callee, receiver type or caller type).
    mentions: HashMap<String, BTreeSet<String>>,
    /// The names each file was indexed under in `mentions`.
    mentioned_by: HashMap<String, BTreeSet<String>>,
    /// Module dependencies of the confident resolved edges of each file, summed, and
    /// each file's share (see [`file_call_deps`]).
    pub(crate) module_deps: ModuleDeps,
    file_deps: HashMap<String, Vec<(String, String)>>,
    /// Number of edges with a resolved callee.
    resolved: usize,
}

impl CallIndex {
    /// Re-resolves the call sites of the changed files and of the files `reach` names,
    /// and drops the edges of removed files.
    pub(crate) fn update(
        &mut self,
        graph: &ProjectGraph,
        all: &Summaries,
        reach: &Reach,
        changed: &[&str],
    ) {
        for path in changed {
            self.unmention(path);
            if let Some(file) = all.get(path) {
                self.mention(file);
            }
        }
        let mut files: BTreeSet<String> = changed.iter().map(|p| p.to_string()).collect();
        files.extend(reach.files(graph, self).into_iter().map(str::to_string));
        let present: Vec<&FileSummary> = files
            .iter()
            .filter_map(|p| all.get(p.as_str()).copied())
            .collect();
        let names = MethodNames {
            keys: &graph.refs.method_names,
            crowded: None,
        };
        let resolved: Vec<(String, HashMap<EdgeKey, CallEdge>)> = present
            .par_iter()
            .map_init(
                || Lookups::new(graph),
                |lookups, file| (file.path.clone(), file_edges(lookups, &names, file)),
            )
            .collect();
        let mut touched: BTreeSet<EdgeKey> = BTreeSet::new();
        for path in &files {
            if let Some(old) = self.per_file.remove(path) {
                for key in old.into_keys() {
                    if let Some(s) = self.sources.get_mut(&key) {
                        s.remove(path);
                    }
                    touched.insert(key);
                }
            }
        }
        for (path, edges) in resolved {
            for key in edges.keys() {
                self.sources
                    .entry(key.clone())
                    .or_default()
                    .insert(path.clone());
                touched.insert(key.clone());
            }
            self.per_file.insert(path, edges);
        }
        for key in touched {
            self.remerge(key);
        }
        for path in &files {
            self.set_file_deps(graph, path);
        }
        self.refresh_deps(graph, &reach.keys);
    }

    /// The edges of these files' call sites alone, resolved in `graph` (a focused graph
    /// holding what their resolution reads; `crowded` names the callable names its own
    /// lists under-count) and merged across files in path order as a full build merges
    /// them. Edges no call site of `files` contributes to are missing, so only the edges
    /// of callers and callees whose every call site is in `files` are complete.
    pub(crate) fn of_files(
        graph: &ProjectGraph,
        crowded: &Crowded,
        files: &[&FileSummary],
    ) -> CallIndex {
        let names = MethodNames {
            keys: &graph.refs.method_names,
            crowded: Some(crowded),
        };
        let mut lookups = Lookups::new(graph);
        let mut index = CallIndex::default();
        let mut touched: BTreeSet<EdgeKey> = BTreeSet::new();
        for file in files {
            let edges = file_edges(&mut lookups, &names, file);
            for key in edges.keys() {
                index
                    .sources
                    .entry(key.clone())
                    .or_default()
                    .insert(file.path.clone());
                touched.insert(key.clone());
            }
            index.per_file.insert(file.path.clone(), edges);
        }
        for key in touched {
            index.remerge(key);
        }
        index
    }

    /// Edges into methods of these types may now lead to another file (a method moved):
    /// the files making them count their module dependencies again.
    fn refresh_deps(&mut self, graph: &ProjectGraph, type_keys: &HashSet<String>) {
        let mut files: BTreeSet<String> = BTreeSet::new();
        for key in type_keys {
            let Some(info) = graph.types.get(key) else {
                continue;
            };
            for m in &info.methods {
                for edge in self
                    .by_callee
                    .get(&method_key(key, &m.name))
                    .into_iter()
                    .flatten()
                {
                    files.extend(self.sources.get(edge).into_iter().flatten().cloned());
                }
            }
        }
        for path in &files {
            self.set_file_deps(graph, path);
        }
    }

    /// Counts the module dependencies of one file's edges, replacing its previous ones.
    fn set_file_deps(&mut self, graph: &ProjectGraph, path: &str) {
        for pair in self.file_deps.remove(path).unwrap_or_default() {
            remove_dep(&mut self.module_deps, &pair, 1);
        }
        let Some(edges) = self.per_file.get(path) else {
            return;
        };
        let pairs = file_call_deps(graph, edges.values());
        for pair in &pairs {
            add_dep(&mut self.module_deps, pair.clone(), 1);
        }
        self.file_deps.insert(path.to_string(), pairs);
    }

    fn mention(&mut self, file: &FileSummary) {
        let mut names = BTreeSet::new();
        for call in &file.calls {
            names.insert(call.callee.clone());
            names.extend(call.receiver_type.iter().cloned());
            names.extend(call.caller_type.iter().cloned());
        }
        for n in &names {
            self.mentions
                .entry(n.clone())
                .or_default()
                .insert(file.path.clone());
        }
        self.mentioned_by.insert(file.path.clone(), names);
    }

    fn unmention(&mut self, path: &str) {
        for n in self.mentioned_by.remove(path).unwrap_or_default() {
            if let Some(paths) = self.mentions.get_mut(&n) {
                paths.remove(path);
                if paths.is_empty() {
                    self.mentions.remove(&n);
                }
            }
        }
    }

    /// Recomputes one merged edge from its files' edges, in path order.
    fn remerge(&mut self, key: EdgeKey) {
        let mut merged: Option<CallEdge> = None;
        for path in self.sources.get(&key).into_iter().flatten() {
            let Some(e) = self.per_file.get(path).and_then(|m| m.get(&key)) else {
                continue;
            };
            match &mut merged {
                None => merged = Some(e.clone()),
                Some(m) => {
                    m.count += e.count;
                    m.confidence = m.confidence.max(e.confidence);
                }
            }
        }
        if let Some(old) = self.edges.remove(&key) {
            self.unindex_edge(&key, &old);
        }
        match merged {
            Some(edge) => {
                self.index_edge(&key, &edge);
                self.edges.insert(key, edge);
            }
            None => {
                self.sources.remove(&key);
            }
        }
    }

    fn index_edge(&mut self, key: &EdgeKey, edge: &CallEdge) {
        self.resolved += usize::from(edge.callee.is_some());
        self.by_caller
            .entry(edge.caller.clone())
            .or_default()
            .insert(key.clone());
        if let Some(c) = &edge.callee {
            self.by_callee
                .entry(c.clone())
                .or_default()
                .insert(key.clone());
        }
    }

    fn unindex_edge(&mut self, key: &EdgeKey, edge: &CallEdge) {
        self.resolved -= usize::from(edge.callee.is_some());
        if let Some(set) = self.by_caller.get_mut(&edge.caller) {
            set.remove(key);
            if set.is_empty() {
                self.by_caller.remove(&edge.caller);
            }
        }
        if let Some(c) = &edge.callee
            && let Some(set) = self.by_callee.get_mut(c)
        {
            set.remove(key);
            if set.is_empty() {
                self.by_callee.remove(c);
            }
        }
    }

    /// Every edge, ordered by caller then callee key.
    pub fn iter(&self) -> impl Iterator<Item = &CallEdge> {
        self.edges.values()
    }

    pub fn len(&self) -> usize {
        self.edges.len()
    }

    /// Number of edges whose callee was found in the project.
    pub fn resolved_len(&self) -> usize {
        self.resolved
    }

    pub fn is_empty(&self) -> bool {
        self.edges.is_empty()
    }

    /// One file's edges, merged within the file.
    pub(crate) fn file_edges(&self, path: &str) -> Option<&HashMap<EdgeKey, CallEdge>> {
        self.per_file.get(path)
    }

    /// Edges counted per file (an edge made from several files counts once in each) and
    /// how many of them are resolved: the overview's call-edge totals, which per-file
    /// rows can sum ([`crate::topology_rows`]).
    pub fn per_file_totals(&self) -> (usize, usize) {
        self.per_file
            .values()
            .fold((0, 0), |(all, resolved), edges| {
                let r = edges.values().filter(|e| e.callee.is_some()).count();
                (all + edges.len(), resolved + r)
            })
    }

    fn ordered(&self, keys: Option<&BTreeSet<EdgeKey>>) -> Vec<&CallEdge> {
        let mut out: Vec<&CallEdge> = keys
            .into_iter()
            .flatten()
            .filter_map(|k| self.edges.get(k))
            .collect();
        // Source order: file, then line (a stable sort keeps key order for ties).
        out.sort_by(|a, b| a.file.cmp(&b.file).then(a.line.cmp(&b.line)));
        out
    }

    /// Edges whose callee is `key`, in source order of their first call site.
    pub fn callers(&self, key: &str) -> Vec<&CallEdge> {
        self.ordered(self.by_callee.get(key))
    }

    /// Edges made from `key`, in source order of their first call site.
    pub fn callees(&self, key: &str) -> Vec<&CallEdge> {
        self.ordered(self.by_caller.get(key))
    }

    /// True when `key` appears as a caller or resolved callee.
    pub fn is_known(&self, key: &str) -> bool {
        self.by_caller.contains_key(key) || self.by_callee.contains_key(key)
    }
}

/// The module pairs one file's edges count for in the module graph, sorted: one per
/// confident, resolved edge, from the file's module to the module of the callee's file.
pub(crate) fn file_call_deps<'e>(
    graph: &ProjectGraph,
    edges: impl Iterator<Item = &'e CallEdge>,
) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = edges
        .filter(|e| e.confidence >= DEPENDENCY_CONFIDENCE)
        .filter_map(|e| {
            let target = callable_file(graph, e.callee.as_deref()?)?;
            Some(module_pair(&e.file, target))
        })
        .collect();
    // Sorted, so the same edges give the same value whatever the map's order.
    pairs.sort();
    pairs
}

/// Resolves the call sites of many files in one graph, keeping the method look-ups of the
/// files before (they depend on the graph alone): a whole project repeats most receiver
/// types and method names from file to file.
pub(crate) struct FileResolver<'g> {
    lookups: Lookups<'g>,
    names: MethodNames<'g>,
}

impl<'g> FileResolver<'g> {
    pub(crate) fn new(graph: &'g ProjectGraph) -> FileResolver<'g> {
        FileResolver {
            lookups: Lookups::new(graph),
            names: MethodNames {
                keys: &graph.refs.method_names,
                crowded: None,
            },
        }
    }

    /// One file's call sites resolved and merged by (caller, callee) within the file: the
    /// edges [`CallIndex`] keeps per file.
    pub(crate) fn resolve(&mut self, file: &FileSummary) -> HashMap<EdgeKey, CallEdge> {
        file_edges(&mut self.lookups, &self.names, file)
    }
}
