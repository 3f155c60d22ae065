//! The [`ProjectGraph`]: types merged across files, inheritance and conformance, method
//! overrides, the resolved call graph and the module topology.
//!
//! Invariant: the graph is derived only from [`FileSummary`] values, so it can be rebuilt
//! at any time from what the index stored; nothing in it is persisted on its own.

mod query;
mod resolve;
mod update;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::calls::CallIndex;
use crate::language::Lang;
use crate::summary::{FileSummary, Method, TypeDecl, TypeKind};
use crate::topology::{EntryPoint, ModuleDeps, ModuleGraph, ModuleStats};

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
    /// Key of the superclass (its simple name when it is not a project type).
    pub superclass: Option<String>,
    /// Protocols adopted anywhere (main body and extensions), in first-seen order, as keys.
    pub conformances: Vec<String>,
    pub methods: Vec<MethodInfo>,
    pub properties: Vec<PropertyInfo>,
    pub extensions: Vec<ExtensionInfo>,
    /// True when the project declares the type (not just extends or mentions it).
    pub declared: bool,
    /// Where each parent (by simple name) comes from, as its declarations' imports or
    /// qualified names say (first declaration first): the module picks among same-named
    /// types, and what was written names a parent outside the project.
    #[serde(skip)]
    pub(crate) parent_origins: BTreeMap<String, crate::summary::ParentOrigin>,
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
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

impl Totals {
    /// Counts one merged type: its kind when the project declares it, its extensions and
    /// methods.
    pub(crate) fn add_type(&mut self, info: &TypeInfo) {
        match (info.declared, info.kind) {
            (true, TypeKind::Class) => self.classes += 1,
            (true, TypeKind::Struct | TypeKind::Union) => self.structs += 1,
            (true, TypeKind::Enum) => self.enums += 1,
            (true, TypeKind::Protocol) => self.protocols += 1,
            _ => {}
        }
        self.extensions += info.extensions.len();
        self.methods += info.methods.len();
    }
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
    /// Simple names of types that name a parent (by its de-aliased simple name), with the
    /// number of such declarations.
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
