//! Which call sites a change can resolve differently, so an update re-resolves only those.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::graph::{ProjectGraph, TypeInfo};
use crate::summary::FileSummary;

use super::{CallIndex, MAX_CANDIDATES};

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
    pub(super) keys: HashSet<String>,
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
    pub(super) fn files<'a>(
        &self,
        graph: &ProjectGraph,
        index: &'a CallIndex,
    ) -> BTreeSet<&'a str> {
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
