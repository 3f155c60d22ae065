//! Call-graph resolution: from call sites to methods, with a confidence.
//!
//! Order of evidence, strongest first: the receiver's type known in the file (self,
//! super, typed local, type name) → the caller's own type (implicit self) → free
//! functions by name (same file, then anywhere) → any method of that name (only when the
//! name is rare enough to be meaningful, at most [`MAX_CANDIDATES`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use rayon::prelude::*;

use serde::Serialize;

use crate::graph::{ProjectGraph, Summaries, TypeInfo, function_key, method_key};
use crate::language::Lang;
use crate::summary::{CallSite, FileSummary, ReceiverKind};
use crate::topology::{
    DEPENDENCY_CONFIDENCE, ModuleDeps, add_dep, callable_file, module_pair, remove_dep,
};

/// A name shared by more methods than this is not resolved by name alone.
pub const MAX_CANDIDATES: usize = 5;

/// Names of constructors across languages.
const CONSTRUCTORS: &[&str] = &["init", "constructor", "__init__", "new"];

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
    /// Module dependencies of confident resolved edges, and each edge's module pair.
    pub(crate) module_deps: ModuleDeps,
    edge_deps: HashMap<EdgeKey, (String, String)>,
    /// Number of edges with a resolved callee.
    resolved: usize,
}

/// Which call sites may resolve differently after a change.
///
/// A written type name is resolved per file to one of the types of that name, so:
/// when the set of types of a name changed (added, removed, moved), every file mentioning
/// it is re-resolved; otherwise only the files where it resolves to a type that changed
/// or derives from one. Method and function names of the change matter only when few
/// enough types or files share them for name-only resolution to pick them.
#[derive(Debug, Default)]
pub(crate) struct Reach {
    /// Names whose every mentioning file is re-resolved.
    names: BTreeSet<String>,
    /// Type names re-resolved only where they resolve into `keys`.
    filtered: BTreeSet<String>,
    keys: HashSet<String>,
}

impl Reach {
    pub(crate) fn of_change(
        graph: &ProjectGraph,
        before: &[TypeInfo],
        rebuilt: &BTreeSet<String>,
        old: &[&FileSummary],
        new: &[&FileSummary],
    ) -> Reach {
        let mut reach = Reach::default();
        let now: Vec<&TypeInfo> = rebuilt.iter().flat_map(|n| graph.types_named(n)).collect();
        reach.add_types(graph, before, &now, rebuilt);
        reach.add_methods(graph, before, &now);
        reach.add_functions(graph, old, new);
        reach
    }

    fn add_types(
        &mut self,
        graph: &ProjectGraph,
        before: &[TypeInfo],
        now: &[&TypeInfo],
        rebuilt: &BTreeSet<String>,
    ) {
        let was = candidates_by_name(before.iter());
        let is = candidates_by_name(now.iter().copied());
        for n in rebuilt {
            if was.get(n.as_str()) == is.get(n.as_str()) {
                self.filtered.insert(n.clone());
            } else {
                self.names.insert(n.clone());
            }
        }
        self.keys.extend(before.iter().map(|t| t.name.clone()));
        for t in now {
            self.keys.insert(t.name.clone());
            for (d, _) in graph.derived(&t.name) {
                if let Some(info) = graph.types.get(&d) {
                    self.keys.insert(d);
                    if !self.names.contains(&info.simple_name) {
                        self.filtered.insert(info.simple_name.clone());
                    }
                }
            }
        }
    }

    /// Method names of changed types that name-only resolution can pick, before or after.
    fn add_methods(&mut self, graph: &ProjectGraph, before: &[TypeInfo], now: &[&TypeInfo]) {
        let had = types_having(before.iter());
        let has = types_having(now.iter().copied());
        for name in had.keys().chain(has.keys()) {
            let after = graph.refs.method_names.get(*name).map_or(0, Vec::len);
            let prior = (after + had.get(name).copied().unwrap_or(0))
                .saturating_sub(has.get(name).copied().unwrap_or(0));
            if after <= MAX_CANDIDATES || prior <= MAX_CANDIDATES {
                self.names.insert(name.to_string());
            }
        }
    }

    /// Function names of the changed files that name-only resolution can pick.
    fn add_functions(&mut self, graph: &ProjectGraph, old: &[&FileSummary], new: &[&FileSummary]) {
        let (had, has) = (functions_by_name(old), functions_by_name(new));
        for name in had.keys().chain(has.keys()) {
            let after = graph.functions.get(*name).map_or(0, Vec::len);
            let prior = (after + had.get(name).copied().unwrap_or(0))
                .saturating_sub(has.get(name).copied().unwrap_or(0));
            if after <= MAX_CANDIDATES || prior <= MAX_CANDIDATES {
                self.names.insert(name.to_string());
            }
        }
    }

