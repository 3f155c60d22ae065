//! Modules (one per directory), their dependencies, strongly connected components
//! (Tarjan) and layers, and the project's entry points.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::graph::{ProjectGraph, TypeInfo};
use crate::language::Lang;
use crate::summary::{FileSummary, TypeKind};

/// Resolved calls below this confidence do not count as module dependencies.
pub(crate) const DEPENDENCY_CONFIDENCE: f32 = 0.5;

/// Protocols whose conformers start an application.
const APP_PROTOCOLS: &[&str] = &["UIApplicationDelegate", "NSApplicationDelegate", "App"];

/// One module: the files of one directory.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModuleInfo {
    pub name: String,
    pub files: usize,
    pub types: usize,
    pub languages: BTreeSet<Lang>,
    /// Modules this one uses, with the number of references.
    pub dependencies: BTreeMap<String, usize>,
    /// Index into [`ModuleGraph::components`].
    pub component: usize,
    /// 0 for modules that depend on nothing in the project; otherwise one more than the
    /// highest layer they depend on.
    pub layer: usize,
}

/// Module dependency graph with its condensation.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModuleGraph {
    pub modules: BTreeMap<String, ModuleInfo>,
    /// Strongly connected components, dependencies before dependents.
    pub components: Vec<Vec<String>>,
}

/// Where a program starts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntryPoint {
    pub file: String,
    /// `main`, `app-delegate`.
    pub kind: &'static str,
    pub symbol: Option<String>,
}

/// Module of a file: its directory (`.` for the root).
pub fn module_of(path: &str) -> String {
    match path.rsplit_once('/') {
        Some((dir, _)) => dir.to_string(),
        None => ".".to_string(),
    }
}

/// Module pairs (from, to) with a number of references.
pub(crate) type ModuleDeps = HashMap<(String, String), usize>;

/// Module pair of a reference from one file to another.
pub(crate) fn module_pair(from_file: &str, to_file: &str) -> (String, String) {
    (module_of(from_file), module_of(to_file))
}

pub(crate) fn add_dep(deps: &mut ModuleDeps, pair: (String, String), n: usize) {
    *deps.entry(pair).or_default() += n;
}

pub(crate) fn remove_dep(deps: &mut ModuleDeps, pair: &(String, String), n: usize) {
    if let Some(c) = deps.get_mut(pair) {
        *c = c.saturating_sub(n);
        if *c == 0 {
            deps.remove(pair);
        }
    }
}

/// Import targets per file and their module dependencies, kept between updates: an edit
/// re-resolves only the edited files' imports; a new or deleted file (which can change
/// what any import names) re-resolves all.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ImportIndex {
    targets: HashMap<String, Vec<String>>,
    pub(crate) deps: ModuleDeps,
}

impl ImportIndex {
    pub(crate) fn update(&mut self, all: &crate::graph::Summaries, changed: &[&str]) {
        let files_changed = changed
            .iter()
            .any(|p| all.contains_key(p) != self.targets.contains_key(*p));
        let by_stem = files_by_stem(all.keys().copied());
        let redo: Vec<&FileSummary> = if files_changed {
            self.targets.clear();
            self.deps.clear();
            all.values().copied().collect()
        } else {
            changed.iter().filter_map(|p| all.get(p).copied()).collect()
        };
        for f in redo {
            for t in self.targets.remove(&f.path).unwrap_or_default() {
                remove_dep(&mut self.deps, &module_pair(&f.path, &t), 1);
            }
            let targets: Vec<String> = f
                .imports
                .iter()
                .filter_map(|i| import_target(&f.path, &i.module, &by_stem))
                .map(str::to_string)
                .collect();
            for t in &targets {
                add_dep(&mut self.deps, module_pair(&f.path, t), 1);
            }
            self.targets.insert(f.path.clone(), targets);
        }
    }
}

/// The project's files (by path) grouped by stem, for [`import_target`].
pub(crate) fn files_by_stem<'a>(
    paths: impl Iterator<Item = &'a str>,
) -> HashMap<&'a str, Vec<&'a str>> {
    let mut by_stem: HashMap<&str, Vec<&str>> = HashMap::new();
    for p in paths {
        by_stem.entry(file_stem(p)).or_default().push(p);
    }
    by_stem
}

