//! Import aliases and qualified parent names, resolved once a file is walked.
//!
//! Extractors write each parent as it appears (`SansioBlueprint`, `ns.Base`,
//! `com.acme.Base("x")`, `fmt::Display`) and record what the imports bind
//! ([`ImportedName`]). [`resolve`] turns every parent into the simple name of the type it
//! means (`Blueprint`, `Base`, `Display`) and keeps, as a [`ParentOrigin`], what was
//! written and the module it comes from, which the graph uses to choose among same-named
//! project types. Only the file itself is read: a name re-exported under another name
//! elsewhere, or bound by a wildcard import, stays as written.

use std::collections::HashMap;

use super::last_ident;
use crate::language::Lang;
use crate::summary::{FileSummary, Import, ParentOrigin, ReceiverKind, TypeDecl, TypeKind};

/// What a local name stands for: a name in a module, or the module itself.
struct Binding {
    name: Option<String>,
    module: Vec<String>,
}

/// Replaces written parents by simple names with their origins, renames Rust `impl`
/// blocks of aliased types, and de-aliases type names the calls were resolved against.
pub(super) fn resolve(out: &mut FileSummary) {
    let bindings = bindings(out.language, &out.path, &out.imports);
    for decl in &mut out.types {
        resolve_decl(out.language, &out.path, &bindings, decl);
    }
    if bindings.is_empty() {
        return;
    }
    for call in &mut out.calls {
        let is_type = matches!(
            call.receiver_kind,
            ReceiverKind::Typed | ReceiverKind::TypeName
        );
        if is_type
            && let Some(n) = call
                .receiver_type
                .as_deref()
                .and_then(|t| renamed(&bindings, t))
        {
            call.receiver_type = Some(n);
        }
    }
    if out.language == Lang::Rust {
        resolve_rust_impls(out, &bindings);
    }
}

/// The type name a local alias stands for, when it is one (`D` for `use a::C as D`).
fn renamed(bindings: &HashMap<String, Binding>, local: &str) -> Option<String> {
    match bindings.get(local) {
        Some(Binding {
            name: Some(name), ..
        }) if name != local && is_type_name(name) => Some(name.clone()),
        _ => None,
    }
}

/// `impl D { … }` with `use a::C as D` adds to `C` of `a`: the block and the calls made in
/// it are renamed, and an origin names the module, which picks among same-named `C`s.
fn resolve_rust_impls(out: &mut FileSummary, bindings: &HashMap<String, Binding>) {
    for decl in out
        .types
        .iter_mut()
        .filter(|t| t.kind == TypeKind::Extension)
    {
        let Some(b) = bindings.get(&decl.name) else {
            continue;
        };
        let written = decl.name.clone();
        if let Some(n) = renamed(bindings, &written) {
            for call in &mut out.calls {
                if call.caller_type.as_deref() == Some(written.as_str()) {
                    call.caller_type = Some(n.clone());
                }
            }
            decl.name = n;
        }
        decl.origins.push(ParentOrigin {
            written: (decl.name != written).then_some(written),
            module: joined(&b.module),
            name: decl.name.clone(),
        });
    }
}

fn is_type_name(name: &str) -> bool {
    name.chars().next().is_some_and(char::is_uppercase)
}

fn bindings(lang: Lang, path: &str, imports: &[Import]) -> HashMap<String, Binding> {
    imports
        .iter()
        .flat_map(|i| &i.names)
        .map(|n| {
            let binding = Binding {
                name: n.name.clone(),
                module: module_segments(lang, path, &n.from),
            };
            (n.local.clone(), binding)
        })
        .collect()
}

fn resolve_decl(lang: Lang, path: &str, bindings: &HashMap<String, Binding>, decl: &mut TypeDecl) {
    let mut origins = Vec::new();
    let mut one = |written: &mut String| {
        let (name, origin) = resolve_parent(lang, path, bindings, written);
        *written = name;
        origins.extend(origin);
    };
    if let Some(s) = decl.superclass.as_mut() {
        one(s);
    }
    for c in &mut decl.conformances {
        one(c);
    }
    // A Rust `impl Trait for Type` names the trait as its category too.
    if lang == Lang::Rust
        && let Some(category) = decl.category.as_mut()
    {
        *category = resolve_parent(lang, path, bindings, category).0;
    }
    decl.conformances.retain(|c| !c.is_empty());
    decl.origins = origins;
}

/// The simple name a written parent means, and where it comes from when the file says.
fn resolve_parent(
    lang: Lang,
    path: &str,
    bindings: &HashMap<String, Binding>,
    written: &str,
) -> (String, Option<ParentOrigin>) {
    let simple = last_ident(written);
    if simple.is_empty() {
        return (String::new(), None);
    }
    let head = written
        .split(['<', '(', '[', '{'])
        .next()
        .unwrap_or("")
        .trim();
    let qualifier = head
        .rfind(simple)
        .map(|at| &head[..at])
        .and_then(|q| q.strip_suffix("::").or_else(|| q.strip_suffix('.')))
        .map(|q| q.rsplit(char::is_whitespace).next().unwrap_or(q))
        .map(|q| q.trim_start_matches(['&', '*']))
        .filter(|q| !q.is_empty());
    let Some(qualifier) = qualifier else {
        let Some(b) = bindings.get(simple) else {
            return (simple.to_string(), None);
        };
        let name = b.name.clone().unwrap_or_else(|| simple.to_string());
        let origin = ParentOrigin {
            written: (name != simple).then(|| simple.to_string()),
            module: joined(&b.module),
            name: name.clone(),
        };
        return (name, Some(origin));
    };
    let origin = ParentOrigin {
        name: simple.to_string(),
        written: Some(head.to_string()),
        module: joined(&qualified_module(lang, path, bindings, qualifier)),
    };
    (simple.to_string(), Some(origin))
}

