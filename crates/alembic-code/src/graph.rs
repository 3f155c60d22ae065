//! The [`ProjectGraph`]: types merged across files, inheritance and conformance, method
//! overrides, the resolved call graph and the module topology.
//!
//! Invariant: the graph is derived only from [`FileSummary`] values, so it can be rebuilt
//! at any time from what the index stored; nothing in it is persisted on its own.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use serde::Serialize;

use crate::calls::{CallEdge, CallIndex};
use crate::language::Lang;
use crate::summary::{FileSummary, Method, TypeDecl, TypeKind};
use crate::topology::{EntryPoint, ModuleDeps, ModuleGraph, ModuleStats, add_dep, remove_dep};

/// One method of a merged type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MethodInfo {
    pub name: String,
    pub is_static: bool,
    pub signature: String,
    pub file: String,
    pub line: usize,
    pub end_line: usize,
    pub complexity: u32,
    pub is_declaration: bool,
    pub is_optional: bool,
    /// Category / trait / extension the method was written in, if not the main body.
    pub from_extension: Option<String>,
}

/// One property of a merged type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PropertyInfo {
    pub name: String,
    pub type_name: Option<String>,
    pub is_static: bool,
    pub attributes: Vec<String>,
    pub file: String,
    pub line: usize,
}

/// An extension, category or impl block of a type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtensionInfo {
    /// Category name (ObjC) or implemented trait (Rust); `None` for plain extensions.
    pub category: Option<String>,
    pub conformances: Vec<String>,
    pub methods: Vec<String>,
    pub file: String,
    pub line: usize,
}

/// A type merged from all its declarations in the project.
///
/// Identity: types are keyed by [`TypeInfo::name`], which is the simple name when only
/// one type of that name exists and `scope::Name` otherwise, where the scope is the
/// declaring file (Python, JavaScript, TypeScript, Rust), the directory (Swift, Go, Java,
/// Kotlin, C++) or nothing (C and Objective-C have one global namespace). Extensions and
/// out-of-line members join the type of their scope, else the nearest one by path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeInfo {
    /// Unique key: the simple name, qualified with its scope when the name is shared.
    pub name: String,
    /// The name as written in the source.
    #[serde(skip)]
    pub simple_name: String,
    /// Kind of the primary declaration; `extension` when the project only extends it.
    pub kind: TypeKind,
    pub language: Lang,
    pub file: String,
    pub line: usize,
    /// Key of the superclass (the name as written when it is not a project type).
    pub superclass: Option<String>,
    /// Protocols adopted anywhere (main body and extensions), in first-seen order, as keys.
    pub conformances: Vec<String>,
    pub methods: Vec<MethodInfo>,
    pub properties: Vec<PropertyInfo>,
    pub extensions: Vec<ExtensionInfo>,
    /// True when the project declares the type (not just extends or mentions it).
    pub declared: bool,
}

/// A free function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionInfo {
    pub key: String,
    pub name: String,
    pub signature: String,
    pub file: String,
    pub line: usize,
    pub complexity: u32,
}

/// A subclass (or conformer) that redefines a method.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Override {
    pub class_name: String,
    pub method: String,
    pub file: String,
    pub line: usize,
    pub complexity: u32,
    /// `override` for a subclass, `implementation` for a protocol conformer.
    pub relation: &'static str,
}

/// Counts for the project overview.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub files: usize,
    pub classes: usize,
    pub structs: usize,
    pub enums: usize,
    pub protocols: usize,
    pub extensions: usize,
    pub methods: usize,
    pub functions: usize,
    pub call_edges: usize,
    pub resolved_call_edges: usize,
}