impl ModuleGraph {
    /// Modules with their dependencies (type relations, calls and imports, each kept up
    /// to date by its own index), their SCCs and layers.
    pub(crate) fn build(
        stats: &BTreeMap<String, ModuleStats>,
        deps: &[&ModuleDeps],
    ) -> ModuleGraph {
        let mut modules: BTreeMap<String, ModuleInfo> = stats
            .iter()
            .map(|(name, s)| {
                let info = ModuleInfo {
                    name: name.clone(),
                    files: s.files,
                    types: s.types,
                    languages: s.languages.keys().copied().collect(),
                    ..ModuleInfo::default()
                };
                (name.clone(), info)
            })
            .collect();
        for ((from, to), n) in deps.iter().flat_map(|d| d.iter()) {
            if from != to
                && modules.contains_key(to)
                && let Some(m) = modules.get_mut(from)
            {
                *m.dependencies.entry(to.clone()).or_default() += n;
            }
        }
        let mut out = ModuleGraph {
            modules,
            components: Vec::new(),
        };
        out.components = tarjan(&out.modules);
        out.assign_layers();
        out
    }

    fn assign_layers(&mut self) {
        let mut component_of: HashMap<String, usize> = HashMap::new();
        for (i, comp) in self.components.iter().enumerate() {
            for m in comp {
                component_of.insert(m.clone(), i);
            }
        }
        let mut layers = vec![0usize; self.components.len()];
        // Tarjan emits a component after everything it reaches, so dependencies first.
        for (i, comp) in self.components.iter().enumerate() {
            let mut layer = 0;
            for m in comp {
                for dep in self
                    .modules
                    .get(m)
                    .map(|x| x.dependencies.keys())
                    .into_iter()
                    .flatten()
                {
                    let c = component_of.get(dep).copied().unwrap_or(i);
                    if c != i {
                        layer = layer.max(layers[c] + 1);
                    }
                }
            }
            layers[i] = layer;
        }
        for (name, info) in &mut self.modules {
            let c = component_of.get(name).copied().unwrap_or(0);
            info.component = c;
            info.layer = layers.get(c).copied().unwrap_or(0);
        }
    }

    /// Components with more than one module: dependency cycles.
    pub fn cycles(&self) -> Vec<&Vec<String>> {
        self.components.iter().filter(|c| c.len() > 1).collect()
    }

    /// Modules grouped by layer, lowest first.
    pub fn layers(&self) -> BTreeMap<usize, Vec<String>> {
        let mut out: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for (name, info) in &self.modules {
            out.entry(info.layer).or_default().push(name.clone());
        }
        out
    }
}

/// The module dependencies one type contributes: to the modules declaring its superclass
/// and protocols, and from each of its extensions to its own module.
pub(crate) fn type_dependencies(graph: &ProjectGraph, info: &TypeInfo) -> Vec<(String, String)> {
    type_dependency_files(graph, info)
        .into_iter()
        .map(|(from, to)| module_pair(from, to))
        .collect()
}

/// [`type_dependencies`] as (from file, to file): the type's file to each declared
/// parent's file, and each extension's file to the type's file.
pub(crate) fn type_dependency_files<'g>(
    graph: &'g ProjectGraph,
    info: &'g TypeInfo,
) -> Vec<(&'g str, &'g str)> {
    let mut out = Vec::new();
    for p in info.superclass.iter().chain(info.conformances.iter()) {
        if let Some(target) = graph.types.get(p).filter(|t| t.declared) {
            out.push((info.file.as_str(), target.file.as_str()));
        }
    }
    if info.declared {
        for ext in &info.extensions {
            out.push((ext.file.as_str(), info.file.as_str()));
        }
    }
    out
}

/// Files, primary types and languages of one module.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ModuleStats {
    pub files: usize,
    pub types: usize,
    pub languages: BTreeMap<Lang, usize>,
}