/// The module a qualifier names: through an imported name when it starts with one
/// (`ns.Base`, `bp.Blueprint`, `fmt::Display`), else as an absolute path.
fn qualified_module(
    lang: Lang,
    path: &str,
    bindings: &HashMap<String, Binding>,
    qualifier: &str,
) -> Vec<String> {
    let segments = split_path(qualifier);
    let bound = segments
        .split_first()
        .and_then(|(first, rest)| Some((bindings.get(*first)?, rest)));
    let Some((b, rest)) = bound else {
        return module_segments(lang, path, qualifier);
    };
    let mut module = b.module.clone();
    module.extend(b.name.iter().cloned());
    module.extend(rest.iter().map(|s| s.to_string()));
    module
}

fn split_path(path: &str) -> Vec<&str> {
    path.split("::")
        .flat_map(|s| s.split('.'))
        .filter(|s| !s.is_empty())
        .collect()
}

fn joined(segments: &[String]) -> Option<String> {
    (!segments.is_empty()).then(|| segments.join("/"))
}

/// The module an import names, as path segments; relative imports are joined to the
/// directory (Python, JavaScript) or module (Rust `self`, `super`) of the file.
pub(super) fn module_segments(lang: Lang, path: &str, from: &str) -> Vec<String> {
    match lang {
        Lang::Python => python_module(path, from),
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => js_module(path, from),
        Lang::Rust => rust_module(path, from),
        _ => split_path(from).into_iter().map(str::to_string).collect(),
    }
}

fn dir_segments(path: &str) -> Vec<String> {
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    dir.split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `.sansio.blueprints` from `src/flask/blueprints.py` → `src/flask/sansio/blueprints`;
/// each further leading dot is one directory up.
fn python_module(path: &str, from: &str) -> Vec<String> {
    let rest = from.trim_start_matches('.');
    let dots = from.len() - rest.len();
    let mut out = if dots == 0 {
        Vec::new()
    } else {
        let mut dir = dir_segments(path);
        dir.truncate(dir.len().saturating_sub(dots - 1));
        dir
    };
    out.extend(
        rest.split('.')
            .filter(|s| !s.is_empty())
            .map(str::to_string),
    );
    out
}

/// `./base.js` from `web/app.ts` → `web/base`; a package name stays as written.
fn js_module(path: &str, from: &str) -> Vec<String> {
    let relative = from == "." || from == ".." || from.starts_with("./") || from.starts_with("../");
    let mut out = if relative {
        dir_segments(path)
    } else {
        Vec::new()
    };
    for seg in from.split('/') {
        match seg {
            "" | "." if relative => {}
            ".." if relative => {
                out.pop();
            }
            s => out.push(s.to_string()),
        }
    }
    if let Some(last) = out.last_mut() {
        for ext in [".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts"] {
            if let Some(stem) = last.strip_suffix(ext) {
                *last = stem.to_string();
                break;
            }
        }
    }
    out
}

/// `crate::a::b` → `a/b` (matched as a path suffix); `self::x` and `super::x` start from
/// the file's own module (`src/a/b.rs` is `src/a/b`, `src/a/mod.rs` is `src/a`).
fn rust_module(path: &str, from: &str) -> Vec<String> {
    let segments = split_path(from);
    let mut rest = segments.as_slice();
    let mut out = match rest.first() {
        Some(&("crate" | "$crate")) => {
            rest = &rest[1..];
            Vec::new()
        }
        Some(&("self" | "super")) => rust_file_module(path),
        _ => Vec::new(),
    };
    if rest.first() == Some(&"self") {
        rest = &rest[1..];
    }
    while rest.first() == Some(&"super") {
        out.pop();
        rest = &rest[1..];
    }
    out.extend(rest.iter().map(|s| s.to_string()));
    out
}

fn rust_file_module(path: &str) -> Vec<String> {
    let stem = path.strip_suffix(".rs").unwrap_or(path);
    let mut out: Vec<String> = stem
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if out
        .last()
        .is_some_and(|l| matches!(l.as_str(), "mod" | "lib" | "main"))
    {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_modules_join_the_file_location() {
        let cases = [
            (
                Lang::Python,
                "src/flask/blueprints.py",
                ".sansio.blueprints",
                "src/flask/sansio/blueprints",
            ),
            (Lang::Python, "src/flask/blueprints.py", "..x", "src/x"),
            (
                Lang::Python,
                "src/flask/blueprints.py",
                "flask.sansio",
                "flask/sansio",
            ),
            (Lang::TypeScript, "web/app.ts", "./base.js", "web/base"),
            (
                Lang::TypeScript,
                "web/ui/app.ts",
                "../lib/base",
                "web/lib/base",
            ),
            (Lang::JavaScript, "web/app.js", "lodash", "lodash"),
            (Lang::Rust, "src/a/b.rs", "crate::x::y", "x/y"),
            (Lang::Rust, "src/a/b.rs", "super::c", "src/a/c"),
            (Lang::Rust, "src/a/mod.rs", "self::c", "src/a/c"),
            (Lang::Rust, "src/a/b.rs", "super::super::d", "src/d"),
            (Lang::Java, "src/A.java", "com.acme.base", "com/acme/base"),
        ];
        let got: Vec<String> = cases
            .iter()
            .map(|(lang, path, from, _)| module_segments(*lang, path, from).join("/"))
            .collect();
        let want: Vec<&str> = cases.iter().map(|c| c.3).collect();
        pretty_assertions::assert_eq!(got, want);
    }
}
