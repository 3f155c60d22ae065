//! Merging the declarations that share a simple name into [`TypeInfo`]s, and choosing
//! between same-named types.
//!
//! Primary declarations (class, struct, enum, protocol…) in the same *scope* are one type;
//! in different scopes they are different types, keyed `scope::Name`. Extensions,
//! categories, impl blocks and out-of-line members join the type of their own scope, or
//! else the nearest type by path, or, when the project declares no such type, an
//! extension-only type keyed by the bare name.

use crate::graph::{TypeInfo, add_extension, merge_method};
use crate::language::Lang;
use crate::summary::{FileSummary, TypeDecl, TypeKind};
use crate::topology::module_of;

/// Where a type name must be unique in a language: the file for languages whose files
/// are modules, nothing for C and Objective-C (one global namespace), else the directory
/// (Swift targets, Go and Java/Kotlin packages, C++ without namespace information).
pub fn scope_of(lang: Lang, path: &str) -> String {
    match lang {
        Lang::Python | Lang::JavaScript | Lang::TypeScript | Lang::Tsx | Lang::Rust => {
            path.to_string()
        }
        Lang::C | Lang::ObjC => String::new(),
        Lang::Swift | Lang::Go | Lang::Java | Lang::Kotlin | Lang::Cpp => module_of(path),
    }
}

/// Key of a type with simple name `name` in `scope` when `shared` (several scopes).
fn type_key(name: &str, scope: &str, shared: bool) -> String {
    if shared && !scope.is_empty() {
        format!("{scope}::{name}")
    } else {
        name.to_string()
    }
}

/// The types named `name`, from all its declarations in path order then source order.
pub(crate) fn merge_named(name: &str, decls: &[(&FileSummary, &TypeDecl)]) -> Vec<TypeInfo> {
    let mut scopes: Vec<(String, &str)> = Vec::new();
    for (file, decl) in decls {
        let scope = scope_of(file.language, &file.path);
        if decl.kind.is_primary() && !scopes.iter().any(|(s, _)| *s == scope) {
            scopes.push((scope, file.path.as_str()));
        }
    }
    let shared = scopes.len() > 1;
    let mut groups: Vec<Option<TypeInfo>> = vec![None; scopes.len().max(1)];
    for (file, decl) in decls {
        let i = group_of(&scopes, file, decl);
        let key = match scopes.get(i) {
            Some((scope, _)) => type_key(name, scope, shared),
            None => name.to_string(),
        };
        let info = groups[i].get_or_insert_with(|| new_type(key, file, decl));
        add_decl(info, file, decl);
    }
    groups.into_iter().flatten().collect()
}

/// Index of the group a declaration belongs to (0 when there is no primary at all): its
/// own scope's, else the one in the module its file imports the type from (a Rust
/// `use a::C; impl C`), else the nearest by path.
fn group_of(scopes: &[(String, &str)], file: &FileSummary, decl: &TypeDecl) -> usize {
    let scope = scope_of(file.language, &file.path);
    if let Some(i) = scopes.iter().position(|(s, _)| *s == scope) {
        return i;
    }
    let module = decl
        .origins
        .iter()
        .find(|o| o.name == decl.name && !decl.kind.is_primary())
        .and_then(|o| o.module.as_deref());
    if let Some(module) = module {
        let mut by_file: Vec<(String, String)> = scopes
            .iter()
            .map(|(_, p)| (p.to_string(), p.to_string()))
            .collect();
        by_file.sort();
        if let Some(path) = in_module(&by_file, module, &file.path, "")
            && let Some(i) = scopes.iter().position(|(_, p)| *p == path)
        {
            return i;
        }
    }
    let mut best = 0;
    let mut best_len = 0;
    for (i, (_, path)) in scopes.iter().enumerate() {
        let len = common_dirs(path, &file.path);
        if len > best_len {
            best = i;
            best_len = len;
        }
    }
    best
}

/// Number of leading directories two paths share.
pub(crate) fn common_dirs(a: &str, b: &str) -> usize {
    dirs_of(a)
        .zip(dirs_of(b))
        .take_while(|(x, y)| x == y)
        .count()
}

/// The directory names of a `/`-separated path.
fn dirs_of(path: &str) -> impl Iterator<Item = &str> {
    let end = path.rfind('/').unwrap_or(0);
    path[..end].split('/').filter(|d| !d.is_empty())
}

