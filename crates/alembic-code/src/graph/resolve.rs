//! Resolving the parent names of a type to the keys of the project types they mean.

use super::ProjectGraph;

impl ProjectGraph {
    /// Replaces the parent names of a type by the keys of the project types they name,
    /// seen from the type's file and the modules its imports name.
    pub(super) fn resolve_parents(&mut self, key: &str) {
        let Some(info) = self.types.get(key) else {
            return;
        };
        let resolve = |name: &str| {
            let module = info.parent_modules.get(name).map(String::as_str);
            self.resolve_parent(name, &info.file, module, key)
                .unwrap_or(name)
                .to_string()
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
        if let Some(found) = module.and_then(|m| crate::merge::in_module(by_file, m, from)) {
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
