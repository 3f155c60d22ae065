//! The [`ProjectGraph`]: types merged across files, inheritance and conformance, method
//! overrides, the resolved call graph and the module topology.
//!
//! Invariant: the graph is derived only from [`FileSummary`] values, so it can be rebuilt
//! at any time from what the index stored; nothing in it is persisted on its own.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

use serde::Serialize;

use crate::calls::{CallEdge, CallIndex};
use crate::language::Lang;
use crate::summary::{FileSummary, Method, TypeDecl, TypeKind};
use crate::topology::{EntryPoint, ModuleGraph};

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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeInfo {
    pub name: String,
    /// Kind of the primary declaration; `extension` when the project only extends it.
    pub kind: TypeKind,
    pub language: Lang,
    pub file: String,
    pub line: usize,
    pub superclass: Option<String>,
    /// Protocols adopted anywhere (main body and extensions), in first-seen order.
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
#[derive(Debug, Clone, Default)]
pub struct ProjectGraph {
    pub types: BTreeMap<String, TypeInfo>,
    /// Direct subclasses by superclass name.
    pub subclasses: BTreeMap<String, Vec<String>>,
    /// Direct conformers by protocol name.
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
}

impl ProjectGraph {
    /// Builds the graph from file summaries (any order; paths must be unique).
    pub fn build<'a>(files: impl IntoIterator<Item = &'a FileSummary>) -> ProjectGraph {
        let mut files: Vec<&FileSummary> = files.into_iter().collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let mut graph = ProjectGraph::default();
        let started = std::time::Instant::now();
        let lap = |phase: &str| {
            tracing::debug!(
                phase,
                ms = started.elapsed().as_millis() as u64,
                "graph build"
            )
        };
        for file in &files {
            graph.add_file(file);
        }
        graph.fix_protocol_superclasses();
        graph.add_implicit_go_conformances();
        graph.index_relations();
        lap("types");
        graph.calls = CallIndex::build(&graph, &files);
        lap("calls");
        graph.modules = ModuleGraph::build(&graph, &files);
        lap("modules");
        graph.entry_points = crate::topology::entry_points(&graph, &files);
        graph.count_totals(files.len());
        graph
    }

    fn add_file(&mut self, file: &FileSummary) {
        *self.languages.entry(file.language).or_default() += 1;
        let ext = std::path::Path::new(&file.path)
            .extension()
            .and_then(|e| e.to_str())
            .map_or_else(|| "(none)".to_string(), |e| format!(".{e}"));
        *self.extensions.entry(ext).or_default() += 1;
        for decl in &file.types {
            self.add_decl(file, decl);
        }
        for f in &file.functions {
            self.functions
                .entry(f.name.clone())
                .or_default()
                .push(FunctionInfo {
                    key: function_key(&file.path, &f.name),
                    name: f.name.clone(),
                    signature: f.signature.clone(),
                    file: file.path.clone(),
                    line: f.line,
                    complexity: f.complexity,
                });
        }
    }

    fn add_decl(&mut self, file: &FileSummary, decl: &TypeDecl) {
        if decl.name.is_empty() {
            return;
        }
        let info = self
            .types
            .entry(decl.name.clone())
            .or_insert_with(|| TypeInfo {
                name: decl.name.clone(),
                kind: decl.kind,
                language: file.language,
                file: file.path.clone(),
                line: decl.line,
                superclass: None,
                conformances: Vec::new(),
                methods: Vec::new(),
                properties: Vec::new(),
                extensions: Vec::new(),
                declared: false,
            });
        if decl.kind.is_primary() && !info.declared {
            info.declared = true;
            info.kind = decl.kind;
            info.language = file.language;
            info.file = file.path.clone();
            info.line = decl.line;
        }
        if info.superclass.is_none() {
            info.superclass = decl.superclass.clone();
        }
        for c in &decl.conformances {
            if !info.conformances.contains(c) && *c != info.name {
                info.conformances.push(c.clone());
            }
        }
        let from_extension = (decl.kind == TypeKind::Extension).then(|| {
            decl.category
                .clone()
                .unwrap_or_else(|| "extension".to_string())
        });
        for m in &decl.methods {
            merge_method(info, m, &file.path, from_extension.clone());
        }
        for p in &decl.properties {
            if !info.properties.iter().any(|q| q.name == p.name) {
                info.properties.push(PropertyInfo {
                    name: p.name.clone(),
                    type_name: p.type_name.clone(),
                    is_static: p.is_static,
                    attributes: p.attributes.clone(),
                    file: file.path.clone(),
                    line: p.line,
                });
            }
        }
        if decl.kind == TypeKind::Extension {
            add_extension(info, decl, &file.path);
        }
    }

    /// Swift (and other first-parent-is-superclass rules) can take a project protocol
    /// for a superclass; move it to the conformances.
    fn fix_protocol_superclasses(&mut self) {
        let protocols: HashSet<String> = self
            .types
            .values()
            .filter(|t| t.kind == TypeKind::Protocol)
            .map(|t| t.name.clone())
            .collect();
        for info in self.types.values_mut() {
            if let Some(sup) = info.superclass.clone()
                && protocols.contains(&sup)
                && info.kind != TypeKind::Protocol
            {
                info.superclass = None;
                info.conformances.insert(0, sup);
            }
        }
    }

    /// Go types satisfy interfaces implicitly: a struct whose method set covers an
    /// interface's (non-empty) method set conforms to it.
    fn add_implicit_go_conformances(&mut self) {
        let interfaces: Vec<(String, BTreeSet<String>)> = self
            .types
            .values()
            .filter(|t| t.language == Lang::Go && t.kind == TypeKind::Protocol)
            .map(|t| (t.name.clone(), self.protocol_requirements(&t.name)))
            .filter(|(_, reqs)| !reqs.is_empty())
            .collect();
        let structs: Vec<String> = self
            .types
            .values()
            .filter(|t| t.language == Lang::Go && t.kind != TypeKind::Protocol)
            .map(|t| t.name.clone())
            .collect();
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

    fn index_relations(&mut self) {
        self.subclasses.clear();
        self.conformers.clear();
        for info in self.types.values() {
            if let Some(sup) = &info.superclass {
                self.subclasses
                    .entry(sup.clone())
                    .or_default()
                    .push(info.name.clone());
            }
            for c in &info.conformances {
                self.conformers
                    .entry(c.clone())
                    .or_default()
                    .push(info.name.clone());
            }
        }
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
        t.call_edges = self.calls.edges.len();
        t.resolved_call_edges = self
            .calls
            .edges
            .iter()
            .filter(|e| e.callee.is_some())
            .count();
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
            if let Some((info, m)) = self.lookup_method(class, method) {
                return vec![method_key(&info.name, &m.name)];
            }
            return Vec::new();
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

fn merge_method(info: &mut TypeInfo, m: &Method, file: &str, from_extension: Option<String>) {
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

fn add_extension(info: &mut TypeInfo, decl: &TypeDecl, file: &str) {
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