/// Of several same-named types, given as (file, key) sorted, the one `from` most likely
/// means: one declared in `from`, else the first (by path) of those sharing the most
/// leading directories with it. Sorted paths put the best match next to where `from`
/// would sort, so this is a binary search plus a look at the neighbours.
pub(crate) fn nearest<'a>(by_file: &'a [(String, String)], from: &str) -> Option<&'a str> {
    let at = by_file.partition_point(|(f, _)| f.as_str() < from);
    if let Some((f, k)) = by_file.get(at)
        && f == from
    {
        return Some(k);
    }
    let around = [at.checked_sub(1), Some(at)];
    let best = around
        .iter()
        .flatten()
        .filter_map(|&i| by_file.get(i))
        .map(|(f, _)| common_dirs(f, from))
        .max()
        .unwrap_or(0);
    let prefix: String = from
        .split('/')
        .take(best)
        .map(|d| format!("{d}/"))
        .collect();
    let first = by_file.partition_point(|(f, _)| f.as_str() < prefix.as_str());
    by_file.get(first).map(|(_, k)| k.as_str())
}

/// Of several same-named types, given as (file, key) sorted, the one a parent imported
/// from `module` means: those [`module_score`] ranks best, and among those the one
/// [`nearest`] to `from`; never `child` (a type is not its own parent). `None` when no
/// other file is in the module.
pub(crate) fn in_module<'a>(
    by_file: &'a [(String, String)],
    module: &str,
    from: &str,
    child: &str,
) -> Option<&'a str> {
    let candidates = || by_file.iter().filter(|(_, k)| k != child);
    let best = candidates()
        .map(|(f, _)| module_score(f, module))
        .max()
        .filter(|b| *b > 0)?;
    let matching: Vec<(String, String)> = candidates()
        .filter(|(f, _)| module_score(f, module) == best)
        .cloned()
        .collect();
    let key = nearest(&matching, from)?;
    by_file
        .iter()
        .find(|(_, k)| k == key)
        .map(|(_, k)| k.as_str())
}

/// How well a file fits a module given as `/`-separated segments: 3 when the file is the
/// module (`a/b.py`, or the package's own `a/b/__init__.py`, `a/b/index.ts`,
/// `a/b/mod.rs`), 2 when it sits directly in the module's directory (`a/b/Base.java`), 1
/// when it lies deeper under a directory path of that name (a Swift module's
/// `Sources/UIKit/Views/`), else 0.
pub(crate) fn module_score(file: &str, module: &str) -> u8 {
    let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
    let (dir, name) = stem.rsplit_once('/').unwrap_or(("", stem));
    let package_file = matches!(name, "__init__" | "index" | "mod");
    if ends_with_segments(stem, module) || (package_file && ends_with_segments(dir, module)) {
        3
    } else if ends_with_segments(dir, module) {
        2
    } else if format!("/{dir}/").contains(&format!("/{module}/")) {
        1
    } else {
        0
    }
}

/// Whether `path` ends with the segments of `suffix` (`a/b/c` ends with `b/c`, not with
/// `/c`'s neighbour `bc`).
fn ends_with_segments(path: &str, suffix: &str) -> bool {
    path == suffix
        || path
            .strip_suffix(suffix)
            .is_some_and(|rest| rest.ends_with('/'))
}

fn new_type(key: String, file: &FileSummary, decl: &TypeDecl) -> TypeInfo {
    TypeInfo {
        name: key,
        simple_name: decl.name.clone(),
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
        parent_origins: std::collections::BTreeMap::new(),
    }
}

/// Adds one declaration to its type. Parents stay simple names until resolved to keys.
fn add_decl(info: &mut TypeInfo, file: &FileSummary, decl: &TypeDecl) {
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
    for origin in &decl.origins {
        info.parent_origins
            .entry(origin.name.clone())
            .or_insert_with(|| origin.clone());
    }
    for c in &decl.conformances {
        // A type does not conform to itself, unless the file says the name is another
        // module's (`class Base implements other.Base`).
        let elsewhere = info
            .parent_origins
            .get(c)
            .is_some_and(|o| o.module.is_some());
        let own = *c == info.simple_name && !elsewhere;
        if !info.conformances.contains(c) && !own {
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
            info.properties.push(crate::graph::PropertyInfo {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_fit_modules_as_the_module_its_package_or_a_directory_under_it() {
        let cases = [
            (
                "src/flask/sansio/blueprints.py",
                "flask/sansio/blueprints",
                3,
            ),
            ("docutils/writers/__init__.py", "docutils/writers", 3),
            ("web/base/index.ts", "web/base", 3),
            ("src/a/b/mod.rs", "a/b", 3),
            ("docutils/writers/manpage.py", "docutils/writers", 2),
            ("src/com/acme/Base.java", "com/acme", 2),
            ("Sources/UIKit/Views/UIView.swift", "UIKit", 1),
            ("src/notflask/x.py", "flask/x", 0),
            ("src/acme/Base.java", "com/acme", 0),
        ];
        let got: Vec<u8> = cases.iter().map(|(f, m, _)| module_score(f, m)).collect();
        let want: Vec<u8> = cases.iter().map(|c| c.2).collect();
        pretty_assertions::assert_eq!(got, want);
    }
}
