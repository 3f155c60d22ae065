//! Incremental maintenance of the [`ProjectGraph`]: forgetting and learning files,
//! rebuilding the types a change reaches, relations and totals.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use rayon::prelude::*;

use super::{FunctionInfo, ProjectGraph, Summaries, Totals, TypeInfo, function_key, method_key};
use crate::language::Lang;
use crate::summary::{FileSummary, TypeDecl, TypeKind};
use crate::topology::{ModuleGraph, add_dep, remove_dep};

impl ProjectGraph {
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
        // Many names (a build): one pass over every file instead of one scan of each
        // declaring file's types per name, which is quadratic in files declaring
        // thousands of types (generated bindings).
        let mut grouped = (names.len() > all.len()).then(|| self.declarations_by_name(all));
        let declared: Vec<(&String, Vec<(&FileSummary, &TypeDecl)>)> = names
            .iter()
            .map(|name| match grouped.as_mut() {
                Some(by_name) => (name, by_name.remove(name.as_str()).unwrap_or_default()),
                None => (name, self.declarations_of(all, name)),
            })
            .collect();
        // Each name merges on its own (a third of a build's type phase): in parallel,
        // keeping the names' order.
        let merged: Vec<(&String, Vec<TypeInfo>)> = declared
            .into_par_iter()
            .map(|(name, decls)| (name, crate::merge::merge_named(name, &decls)))
            .collect();
        for (name, infos) in merged {
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
        }
        self.learn_relations(&rebuilt);
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

    /// [`Self::declarations_of`] for every name at once.
    fn declarations_by_name<'a>(
        &self,
        all: &Summaries<'a>,
    ) -> HashMap<&'a str, Vec<(&'a FileSummary, &'a TypeDecl)>> {
        let mut by_name: HashMap<&'a str, Vec<(&'a FileSummary, &'a TypeDecl)>> = HashMap::new();
        for (&path, &f) in all {
            for t in &f.types {
                let listed = self.refs.decl_files.get(&t.name);
                if listed.is_some_and(|files| files.contains(path)) {
                    by_name.entry(t.name.as_str()).or_default().push((f, t));
                }
            }
        }
        by_name
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
        for (is_class, parent) in parents(info) {
            let map = self.relation_lists(is_class);
            if let Some(list) = map.get_mut(parent) {
                list.retain(|k| *k != info.name);
                if list.is_empty() {
                    map.remove(parent);
                }
            }
        }
    }

    /// Adds types to the subclass and conformer lists of their parents, which stay in key
    /// order without repeats: appended, then each touched list sorted once (an insert per
    /// key was quadratic in lists of tens of thousands, such as the implementors of
    /// `Clone`).
    fn learn_relations(&mut self, keys: &[String]) {
        let pairs: Vec<(bool, String, &String)> = keys
            .iter()
            .filter_map(|key| self.types.get(key).map(|info| (key, info)))
            .flat_map(|(key, info)| parents(info).map(move |(c, p)| (c, p.clone(), key)))
            .collect();
        let mut touched: HashSet<(bool, String)> = HashSet::new();
        for (is_class, parent, key) in pairs {
            let list = self.relation_lists(is_class).entry(parent.clone());
            list.or_default().push(key.clone());
            touched.insert((is_class, parent));
        }
        for (is_class, parent) in touched {
            if let Some(list) = self.relation_lists(is_class).get_mut(&parent) {
                // The stable sort merges the sorted list with the appended run in linear
                // time, which an update touching a few keys of a long list needs.
                list.sort();
                list.dedup();
            }
        }
    }

    /// The subclass lists (`is_class`) or the conformer lists, by parent.
    fn relation_lists(&mut self, is_class: bool) -> &mut BTreeMap<String, Vec<String>> {
        if is_class {
            &mut self.subclasses
        } else {
            &mut self.conformers
        }
    }

    /// Counts a file in (or out of) the per-language, per-extension and per-module totals.
    fn count_file(&mut self, file: &FileSummary, add: bool) {
        let ext = crate::index::stat_rows::extension_of(&file.path);
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
            t.add_type(info);
        }
        t.functions = self.functions.values().map(Vec::len).sum();
        (t.call_edges, t.resolved_call_edges) = self.calls.per_file_totals();
        self.totals = t;
    }
}

/// A type's parents: its superclass (`true`), then its conformances.
fn parents(info: &TypeInfo) -> impl Iterator<Item = (bool, &String)> {
    let superclass = info.superclass.iter().map(|s| (true, s));
    superclass.chain(info.conformances.iter().map(|c| (false, c)))
}
