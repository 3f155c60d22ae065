//! Read-only queries over the [`ProjectGraph`]: hierarchy walks, method lookup,
//! overrides, categories and call-graph lookups.

use std::collections::{BTreeSet, HashSet, VecDeque};

use super::{ExtensionInfo, MethodInfo, Override, ProjectGraph, TypeInfo, method_key};
use crate::calls::CallEdge;
use crate::summary::TypeKind;

impl ProjectGraph {
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
    ///
    /// Visits the types in [`ProjectGraph::ancestry`]'s order (with conformances), but
    /// stops at the first that defines `method` and copies no name: resolving every call
    /// site of a project asks this for each receiver type.
    pub fn lookup_method(&self, type_name: &str, method: &str) -> Option<(&TypeInfo, &MethodInfo)> {
        // The keys of the types defining `method`, in type-key order (see `learn_methods`):
        // no type defines it, nothing to walk; else a binary search rules out the types
        // that do not, instead of a scan of each one's methods.
        let definers = self.refs.method_names.get(method)?;
        let defined = |t: &str| {
            let listed = definers
                .binary_search_by(|k| k.rsplit_once('.').map_or(k.as_str(), |(o, _)| o).cmp(t));
            if listed.is_err() && !method.contains('.') {
                return None;
            }
            let info = self.types.get(t)?;
            let m = info.methods.iter().find(|m| m.name == method)?;
            Some((info, m))
        };
        if let Some(found) = defined(type_name) {
            return Some(found);
        }
        let mut seen: HashSet<&str> = HashSet::from([type_name]);
        let mut queue: VecDeque<&str> = VecDeque::from([type_name]);
        while let Some(t) = queue.pop_front() {
            let Some(info) = self.types.get(t) else {
                continue;
            };
            for next in info.superclass.iter().chain(&info.conformances) {
                if seen.insert(next) {
                    if let Some(found) = defined(next) {
                        return Some(found);
                    }
                    queue.push_back(next);
                }
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