    /// Files whose call sites must be resolved again.
    fn files<'a>(&self, graph: &ProjectGraph, index: &'a CallIndex) -> BTreeSet<&'a str> {
        let mut files = BTreeSet::new();
        for name in &self.names {
            if let Some(paths) = index.mentions.get(name) {
                files.extend(paths.iter().map(String::as_str));
            }
        }
        for name in &self.filtered {
            for path in index.mentions.get(name).into_iter().flatten() {
                if graph
                    .resolve_type(name, path)
                    .is_some_and(|k| self.keys.contains(k))
                {
                    files.insert(path.as_str());
                }
            }
        }
        files
    }
}

/// (file, key) of the given types by simple name, sorted.
fn candidates_by_name<'a>(
    types: impl Iterator<Item = &'a TypeInfo>,
) -> HashMap<&'a str, Vec<(&'a str, &'a str)>> {
    let mut out: HashMap<&str, Vec<(&str, &str)>> = HashMap::new();
    for t in types {
        out.entry(t.simple_name.as_str())
            .or_default()
            .push((t.file.as_str(), t.name.as_str()));
    }
    out.values_mut().for_each(|v| v.sort());
    out
}

/// Number of free functions of each name in these files.
fn functions_by_name<'a>(files: &[&'a FileSummary]) -> HashMap<&'a str, usize> {
    let mut out: HashMap<&str, usize> = HashMap::new();
    for f in files.iter().flat_map(|s| &s.functions) {
        *out.entry(f.name.as_str()).or_default() += 1;
    }
    out
}

/// Number of types having each method name (a type counts once per name).
fn types_having<'a>(types: impl Iterator<Item = &'a TypeInfo>) -> HashMap<&'a str, usize> {
    let mut out: HashMap<&str, usize> = HashMap::new();
    for t in types {
        let names: HashSet<&str> = t.methods.iter().map(|m| m.name.as_str()).collect();
        for n in names {
            *out.entry(n).or_default() += 1;
        }
    }
    out
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
        let names = MethodNames(&graph.refs.method_names);
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
            self.remerge(graph, key);
        }
        self.refresh_deps(graph, &reach.keys);
    }

    /// Edges into methods of these types may now lead to another file (a method moved).
    fn refresh_deps(&mut self, graph: &ProjectGraph, type_keys: &HashSet<String>) {
        let mut edges: BTreeSet<EdgeKey> = BTreeSet::new();
        for key in type_keys {
            let Some(info) = graph.types.get(key) else {
                continue;
            };
            for m in &info.methods {
                if let Some(set) = self.by_callee.get(&method_key(key, &m.name)) {
                    edges.extend(set.iter().cloned());
                }
            }
        }
        for key in edges {
            if let Some(edge) = self.edges.get(&key) {
                let pair = edge_dep(graph, edge);
                self.set_dep(&key, pair);
            }
        }
    }

    /// Records the module pair an edge counts for, replacing its previous one.
    fn set_dep(&mut self, key: &EdgeKey, pair: Option<(String, String)>) {
        if let Some(old) = self.edge_deps.remove(key) {
            remove_dep(&mut self.module_deps, &old, 1);
        }
        if let Some(pair) = pair {
            add_dep(&mut self.module_deps, pair.clone(), 1);
            self.edge_deps.insert(key.clone(), pair);
        }
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
    fn remerge(&mut self, graph: &ProjectGraph, key: EdgeKey) {
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
                self.set_dep(&key, edge_dep(graph, &edge));
                self.index_edge(&key, &edge);
                self.edges.insert(key, edge);
            }
            None => {
                self.set_dep(&key, None);
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

    /// Transitive callers of `key` up to `max_depth`, nearest first.
    pub fn transitive_callers(&self, key: &str, max_depth: usize) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        let mut seen = HashSet::from([key.to_string()]);
        let mut frontier = vec![key.to_string()];
        for depth in 1..=max_depth {
            let mut next = Vec::new();
            for k in &frontier {
                for e in self.callers(k) {
                    if seen.insert(e.caller.clone()) {
                        out.push((e.caller.clone(), depth));
                        next.push(e.caller.clone());
                    }
                }
            }
            frontier = next;
        }
        out
    }
}

