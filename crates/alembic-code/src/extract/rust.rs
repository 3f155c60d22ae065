//! Rust (tree-sitter-rust 0.24): structs, enums, unions, traits and `impl` blocks.

use tree_sitter::Node;

use super::{Found, RawCall, Walker, is_type_like, last_ident};
use crate::summary::{ImportedName, TypeKind};

pub(super) fn classify(w: &Walker, node: Node) -> Found {
    match w.kind(node) {
        "struct_item" => named_type(w, node, TypeKind::Struct),
        "enum_item" => named_type(w, node, TypeKind::Enum),
        "union_item" => named_type(w, node, TypeKind::Union),
        "trait_item" => {
            let Found::Type(mut decl) = named_type(w, node, TypeKind::Protocol) else {
                return Found::Descend;
            };
            if let Some(bounds) = node.child_by_field_name("bounds") {
                let mut cursor = bounds.walk();
                decl.conformances = bounds
                    .named_children(&mut cursor)
                    .map(|b| w.text(b))
                    .filter(|b| last_ident(b).chars().next().is_some_and(char::is_uppercase))
                    .map(str::to_string)
                    .collect();
            }
            Found::Type(decl)
        }
        "impl_item" => impl_block(w, node),
        "function_item" | "function_signature_item" => function(w, node),
        "field_declaration" if w.in_type() && !w.in_function() => {
            let name = w.field_text(node, "name").unwrap_or("");
            let ty = w.field_text(node, "type");
            Found::Properties(vec![w.property(node, name, ty, false)])
        }
        "use_declaration" => {
            let Some(argument) = node.child_by_field_name("argument") else {
                return Found::Imports(vec![w.import(node, "")]);
            };
            let mut names = Vec::new();
            use_tree(w, argument, "", &mut names);
            Found::Imports(vec![w.import_binding(node, w.text(argument), names)])
        }
        "extern_crate_declaration" => {
            let module = w.field_text(node, "name").unwrap_or("");
            Found::Imports(vec![w.import(node, module)])
        }
        "let_declaration" => let_binding(w, node),
        "parameter" => {
            let name = w.field_text(node, "pattern").unwrap_or("");
            let ty = w.field_text(node, "type").map(last_ident).unwrap_or("");
            if name.is_empty() || ty.is_empty() {
                return Found::Descend;
            }
            Found::Bindings(vec![(
                name.trim_start_matches("mut ").to_string(),
                ty.to_string(),
            )])
        }
        "call_expression" => call(w, node),
        "token_tree" => token_tree_calls(w, node),
        "line_comment" | "block_comment" | "string_literal" | "raw_string_literal" => Found::Skip,
        _ => Found::Descend,
    }
}

fn named_type(w: &Walker, node: Node, kind: TypeKind) -> Found {
    let name = w.field_text(node, "name").unwrap_or("");
    Found::Type(w.type_decl(node, name, kind))
}

/// `impl Trait for Type` is an extension of `Type` conforming to `Trait`.
fn impl_block(w: &Walker, node: Node) -> Found {
    let ty = w.field_text(node, "type").map(last_ident).unwrap_or("");
    let mut decl = w.type_decl(node, ty, TypeKind::Extension);
    // The trait as written (`fmt::Display`, an alias); simple names come later.
    if let Some(tr) = w.field_text(node, "trait") {
        decl.category = Some(tr.to_string());
        decl.conformances = vec![tr.to_string()];
    }
    Found::Type(decl)
}

/// The names a `use` tree binds: `a::b::C`, `a::b::C as D`, `a::{b::C, D as E, self}`.
fn use_tree(w: &Walker, node: Node, prefix: &str, out: &mut Vec<ImportedName>) {
    let join = |path: &str| {
        if prefix.is_empty() {
            path.to_string()
        } else {
            format!("{prefix}::{path}")
        }
    };
    match node.kind() {
        "identifier" | "scoped_identifier" | "self" => {
            bind_use_path(&join(w.text(node)), None, out);
        }
        "use_as_clause" => {
            let path = join(w.field_text(node, "path").unwrap_or(""));
            bind_use_path(&path, w.field_text(node, "alias"), out);
        }
        "scoped_use_list" => {
            let inner = join(w.field_text(node, "path").unwrap_or(""));
            if let Some(list) = node.child_by_field_name("list") {
                use_tree(w, list, &inner, out);
            }
        }
        "use_list" => {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                use_tree(w, child, prefix, out);
            }
        }
        _ => {}
    }
}