/// Adds a file to the per-module counts (`add`), or removes it.
pub(crate) fn count_module_file(
    stats: &mut BTreeMap<String, ModuleStats>,
    file: &FileSummary,
    add: bool,
) {
    let name = module_of(&file.path);
    let s = stats.entry(name.clone()).or_default();
    let types = file.types.iter().filter(|t| t.kind.is_primary()).count();
    let lang = s.languages.entry(file.language).or_default();
    if add {
        s.files += 1;
        s.types += types;
        *lang += 1;
    } else {
        s.files = s.files.saturating_sub(1);
        s.types = s.types.saturating_sub(types);
        *lang = lang.saturating_sub(1);
    }
    s.languages.retain(|_, n| *n > 0);
    if s.files == 0 {
        stats.remove(&name);
    }
}

/// File that defines the callable with this key.
pub(crate) fn callable_file<'g>(graph: &'g ProjectGraph, key: &'g str) -> Option<&'g str> {
    if let Some((ty, name)) = key.rsplit_once('.')
        && let Some(info) = graph.types.get(ty)
    {
        return info
            .methods
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.file.as_str());
    }
    key.split_once("::").map(|(path, _)| path)
}

/// The file an import names, among the project's files by stem: the one in the importing
/// file's directory first, else the first by path.
pub(crate) fn import_target<'a>(
    from: &str,
    module: &str,
    by_stem: &HashMap<&str, Vec<&'a str>>,
) -> Option<&'a str> {
    let normalized = normalized_import(from, module);
    let stem = normalized.rsplit('/').next()?;
    let candidates = by_stem.get(stem)?;
    let suffix = format!("/{normalized}");
    let matches = |p: &&&str| {
        let without_ext = p.rsplit_once('.').map_or(**p, |(a, _)| a);
        without_ext == normalized || without_ext.ends_with(&suffix)
    };
    candidates
        .iter()
        .filter(matches)
        .find(|p| module_of(p) == module_of(from))
        .or_else(|| candidates.iter().find(matches))
        .copied()
}

/// The file stem an import is looked up by (see [`files_by_stem`]): which added or removed
/// files can change where it leads.
pub(crate) fn import_stem(from: &str, module: &str) -> Option<String> {
    normalized_import(from, module)
        .rsplit('/')
        .next()
        .map(str::to_string)
}

/// The stem of a file as [`files_by_stem`] keys it.
pub(crate) fn file_stem(path: &str) -> &str {
    let stem = path.rsplit('/').next().unwrap_or(path);
    stem.split('.').next().unwrap_or(stem)
}

/// An import as a `/`-separated path without a known extension.
fn normalized_import(from: &str, module: &str) -> String {
    let normalized = if module.starts_with("./") || module.starts_with("../") {
        join_relative(&module_of(from), module)
    } else {
        module.replace("::", "/").replace('.', "/")
    };
    let normalized = normalized.trim_end_matches("/h").trim_end_matches("/hpp");
    strip_known_extension(normalized).to_string()
}

fn strip_known_extension(path: &str) -> &str {
    for ext in ["/js", "/ts", "/tsx", "/jsx", "/mjs", "/py"] {
        if let Some(p) = path.strip_suffix(ext) {
            return p;
        }
    }
    path
}