/// The module pair a confident, resolved edge counts for in the module graph.
fn edge_dep(graph: &ProjectGraph, edge: &CallEdge) -> Option<(String, String)> {
    if edge.confidence < DEPENDENCY_CONFIDENCE {
        return None;
    }
    let target = callable_file(graph, edge.callee.as_deref()?)?;
    Some(module_pair(&edge.file, target))
}

/// One file's call sites resolved and merged by (caller, callee).
fn file_edges(
    lookups: &mut Lookups,
    names: &MethodNames,
    file: &FileSummary,
) -> HashMap<EdgeKey, CallEdge> {
    let mut edges: HashMap<EdgeKey, CallEdge> = HashMap::new();
    for call in &file.calls {
        let caller = caller_key(lookups.graph, file, call);
        for (callee, confidence, resolution) in resolve(lookups, names, file, call) {
            let target = callee
                .clone()
                .unwrap_or_else(|| format!("?{}", call.callee));
            match edges.entry((caller.clone(), target)) {
                std::collections::hash_map::Entry::Occupied(mut e) => {
                    let edge = e.get_mut();
                    edge.count += 1;
                    edge.confidence = edge.confidence.max(confidence);
                }
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(CallEdge {
                        caller: caller.clone(),
                        callee,
                        callee_name: call.callee.clone(),
                        receiver_type: call.receiver_type.clone(),
                        file: file.path.clone(),
                        line: call.line,
                        count: 1,
                        confidence,
                        resolution,
                    });
                }
            }
        }
    }
    edges
}

/// Key of the function a call site sits in; top-level code gets `path::<top-level>`.
fn caller_key(graph: &ProjectGraph, file: &FileSummary, call: &CallSite) -> String {
    let caller_type = call
        .caller_type
        .as_deref()
        .map(|t| graph.resolve_type(t, &file.path).unwrap_or(t));
    match (caller_type, &call.caller) {
        (Some(t), Some(m)) => method_key(t, m),
        (None, Some(f)) => function_key(&file.path, f),
        (Some(t), None) => method_key(t, "<body>"),
        (None, None) => function_key(&file.path, "<top-level>"),
    }
}

/// Method keys by method name, for name-only resolution.
struct MethodNames<'g>(&'g HashMap<String, Vec<String>>);

type Resolved = Vec<(Option<String>, f32, Resolution)>;

/// Memoised method lookups: a big project makes hundreds of thousands of calls on a few
/// thousand (type, method) pairs, and one lookup walks the type's whole ancestry.
struct Lookups<'g> {
    graph: &'g ProjectGraph,
    memo: HashMap<(String, String), Option<String>>,
}