/// `a::b::C` binds `C` (or `alias`) to `C` of `a::b`; `a::b::self` binds `b`.
fn bind_use_path(path: &str, alias: Option<&str>, out: &mut Vec<ImportedName>) {
    let path = path.strip_suffix("::self").unwrap_or(path);
    let (from, name) = path.rsplit_once("::").unwrap_or(("", path));
    if name.is_empty() || matches!(name, "self" | "super" | "crate") {
        return;
    }
    out.push(ImportedName::new(alias.unwrap_or(name), Some(name), from));
}

fn function(w: &Walker, node: Node) -> Found {
    let name = w.field_text(node, "name").unwrap_or("");
    let body = node.child_by_field_name("body");
    let has_self = node
        .child_by_field_name("parameters")
        .and_then(|p| w.first_child_of_kind(p, &["self_parameter"]))
        .is_some();
    let is_static = w.in_type() && !w.in_function() && !has_self;
    Found::Function {
        method: w.method(node, name, body, is_static),
        owner: None,
        self_name: None,
    }
}

/// `let c: Circle = …` or `let c = Circle::new(…)` / `Circle { … }`.
fn let_binding(w: &Walker, node: Node) -> Found {
    let Some(pattern) = node.child_by_field_name("pattern") else {
        return Found::Descend;
    };
    if pattern.kind() != "identifier" && pattern.kind() != "mut_pattern" {
        return Found::Descend;
    }
    let name = w.text(pattern).trim_start_matches("mut ").trim();
    let declared = w.field_text(node, "type").map(last_ident);
    let constructed = node
        .child_by_field_name("value")
        .and_then(|v| match v.kind() {
            "struct_expression" => w.field_text(v, "name").map(last_ident),
            "call_expression" => {
                let f = v.child_by_field_name("function")?;
                let path = f.child_by_field_name("path").map(|p| w.text(p))?;
                (f.kind() == "scoped_identifier" && is_type_like(path)).then(|| last_ident(path))
            }
            _ => None,
        });
    match declared.or(constructed) {
        Some(t) if !t.is_empty() => Found::Bindings(vec![(name.to_string(), t.to_string())]),
        _ => Found::Descend,
    }
}

fn call(w: &Walker, node: Node) -> Found {
    let Some(function) = node.child_by_field_name("function") else {
        return Found::Descend;
    };
    match function.kind() {
        "identifier" => Found::Call(RawCall::bare(w.text(function))),
        "field_expression" => {
            let receiver = w.field_text(function, "value").unwrap_or("");
            let name = w.field_text(function, "field").unwrap_or("");
            Found::Call(RawCall::on(receiver, name))
        }
        "scoped_identifier" => {
            let name = w.field_text(function, "name").unwrap_or("");
            let path = w.field_text(function, "path").unwrap_or("");
            let mut raw = RawCall::bare(name);
            if is_type_like(path) || path == "Self" {
                raw.static_type = Some(last_ident(path).to_string());
            }
            if path == "Self" {
                raw.static_type = w.current_type_name();
            }
            Found::Call(raw)
        }
        "generic_function" => {
            let inner = function
                .child_by_field_name("function")
                .map_or("", |f| w.text(f));
            Found::Call(RawCall::bare(last_ident(inner)))
        }
        _ => Found::Descend,
    }
}

/// Macro arguments are token trees, not expressions; `recv.method(` inside them is still
/// a call, so each tree's direct tokens are scanned for it (nested trees are scanned when
/// the walk reaches them).
fn token_tree_calls(w: &Walker, tree: Node) -> Found {
    let mut cursor = tree.walk();
    let tokens: Vec<Node> = tree.children(&mut cursor).collect();
    let calls: Vec<RawCall> = tokens
        .windows(4)
        .filter_map(|win| {
            let [recv, dot, name, args] = win else {
                return None;
            };
            let is_call = matches!(w.kind(*recv), "identifier" | "self")
                && w.text(*dot) == "."
                && w.kind(*name) == "identifier"
                && w.kind(*args) == "token_tree"
                && w.text(*args).starts_with('(');
            is_call.then(|| RawCall::on(w.text(*recv), w.text(*name)))
        })
        .collect();
    if calls.is_empty() {
        return Found::Descend;
    }
    Found::Calls(calls)
}