/// The whole-project model the ast-graph tools query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProjectGraph {
    pub types: BTreeMap<String, TypeInfo>,
    /// Direct subclasses by superclass key.
    pub subclasses: BTreeMap<String, Vec<String>>,
    /// Direct conformers by protocol key.
    pub conformers: BTreeMap<String, Vec<String>>,
    /// Free functions by name.
    pub functions: BTreeMap<String, Vec<FunctionInfo>>,
    pub calls: CallIndex,
    pub modules: ModuleGraph,
    pub entry_points: Vec<EntryPoint>,
    pub totals: Totals,
    /// Files per language.
    pub languages: BTreeMap<Lang, usize>,
    /// Files per extension.
    pub extensions: BTreeMap<String, usize>,
    /// What incremental updates need to find the parts a change reaches.
    pub(crate) refs: Refs,
    pub(crate) imports: crate::topology::ImportIndex,
}

/// Reverse indexes kept for incremental updates.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Refs {
    /// Type keys by simple name, in key order.
    pub by_name: BTreeMap<String, Vec<String>>,
    /// For simple names shared by several types: (file, key) of each, sorted, so the
    /// nearest one to a file is found by binary search.
    pub by_file: HashMap<String, Vec<(String, String)>>,
    /// Files declaring (or extending) a type, by simple name.
    pub decl_files: HashMap<String, BTreeSet<String>>,
    /// Simple names of types that name a parent as written, with the number of such
    /// declarations.
    pub children: HashMap<String, BTreeMap<String, usize>>,
    /// Method keys by method name, in type-key order (name-only call resolution).
    pub method_names: HashMap<String, Vec<String>>,
    /// Module dependencies from type relations, and each type's share of them.
    pub type_deps: ModuleDeps,
    pub type_deps_of: HashMap<String, Vec<(String, String)>>,
    /// Files, primary types and languages per module.
    pub modules: BTreeMap<String, ModuleStats>,
}

/// All current summaries by path: what [`ProjectGraph::update`] reads besides the changes.
pub type Summaries<'a> = BTreeMap<&'a str, &'a FileSummary>;

