//! Modules (one per directory), their dependencies, strongly connected components
//! (Tarjan) and layers, and the project's entry points.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::graph::ProjectGraph;
use crate::language::Lang;
use crate::summary::{FileSummary, TypeKind};

/// Resolved calls below this confidence do not count as module dependencies.
const DEPENDENCY_CONFIDENCE: f32 = 0.5;

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

impl ModuleGraph {
    pub(crate) fn build(graph: &ProjectGraph, files: &[&FileSummary]) -> ModuleGraph {
        let mut modules: BTreeMap<String, ModuleInfo> = BTreeMap::new();
        for f in files {
            let m = modules
                .entry(module_of(&f.path))
                .or_insert_with(|| ModuleInfo {
                    name: module_of(&f.path),
                    ..ModuleInfo::default()
                });
            m.files += 1;
            m.types += f.types.iter().filter(|t| t.kind.is_primary()).count();
            m.languages.insert(f.language);
        }
        let mut deps = Dependencies::default();
        deps.add_type_relations(graph);
        deps.add_calls(graph);
        deps.add_imports(files);
        for ((from, to), n) in deps.counts {
            if from != to
                && modules.contains_key(&to)
                && let Some(m) = modules.get_mut(&from)
            {
                *m.dependencies.entry(to).or_default() += n;
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

#[derive(Default)]
struct Dependencies {
    counts: BTreeMap<(String, String), usize>,
}

impl Dependencies {
    fn add(&mut self, from_file: &str, to_file: &str) {
        let key = (module_of(from_file), module_of(to_file));
        *self.counts.entry(key).or_default() += 1;
    }

    /// A type depends on the module that declares its superclass and protocols; an
    /// extension depends on the module of the type it extends.
    fn add_type_relations(&mut self, graph: &ProjectGraph) {
        for info in graph.types.values() {
            let parents = info.superclass.iter().chain(info.conformances.iter());
            for p in parents {
                if let Some(target) = graph.types.get(p).filter(|t| t.declared) {
                    self.add(&info.file, &target.file);
                }
            }
            for ext in &info.extensions {
                if info.declared {
                    self.add(&ext.file, &info.file);
                }
            }
        }
    }

    fn add_calls(&mut self, graph: &ProjectGraph) {
        for edge in graph.calls.iter() {
            if edge.confidence < DEPENDENCY_CONFIDENCE {
                continue;
            }
            if let Some(target) = edge.callee.as_deref().and_then(|k| callable_file(graph, k)) {
                self.add(&edge.file, &target);
            }
        }
    }

    /// Imports that name a project file (relative JS paths, Python dotted modules, C
    /// includes, Java/Go package paths) by matching path suffixes.
    fn add_imports(&mut self, files: &[&FileSummary]) {
        let mut by_stem: HashMap<&str, Vec<&str>> = HashMap::new();
        for f in files {
            let stem = f.path.rsplit('/').next().unwrap_or(&f.path);
            let stem = stem.split('.').next().unwrap_or(stem);
            by_stem.entry(stem).or_default().push(&f.path);
        }
        for f in files {
            for import in &f.imports {
                if let Some(target) = import_target(&f.path, &import.module, &by_stem) {
                    self.add(&f.path, target);
                }
            }
        }
    }
}

/// File that defines the callable with this key.
fn callable_file(graph: &ProjectGraph, key: &str) -> Option<String> {
    if let Some((path, _)) = key.split_once("::") {
        return Some(path.to_string());
    }
    let (ty, name) = key.rsplit_once('.')?;
    let info = graph.types.get(ty)?;
    info.methods
        .iter()
        .find(|m| m.name == name)
        .map(|m| m.file.clone())
}

fn import_target<'a>(
    from: &str,
    module: &str,
    by_stem: &HashMap<&str, Vec<&'a str>>,
) -> Option<&'a str> {
    let normalized = if module.starts_with("./") || module.starts_with("../") {
        join_relative(&module_of(from), module)
    } else {
        module.replace("::", "/").replace('.', "/")
    };
    let normalized = normalized.trim_end_matches("/h").trim_end_matches("/hpp");
    let normalized = strip_known_extension(normalized);
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
    let mut out: Vec<EntryPoint> = files
        .iter()
        .filter(|f| f.has_entry_point)
        .map(|f| EntryPoint {
            file: f.path.clone(),
            kind: "main",
            symbol: f
                .functions
                .iter()
                .find(|m| m.name == "main")
                .map(|m| m.name.clone()),
        })
        .collect();
    for info in graph.types.values() {
        let is_app = info.kind != TypeKind::Protocol
            && info
                .conformances
                .iter()
                .any(|c| APP_PROTOCOLS.contains(&c.as_str()));
        if is_app {
            out.push(EntryPoint {
                file: info.file.clone(),
                kind: "app-delegate",
                symbol: Some(info.name.clone()),
            });
        }
    }
    out
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