/// `src/app` + `../lib/x.js` → `src/lib/x/js` (dots become separators like other imports).
fn join_relative(dir: &str, rel: &str) -> String {
    let mut parts: Vec<&str> = if dir == "." {
        Vec::new()
    } else {
        dir.split('/').collect()
    };
    for seg in rel.split('/') {
        match seg {
            "." | "" => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/").replace('.', "/")
}

/// Tarjan's strongly connected components (iterative, so deep chains cannot overflow).
fn tarjan(modules: &BTreeMap<String, ModuleInfo>) -> Vec<Vec<String>> {
    let names: Vec<&String> = modules.keys().collect();
    let index_of: HashMap<&String, usize> =
        names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let adj: Vec<Vec<usize>> = names
        .iter()
        .map(|n| {
            modules[*n]
                .dependencies
                .keys()
                .filter_map(|d| index_of.get(d).copied())
                .collect()
        })
        .collect();
    let mut state = TarjanState::new(names.len());
    for v in 0..names.len() {
        if state.index[v].is_none() {
            state.run(v, &adj);
        }
    }
    state
        .components
        .into_iter()
        .map(|c| {
            let mut c: Vec<String> = c.into_iter().map(|i| names[i].clone()).collect();
            c.sort();
            c
        })
        .collect()
}

struct TarjanState {
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    components: Vec<Vec<usize>>,
}

impl TarjanState {
    fn new(n: usize) -> TarjanState {
        TarjanState {
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            next: 0,
            components: Vec::new(),
        }
    }

    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
    }

    /// Depth-first search with an explicit stack of (node, next edge to look at).
    fn run(&mut self, root: usize, adj: &[Vec<usize>]) {
        self.visit(root);
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut edge)) = work.last_mut() {
            if let Some(&w) = adj[v].get(*edge) {
                *edge += 1;
                match self.index[w] {
                    None => {
                        self.visit(w);
                        work.push((w, 0));
                    }
                    Some(wi) if self.on_stack[w] => self.low[v] = self.low[v].min(wi),
                    Some(_) => {}
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                self.low[parent] = self.low[parent].min(self.low[v]);
            }
            if Some(self.low[v]) == self.index[v] {
                self.pop_component(v);
            }
        }
    }

    fn pop_component(&mut self, v: usize) {
        let mut comp = Vec::new();
        while let Some(w) = self.stack.pop() {
            self.on_stack[w] = false;
            comp.push(w);
            if w == v {
                break;
            }
        }
        self.components.push(comp);
    }
}

pub(crate) fn entry_points(graph: &ProjectGraph, files: &[&FileSummary]) -> Vec<EntryPoint> {
    let mut out: Vec<EntryPoint> = files.iter().filter_map(|f| main_entry(f)).collect();
    for info in graph.types.values().filter(|t| is_app_delegate(t)) {
        out.push(EntryPoint {
            file: info.file.clone(),
            kind: "app-delegate",
            symbol: Some(info.name.clone()),
        });
    }
    out
}

/// The file's `main` entry point, when its content makes it one.
pub(crate) fn main_entry(f: &FileSummary) -> Option<EntryPoint> {
    f.has_entry_point.then(|| EntryPoint {
        file: f.path.clone(),
        kind: "main",
        symbol: f
            .functions
            .iter()
            .find(|m| m.name == "main")
            .map(|m| m.name.clone()),
    })
}

/// True for a type (not a protocol) adopting an application-delegate protocol.
pub(crate) fn is_app_delegate(info: &TypeInfo) -> bool {
    info.kind != TypeKind::Protocol
        && info
            .conformances
            .iter()
            .any(|c| APP_PROTOCOLS.contains(&c.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn module(name: &str, deps: &[&str]) -> (String, ModuleInfo) {
        let info = ModuleInfo {
            name: name.to_string(),
            dependencies: deps.iter().map(|d| (d.to_string(), 1)).collect(),
            ..ModuleInfo::default()
        };
        (name.to_string(), info)
    }

    #[test]
    fn tarjan_finds_cycles_and_layers_put_dependencies_first() {
        let modules: BTreeMap<String, ModuleInfo> = [
            module("app", &["ui", "core"]),
            module("ui", &["core", "widgets"]),
            module("widgets", &["ui"]),
            module("core", &[]),
        ]
        .into_iter()
        .collect();
        let mut g = ModuleGraph {
            modules,
            components: Vec::new(),
        };
        g.components = tarjan(&g.modules);
        g.assign_layers();
        assert_eq!(
            g.components,
            vec![
                vec!["core".to_string()],
                vec!["ui".to_string(), "widgets".to_string()],
                vec!["app".to_string()],
            ]
        );
        let layers: Vec<(String, usize)> = g
            .modules
            .values()
            .map(|m| (m.name.clone(), m.layer))
            .collect();
        assert_eq!(
            layers,
            vec![
                ("app".to_string(), 2),
                ("core".to_string(), 0),
                ("ui".to_string(), 1),
                ("widgets".to_string(), 1),
            ]
        );
    }

    #[test]
    fn relative_imports_resolve_against_the_importing_directory() {
        assert_eq!(join_relative("src/app", "../lib/x.js"), "src/lib/x/js");
        assert_eq!(join_relative(".", "./log"), "log");
    }
}