impl ProjectGraph {
    /// Builds the graph from file summaries (any order; paths must be unique).
    pub fn build<'a>(files: impl IntoIterator<Item = &'a FileSummary>) -> ProjectGraph {
        let all: Summaries = files.into_iter().map(|f| (f.path.as_str(), f)).collect();
        let changed: Vec<&str> = all.keys().copied().collect();
        let mut graph = ProjectGraph::default();
        graph.update(&all, &changed, &[]);
        graph
    }

    /// Brings the graph up to date after `changed` files were added, edited or removed.
    /// `all` holds every current summary; `previous` the summaries this graph was built
    /// from for the changed files that existed before. Only the types named in the changed
    /// files (and those deriving from them), and the call sites that can resolve
    /// differently, are recomputed; the result equals [`ProjectGraph::build`] over `all`.
    pub fn update(&mut self, all: &Summaries, changed: &[&str], previous: &[FileSummary]) {
        let started = std::time::Instant::now();
        let lap = |phase: &str| {
            tracing::debug!(
                phase,
                ms = started.elapsed().as_millis() as u64,
                "graph update"
            )
        };
        let new: Vec<&FileSummary> = changed.iter().filter_map(|p| all.get(p).copied()).collect();
        let old: Vec<&FileSummary> = previous.iter().collect();
        for f in &old {
            self.forget_file(f);
        }
        for f in &new {
            self.learn_file(f);
        }
        let names = self.affected_type_names(&old, &new);
        let before = self.remove_types(&names);
        self.rebuild_types(all, &names);
        lap("types");
        // When every file changed (a build) every call site is resolved anyway.
        let changed_set: HashSet<&str> = changed.iter().copied().collect();
        let reach = if all.keys().all(|p| changed_set.contains(p)) {
            crate::calls::Reach::default()
        } else {
            crate::calls::Reach::of_change(self, &before, &names, &old, &new)
        };
        lap("reach");
        let files: Vec<&FileSummary> = all.values().copied().collect();
        let mut calls = std::mem::take(&mut self.calls);
        calls.update(self, all, &reach, changed);
        self.calls = calls;
        lap("calls");
        self.imports.update(all, changed);
        self.modules = ModuleGraph::build(
            &self.refs.modules,
            &[
                &self.refs.type_deps,
                &self.calls.module_deps,
                &self.imports.deps,
            ],
        );
        lap("modules");
        self.entry_points = crate::topology::entry_points(self, &files);
        self.count_totals(files.len());
        lap("end");
    }

    /// Drops what a file contributed to the per-file indexes.
    fn forget_file(&mut self, file: &FileSummary) {
        self.count_file(file, false);
        for f in &file.functions {
            if let Some(list) = self.functions.get_mut(&f.name) {
                list.retain(|x| x.file != file.path);
                if list.is_empty() {
                    self.functions.remove(&f.name);
                }
            }
        }
        for decl in &file.types {
            if let Some(files) = self.refs.decl_files.get_mut(&decl.name) {
                files.remove(&file.path);
                if files.is_empty() {
                    self.refs.decl_files.remove(&decl.name);
                }
            }
            for parent in decl.superclass.iter().chain(&decl.conformances) {
                let Some(children) = self.refs.children.get_mut(parent) else {
                    continue;
                };
                if let Some(n) = children.get_mut(&decl.name) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        children.remove(&decl.name);
                    }
                }
                if children.is_empty() {
                    self.refs.children.remove(parent);
                }
            }
        }
    }

    /// Adds a file's functions and declarations to the per-file indexes.
    fn learn_file(&mut self, file: &FileSummary) {
        self.count_file(file, true);
        for f in &file.functions {
            let list = self.functions.entry(f.name.clone()).or_default();
            // Functions stay in path order, as a build in path order lists them.
            let at = list.partition_point(|x| x.file.as_str() <= file.path.as_str());
            list.insert(
                at,
                FunctionInfo {
                    key: function_key(&file.path, &f.name),
                    name: f.name.clone(),
                    signature: f.signature.clone(),
                    file: file.path.clone(),
                    line: f.line,
                    complexity: f.complexity,
                },
            );
        }
        for decl in file.types.iter().filter(|d| !d.name.is_empty()) {
            self.refs
                .decl_files
                .entry(decl.name.clone())
                .or_default()
                .insert(file.path.clone());
            for parent in decl.superclass.iter().chain(&decl.conformances) {
                *self
                    .refs
                    .children
                    .entry(parent.clone())
                    .or_default()
                    .entry(decl.name.clone())
                    .or_default() += 1;
            }
        }
    }

    /// Simple names whose types must be rebuilt: those declared in the changed files,
    /// the types naming them as parents, and every Go type when Go code changed (Go
    /// interfaces are satisfied implicitly, by method sets).
    fn affected_type_names(&self, old: &[&FileSummary], new: &[&FileSummary]) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = old
            .iter()
            .chain(new)
            .flat_map(|f| f.types.iter().map(|t| t.name.clone()))
            .filter(|n| !n.is_empty())
            .collect();
        let children: Vec<String> = names
            .iter()
            .filter_map(|n| self.refs.children.get(n))
            .flat_map(|c| c.keys().cloned())
            .collect();
        names.extend(children);
        let go_changed = old.iter().chain(new).any(|f| f.language == Lang::Go)
            || names.iter().any(|n| self.has_go_type(n));
        if go_changed {
            let go: Vec<String> = self
                .types
                .values()
                .filter(|t| t.language == Lang::Go)
                .map(|t| t.simple_name.clone())
                .collect();
            names.extend(go);
            let declared_go = self
                .refs
                .decl_files
                .iter()
                .filter(|(_, files)| files.iter().any(|f| f.ends_with(".go")));
            names.extend(declared_go.map(|(n, _)| n.clone()));
        }
        names
    }

    fn has_go_type(&self, simple: &str) -> bool {
        self.refs.by_name.get(simple).is_some_and(|keys| {
            keys.iter()
                .any(|k| self.types.get(k).is_some_and(|t| t.language == Lang::Go))
        })
    }

    /// Removes the types with these simple names; returns them.
    fn remove_types(&mut self, names: &BTreeSet<String>) -> Vec<TypeInfo> {
        let mut removed = Vec::new();
        for name in names {
            self.refs.by_file.remove(name);
            for key in self.refs.by_name.remove(name).unwrap_or_default() {
                if let Some(info) = self.types.remove(&key) {
                    self.forget_methods(&info);
                    self.forget_relations(&info);
                    for pair in self.refs.type_deps_of.remove(&key).unwrap_or_default() {
                        remove_dep(&mut self.refs.type_deps, &pair, 1);
                    }
                    removed.push(info);
                }
            }
        }
        removed
    }

    fn forget_methods(&mut self, info: &TypeInfo) {
        for m in &info.methods {
            if let Some(keys) = self.refs.method_names.get_mut(&m.name) {
                let key = method_key(&info.name, &m.name);
                keys.retain(|k| *k != key);
                if keys.is_empty() {
                    self.refs.method_names.remove(&m.name);
                }
            }
        }
    }

    /// Merges the declarations of these names again, then resolves their parents, moves
    /// protocols taken for superclasses, adds Go's implicit conformances and re-indexes
    /// subclasses and conformers.
    fn rebuild_types(&mut self, all: &Summaries, names: &BTreeSet<String>) {
        let mut rebuilt = Vec::new();
        for name in names {
            let decls = self.declarations_of(all, name);
            let infos = crate::merge::merge_named(name, &decls);
            let keys: Vec<String> = infos.iter().map(|t| t.name.clone()).collect();
            for info in infos {
                self.types.insert(info.name.clone(), info);
            }
            if keys.len() > 1 {
                let mut by_file: Vec<(String, String)> = keys
                    .iter()
                    .filter_map(|k| self.types.get(k))
                    .map(|t| (t.file.clone(), t.name.clone()))
                    .collect();
                by_file.sort();
                self.refs.by_file.insert(name.clone(), by_file);
            }
            if !keys.is_empty() {
                self.refs.by_name.insert(name.clone(), keys.clone());
                rebuilt.extend(keys);
            }
        }
        for key in &rebuilt {
            self.resolve_parents(key);
        }
        for key in &rebuilt {
            self.fix_protocol_superclass(key);
        }
        self.add_implicit_go_conformances(&rebuilt);
        for key in &rebuilt {
            self.learn_methods(key);
            self.learn_relations(key);
        }
        for key in &rebuilt {
            let Some(info) = self.types.get(key) else {
                continue;
            };
            let pairs = crate::topology::type_dependencies(self, info);
            for pair in &pairs {
                add_dep(&mut self.refs.type_deps, pair.clone(), 1);
            }
            self.refs.type_deps_of.insert(key.clone(), pairs);
        }
    }

    /// Every declaration named `name`, in path order then source order.
    fn declarations_of<'a>(
        &self,
        all: &Summaries<'a>,
        name: &str,
    ) -> Vec<(&'a FileSummary, &'a TypeDecl)> {
        let Some(files) = self.refs.decl_files.get(name) else {
            return Vec::new();
        };
        files
            .iter()
            .filter_map(|p| all.get(p.as_str()).copied())
            .flat_map(|f| {
                f.types
                    .iter()
                    .filter(|t| t.name == name)
                    .map(move |t| (f, t))
            })
            .collect()
    }

    fn learn_methods(&mut self, key: &str) {
        let Some(info) = self.types.get(key) else {
            return;
        };
        for m in &info.methods {
            let keys = self.refs.method_names.entry(m.name.clone()).or_default();
            let k = method_key(&info.name, &m.name);
            // Keys stay in type-key order, as a build over the sorted types lists them.
            let at = keys.partition_point(|x| {
                x.rsplit_once('.').map_or(x.as_str(), |(t, _)| t) < info.name.as_str()
            });
            if keys.get(at) != Some(&k) {
                keys.insert(at, k);
            }
        }
    }

    /// Replaces the written parent names of a type by the keys of the project types they
    /// name, seen from the type's file.
    fn resolve_parents(&mut self, key: &str) {
        let Some(info) = self.types.get(key) else {
            return;
        };
        let from = info.file.clone();
        let superclass = info
            .superclass
            .as_deref()
            .map(|s| self.resolve_type(s, &from).unwrap_or(s).to_string());
        let conformances: Vec<String> = info
            .conformances
            .iter()
            .map(|c| self.resolve_type(c, &from).unwrap_or(c).to_string())
            .collect();
        if let Some(info) = self.types.get_mut(key) {
            info.superclass = superclass;
            info.conformances = conformances;
        }
    }

    /// Key of the project type `name` (simple or qualified) refers to, seen from file
    /// `from`: the only candidate, else the one declared in `from`, else the one sharing
    /// the most leading directories with it (the first by path among equals).
    pub fn resolve_type(&self, name: &str, from: &str) -> Option<&str> {
        let Some(keys) = self.refs.by_name.get(name) else {
            return self.types.get_key_value(name).map(|(k, _)| k.as_str());
        };
        if let [only] = keys.as_slice() {
            return Some(only);
        }
        let by_file = self.refs.by_file.get(name)?;
        crate::merge::nearest(by_file, from)
    }

    /// Types whose simple name (or key) is `name`, in key order.
    pub fn types_named(&self, name: &str) -> Vec<&TypeInfo> {
        match self.refs.by_name.get(name) {
            Some(keys) => keys.iter().filter_map(|k| self.types.get(k)).collect(),
            None => self.types.get(name).into_iter().collect(),
        }
    }

    /// Swift (and other first-parent-is-superclass rules) can take a project protocol
    /// for a superclass; move it to the conformances.
    fn fix_protocol_superclass(&mut self, key: &str) {
        let Some(info) = self.types.get(key) else {
            return;
        };
        let is_protocol = |k: &str| {
            self.types
                .get(k)
                .is_some_and(|t| t.kind == TypeKind::Protocol)
        };
        if info.kind == TypeKind::Protocol || !info.superclass.as_deref().is_some_and(is_protocol) {
            return;
        }
        if let Some(info) = self.types.get_mut(key)
            && let Some(sup) = info.superclass.take()
        {
            info.conformances.insert(0, sup);
        }
    }

    /// Go types satisfy interfaces implicitly: a struct whose method set covers an
    /// interface's (non-empty) method set conforms to it. Runs over the rebuilt types,
    /// which include every Go type whenever Go code changed.
    fn add_implicit_go_conformances(&mut self, rebuilt: &[String]) {
        let interfaces: Vec<(String, BTreeSet<String>)> = self
            .types
            .values()
            .filter(|t| t.language == Lang::Go && t.kind == TypeKind::Protocol)
            .map(|t| (t.name.clone(), self.protocol_requirements(&t.name)))
            .filter(|(_, reqs)| !reqs.is_empty())
            .collect();
        if interfaces.is_empty() {
            return;
        }
        let mut structs: Vec<&String> = rebuilt
            .iter()
            .filter(|k| {
                self.types
                    .get(*k)
                    .is_some_and(|t| t.language == Lang::Go && t.kind != TypeKind::Protocol)
            })
            .collect();
        structs.sort();
        let structs: Vec<String> = structs.into_iter().cloned().collect();
        for name in structs {
            let methods = self.method_set(&name);
            for (iface, reqs) in &interfaces {
                if reqs.is_subset(&methods)
                    && let Some(info) = self.types.get_mut(&name)
                    && !info.conformances.contains(iface)
                {
                    info.conformances.push(iface.clone());
                }
            }
        }
    }

    /// Method names a protocol requires, including inherited protocols.
    fn protocol_requirements(&self, name: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for t in self.ancestry(name, true) {
            if let Some(info) = self.types.get(&t) {
                out.extend(info.methods.iter().map(|m| m.name.clone()));
            }
        }
        out
    }

    /// Method names callable on a type, including embedded/inherited ones.
    fn method_set(&self, name: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for t in self.ancestry(name, true) {
            if let Some(info) = self.types.get(&t)
                && info.kind != TypeKind::Protocol
            {
                out.extend(info.methods.iter().map(|m| m.name.clone()));
            }
        }
        out
    }

    /// Drops a type from the subclass and conformer lists of its parents.
    fn forget_relations(&mut self, info: &TypeInfo) {
        let lists = info
            .superclass
            .iter()
            .map(|s| (true, s))
            .chain(info.conformances.iter().map(|c| (false, c)));
        for (is_class, parent) in lists {
            let map = if is_class {
                &mut self.subclasses
            } else {
                &mut self.conformers
            };
            if let Some(list) = map.get_mut(parent) {
                list.retain(|k| *k != info.name);
                if list.is_empty() {
                    map.remove(parent);
                }
            }
        }
    }

    /// Adds a type to the subclass and conformer lists of its parents, in key order.
    fn learn_relations(&mut self, key: &str) {
        let Some(info) = self.types.get(key) else {
            return;
        };
        let superclass = info.superclass.clone();
        let conformances = info.conformances.clone();
        let insert = |list: &mut Vec<String>| {
            let at = list.partition_point(|k| k.as_str() < key);
            if list.get(at).is_none_or(|k| k != key) {
                list.insert(at, key.to_string());
            }
        };
        if let Some(sup) = superclass {
            insert(self.subclasses.entry(sup).or_default());
        }
        for c in conformances {
            insert(self.conformers.entry(c).or_default());
        }
    }

    /// Counts a file in (or out of) the per-language, per-extension and per-module totals.
    fn count_file(&mut self, file: &FileSummary, add: bool) {
        let ext = std::path::Path::new(&file.path)
            .extension()
            .and_then(|e| e.to_str())
            .map_or_else(|| "(none)".to_string(), |e| format!(".{e}"));
        let step = |n: &mut usize| {
            *n = if add { *n + 1 } else { n.saturating_sub(1) };
        };
        step(self.languages.entry(file.language).or_default());
        step(self.extensions.entry(ext).or_default());
        self.languages.retain(|_, n| *n > 0);
        self.extensions.retain(|_, n| *n > 0);
        crate::topology::count_module_file(&mut self.refs.modules, file, add);
    }

    fn count_totals(&mut self, files: usize) {
        let mut t = Totals {
            files,
            ..Totals::default()
        };
        for info in self.types.values() {
            match (info.declared, info.kind) {
                (true, TypeKind::Class) => t.classes += 1,
                (true, TypeKind::Struct | TypeKind::Union) => t.structs += 1,
                (true, TypeKind::Enum) => t.enums += 1,
                (true, TypeKind::Protocol) => t.protocols += 1,
                _ => {}
            }
            t.extensions += info.extensions.len();
            t.methods += info.methods.len();
        }
        t.functions = self.functions.values().map(Vec::len).sum();
        t.call_edges = self.calls.len();
        t.resolved_call_edges = self.calls.resolved_len();
        self.totals = t;
    }

    /// `name` followed by its superclasses up to the root (cycle-safe).
    pub fn inheritance_chain(&self, name: &str) -> Vec<String> {
        let mut chain = vec![name.to_string()];
        let mut seen: HashSet<String> = chain.iter().cloned().collect();
        let mut current = name.to_string();
        while let Some(sup) = self.types.get(&current).and_then(|t| t.superclass.clone()) {
            if !seen.insert(sup.clone()) {
                break;
            }
            chain.push(sup.clone());
            current = sup;
        }
        chain
    }

    /// Breadth-first subclasses of `name` (not including it), up to `max_depth` levels.
    pub fn descendants(&self, name: &str, max_depth: usize) -> Vec<(String, usize)> {
        self.breadth_first(name, max_depth, |n| {
            self.subclasses.get(n).cloned().unwrap_or_default()
        })
    }

    /// Types conforming to a protocol, directly, through protocol inheritance, or as
    /// subclasses of a conformer.
    pub fn all_conformers(&self, protocol: &str) -> Vec<String> {
        let reached = self.breadth_first(protocol, usize::MAX, |n| {
            let mut next = self.conformers.get(n).cloned().unwrap_or_default();
            next.extend(self.subclasses.get(n).cloned().unwrap_or_default());
            next
        });
        reached
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| {
                self.types
                    .get(n)
                    .is_none_or(|t| t.kind != TypeKind::Protocol)
            })
            .collect()
    }

    /// Superclasses and protocols of `name` (transitively), including `name` first.
    /// `with_conformances` also follows protocols and embedded types.
    pub fn ancestry(&self, name: &str, with_conformances: bool) -> Vec<String> {
        let reached = self.breadth_first(name, usize::MAX, |n| {
            let Some(info) = self.types.get(n) else {
                return Vec::new();
            };
            let mut next: Vec<String> = info.superclass.iter().cloned().collect();
            if with_conformances {
                next.extend(info.conformances.iter().cloned());
            }
            next
        });
        std::iter::once(name.to_string())
            .chain(reached.into_iter().map(|(n, _)| n))
            .collect()
    }

    /// Types deriving from `key` (subclasses and conformers, transitively).
    pub(crate) fn derived(&self, key: &str) -> Vec<(String, usize)> {
        self.breadth_first(key, usize::MAX, |n| {
            let mut next = self.conformers.get(n).cloned().unwrap_or_default();
            next.extend(self.subclasses.get(n).cloned().unwrap_or_default());
            next
        })
    }

    fn breadth_first(
        &self,
        start: &str,
        max_depth: usize,
        next: impl Fn(&str) -> Vec<String>,
    ) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        let mut seen: HashSet<String> = HashSet::from([start.to_string()]);
        let mut queue = VecDeque::from([(start.to_string(), 0usize)]);
        while let Some((node, depth)) = queue.pop_front() {
            if depth >= max_depth {
                continue;
            }
            for child in next(&node) {
                if seen.insert(child.clone()) {
                    out.push((child.clone(), depth + 1));
                    queue.push_back((child, depth + 1));
                }
            }
        }
        out
    }

    /// Finds `method` on `type_name` or the closest ancestor (superclass chain first,
    /// then protocols/traits/embedded types). Returns the defining type.
    pub fn lookup_method(&self, type_name: &str, method: &str) -> Option<(&TypeInfo, &MethodInfo)> {
        for t in self.ancestry(type_name, true) {
            if let Some(info) = self.types.get(&t)
                && let Some(m) = info.methods.iter().find(|m| m.name == method)
            {
                return Some((info, m));
            }
        }
        None
    }

    /// Subclasses (and, for a protocol, conformers) that define `method` themselves.
    pub fn overrides_of(&self, class_name: &str, method: &str) -> Vec<Override> {
        let is_protocol = self
            .types
            .get(class_name)
            .is_some_and(|t| t.kind == TypeKind::Protocol);
        let mut out = Vec::new();
        let candidates: Vec<(String, &'static str)> = if is_protocol {
            self.all_conformers(class_name)
                .into_iter()
                .map(|c| (c, "implementation"))
                .collect()
        } else {
            self.descendants(class_name, usize::MAX)
                .into_iter()
                .map(|(c, _)| (c, "override"))
                .collect()
        };
        for (name, relation) in candidates {
            let Some(info) = self.types.get(&name) else {
                continue;
            };
            if let Some(m) = info
                .methods
                .iter()
                .find(|m| m.name == method && !m.is_declaration)
            {
                out.push(Override {
                    class_name: name.clone(),
                    method: method.to_string(),
                    file: m.file.clone(),
                    line: m.line,
                    complexity: m.complexity,
                    relation,
                });
            }
        }
        out
    }

    /// Extensions/categories/impl blocks per type, for types that have any.
    pub fn category_map(&self) -> Vec<(&TypeInfo, &[ExtensionInfo])> {
        let mut out: Vec<(&TypeInfo, &[ExtensionInfo])> = self
            .types
            .values()
            .filter(|t| !t.extensions.is_empty())
            .map(|t| (t, t.extensions.as_slice()))
            .collect();
        out.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.name.cmp(&b.0.name)));
        out
    }

    /// Call edges, by index, whose callee is `key`.
    pub fn callers(&self, key: &str) -> Vec<&CallEdge> {
        self.calls.callers(key)
    }

    /// Call edges, by index, made from `key`.
    pub fn callees(&self, key: &str) -> Vec<&CallEdge> {
        self.calls.callees(key)
    }

    /// Keys of every method or function matching `query`: `Class.method`, a bare
    /// method/function name, or a free-function key.
    pub fn find_callables(&self, query: &str) -> Vec<String> {
        if let Some((class, method)) = query.rsplit_once('.') {
            // A shared simple name means every type of that name.
            return self
                .types_named(class)
                .iter()
                .filter_map(|t| self.lookup_method(&t.name, method))
                .map(|(info, m)| method_key(&info.name, &m.name))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
        }
        let mut keys = Vec::new();
        for info in self.types.values() {
            if info.methods.iter().any(|m| m.name == query) {
                keys.push(method_key(&info.name, query));
            }
        }
        if let Some(fs) = self.functions.get(query) {
            keys.extend(fs.iter().map(|f| f.key.clone()));
        }
        if keys.is_empty() && self.calls.is_known(query) {
            keys.push(query.to_string());
        }
        keys
    }

    /// Language-independent kind counts for a language, used by renderings.
    pub fn type_names_of_kind(&self, kind: TypeKind) -> Vec<&str> {
        self.types
            .values()
            .filter(|t| t.kind == kind && t.declared)
            .map(|t| t.name.as_str())
            .collect()
    }
}

