//! Resolving the parent names of a type to the keys of the project types they mean.

use super::ProjectGraph;
use crate::summary::ParentOrigin;

impl ProjectGraph {
    /// Replaces the parent names of a type by the keys of the project types they name,
    /// seen from the type's file and the modules its imports name.
    pub(super) fn resolve_parents(&mut self, key: &str) {
        let Some(info) = self.types.get(key) else {
            return;
        };
        let resolve = |name: &str| {
            let origin = info.parent_origins.get(name);
            let module = origin.and_then(|o| o.module.as_deref());
            match self.resolve_parent(name, &info.file, module, key) {
                Some(found) if found != key => found.to_string(),
                // Only the type itself has that name: the parent is outside the project
                // (`from http.client import HTTPConnection as _HTTPConnection`).
                Some(_) => outside(name, origin),
                None => name.to_string(),
            }
        };
        let superclass = info.superclass.as_deref().map(resolve);
        let conformances: Vec<String> = info.conformances.iter().map(|c| resolve(c)).collect();
        if let Some(info) = self.types.get_mut(key) {
            info.superclass = superclass;
            info.conformances = conformances;
        }
    }

    /// Key of the project type `name` (simple or qualified) refers to, seen from file
    /// `from`: the only candidate, else the one declared in `from`, else the one sharing
    /// the most leading directories with it (the first by path among equals).
    pub fn resolve_type(&self, name: &str, from: &str) -> Option<&str> {
        self.resolve_parent(name, from, None, "")
    }

    /// [`ProjectGraph::resolve_type`] for a parent of the type `child`: among same-named
    /// types, those in the `module` the file imports it from come first, and the child
    /// itself is never its own parent while another candidate exists.
    fn resolve_parent(
        &self,
        name: &str,
        from: &str,
        module: Option<&str>,
        child: &str,
    ) -> Option<&str> {
        let Some(keys) = self.refs.by_name.get(name) else {
            return self.types.get_key_value(name).map(|(k, _)| k.as_str());
        };
        if let [only] = keys.as_slice() {
            return Some(only);
        }
        let by_file = self.refs.by_file.get(name)?;
        if let Some(found) = module.and_then(|m| crate::merge::in_module(by_file, m, from, child)) {
            return Some(found);
        }
        match crate::merge::nearest(by_file, from) {
            Some(k) if k == child => {
                let others: Vec<(String, String)> = by_file
                    .iter()
                    .filter(|(_, k)| k != child)
                    .cloned()
                    .collect();
                let found = crate::merge::nearest(&others, from)?;
                keys.iter().find(|k| *k == found).map(String::as_str)
            }
            found => found,
        }
    }
}

/// How a parent outside the project that shares the child's simple name is shown, so it
/// is not taken for the child itself: as written (`_HTTPConnection`), else qualified by its
/// module (`http.client.HTTPConnection`), else by its name alone.
fn outside(name: &str, origin: Option<&ParentOrigin>) -> String {
    match origin {
        Some(ParentOrigin {
            written: Some(w), ..
        }) => w.clone(),
        Some(ParentOrigin {
            module: Some(m), ..
        }) => format!("{}.{name}", m.replace('/', ".")),
        _ => name.to_string(),
    }
}