impl<'g> Lookups<'g> {
    fn new(graph: &'g ProjectGraph) -> Lookups<'g> {
        Lookups {
            graph,
            memo: HashMap::new(),
        }
    }

    /// Key of `method` as found on `type_name` or its ancestors.
    fn method(&mut self, type_name: &str, method: &str) -> Option<String> {
        let graph = self.graph;
        self.memo
            .entry((type_name.to_string(), method.to_string()))
            .or_insert_with(|| {
                graph
                    .lookup_method(type_name, method)
                    .map(|(t, m)| method_key(&t.name, &m.name))
            })
            .clone()
    }

    fn on_type(&mut self, t: &str, call: &CallSite, confidence: f32) -> Option<Resolved> {
        let key = self.method(t, &call.callee)?;
        Some(vec![(Some(key), confidence, Resolution::ReceiverType)])
    }
}

fn resolve(
    lookups: &mut Lookups,
    names: &MethodNames,
    file: &FileSummary,
    call: &CallSite,
) -> Resolved {
    let graph = lookups.graph;
    // Written type names mean the project type nearest to this file.
    let key = |t: &'_ str| graph.resolve_type(t, &file.path).map(str::to_string);
    let receiver_type = call
        .receiver_type
        .as_deref()
        .map(|t| key(t).unwrap_or_else(|| t.to_string()));
    let found = match call.receiver_kind {
        ReceiverKind::SelfRef => receiver_type
            .as_deref()
            .and_then(|t| lookups.on_type(t, call, 0.95)),
        ReceiverKind::Super => call
            .caller_type
            .as_deref()
            .and_then(key)
            .and_then(|t| graph.types.get(&t))
            .and_then(|t| t.superclass.clone())
            .and_then(|s| lookups.on_type(&s, call, 0.95)),
        ReceiverKind::Typed | ReceiverKind::TypeName => {
            let t = receiver_type.as_deref().unwrap_or("");
            constructor(graph, t, &call.callee).or_else(|| lookups.on_type(t, call, 0.9))
        }
        ReceiverKind::None => bare_call(lookups, file, call),
        ReceiverKind::Unknown => None,
    };
    if let Some(found) = found {
        return found;
    }
    // The receiver type, when known, is outside the project: do not guess by name.
    let receiver_known = receiver_type
        .as_deref()
        .is_some_and(|t| graph.types.contains_key(t))
        || matches!(
            call.receiver_kind,
            ReceiverKind::Typed | ReceiverKind::TypeName
        );
    if receiver_known {
        return vec![(None, 0.0, Resolution::Unresolved)];
    }
    by_name(graph, names, file, call).unwrap_or_else(|| vec![(None, 0.0, Resolution::Unresolved)])
}

/// `Circle(…)`, `new Circle()`, `Circle::new()`, `[[Circle alloc] init]`; constructors
/// are inherited (Swift, Python, JavaScript), so ancestors are searched too. `type_key`
/// is a type key; `callee` the name as written.
fn constructor(graph: &ProjectGraph, type_key: &str, callee: &str) -> Option<Resolved> {
    let info = graph.types.get(type_key)?;
    let names: Vec<&str> = if callee == info.simple_name {
        CONSTRUCTORS.to_vec()
    } else if CONSTRUCTORS.contains(&callee) {
        vec![callee]
    } else {
        return None;
    };
    for ancestor in graph.inheritance_chain(type_key) {
        let Some(info) = graph.types.get(&ancestor) else {
            continue;
        };
        // Java/C++/Kotlin constructors are named after their own class.
        let own = |m: &&crate::graph::MethodInfo| {
            names.contains(&m.name.as_str()) || m.name == info.simple_name
        };
        if let Some(m) = info.methods.iter().find(own) {
            return Some(vec![(
                Some(method_key(&info.name, &m.name)),
                0.9,
                Resolution::Constructor,
            )]);
        }
    }
    None
}

fn bare_call(lookups: &mut Lookups, file: &FileSummary, call: &CallSite) -> Option<Resolved> {
    let graph = lookups.graph;
    if let Some(t) = graph.resolve_type(&call.callee, &file.path) {
        return constructor(graph, t, &call.callee);
    }
    if let Some(t) = call.caller_type.as_deref()
        && let Some(key) =
            lookups.method(graph.resolve_type(t, &file.path).unwrap_or(t), &call.callee)
    {
        return Some(vec![(Some(key), 0.85, Resolution::ImplicitSelf)]);
    }
    let candidates = graph.functions.get(&call.callee)?;
    if let Some(f) = candidates.iter().find(|f| f.file == file.path) {
        return Some(vec![(Some(f.key.clone()), 0.9, Resolution::SameFile)]);
    }
    if candidates.len() > MAX_CANDIDATES {
        return None;
    }
    spread(candidates.iter().map(|f| f.key.clone()).collect(), 0.8)
}

fn by_name(
    graph: &ProjectGraph,
    names: &MethodNames,
    file: &FileSummary,
    call: &CallSite,
) -> Option<Resolved> {
    let methods = names.0.get(&call.callee).map_or(&[][..], Vec::as_slice);
    if methods.len() > MAX_CANDIDATES {
        return None;
    }
    let mut keys: Vec<String> = methods.to_vec();
    // `pkg.Func()` / `module.func()` call free functions in Go and Python; elsewhere a
    // receiver means a method (`console.log` is not the project's `log`).
    let module_call = matches!(file.language, Lang::Go | Lang::Python)
        && call.receiver.as_deref().is_some_and(|r| {
            r.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        });
    if (call.receiver.is_none() || module_call)
        && let Some(fs) = graph.functions.get(&call.callee)
        && fs.len() <= MAX_CANDIDATES
    {
        keys.extend(fs.iter().map(|f| f.key.clone()));
    }
    spread(keys, 0.6)
}

/// One candidate gets `best`; several share it; too many are not resolved.
fn spread(keys: Vec<String>, best: f32) -> Option<Resolved> {
    if keys.is_empty() || keys.len() > MAX_CANDIDATES {
        return None;
    }
    let share = if keys.len() == 1 {
        best
    } else {
        best / keys.len() as f32
    };
    Some(
        keys.into_iter()
            .map(|k| (Some(k), round2(share), Resolution::ByName))
            .collect(),
    )
}

fn round2(x: f32) -> f32 {
    (x * 100.0).round() / 100.0
}