pub(crate) fn merge_method(
    info: &mut TypeInfo,
    m: &Method,
    file: &str,
    from_extension: Option<String>,
) {
    let new = MethodInfo {
        name: m.name.clone(),
        is_static: m.is_static,
        signature: m.signature.clone(),
        file: file.to_string(),
        line: m.line,
        end_line: m.end_line,
        complexity: m.complexity,
        is_declaration: m.is_declaration,
        is_optional: m.is_optional,
        from_extension,
    };
    // Prototypes (headers, interfaces, class bodies) and definitions of one method merge;
    // a C++ out-of-line definition does not repeat `static`, so staticness may differ.
    let same = |x: &MethodInfo| {
        x.name == m.name && (x.is_static == m.is_static || x.is_declaration != m.is_declaration)
    };
    match info.methods.iter_mut().find(|x| same(x)) {
        Some(existing) if existing.is_declaration && !m.is_declaration => {
            let signature = std::mem::take(&mut existing.signature);
            let is_static = existing.is_static || m.is_static;
            *existing = new;
            existing.signature = signature;
            existing.is_static = is_static;
        }
        Some(existing) => {
            if !existing.is_declaration && m.is_declaration {
                existing.is_static |= m.is_static;
                existing.signature = m.signature.clone();
            }
        }
        None => info.methods.push(new),
    }
}

pub(crate) fn add_extension(info: &mut TypeInfo, decl: &TypeDecl, file: &str) {
    let methods: Vec<String> = decl.methods.iter().map(|m| m.name.clone()).collect();
    // An ObjC category appears twice (interface + implementation): merge them.
    if let Some(existing) = info
        .extensions
        .iter_mut()
        .find(|e| e.category.is_some() && e.category == decl.category)
    {
        for m in methods {
            if !existing.methods.contains(&m) {
                existing.methods.push(m);
            }
        }
        for c in &decl.conformances {
            if !existing.conformances.contains(c) {
                existing.conformances.push(c.clone());
            }
        }
        return;
    }
    info.extensions.push(ExtensionInfo {
        category: decl.category.clone(),
        conformances: decl.conformances.clone(),
        methods,
        file: file.to_string(),
        line: decl.line,
    });
}

/// Key of a method in the call graph.
pub fn method_key(type_name: &str, method: &str) -> String {
    format!("{type_name}.{method}")
}

/// Key of a free function in the call graph (functions are per file).
pub fn function_key(path: &str, name: &str) -> String {
    format!("{path}::{name}")
}
