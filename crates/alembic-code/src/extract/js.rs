//! JavaScript, TypeScript and TSX (tree-sitter-javascript 0.25, tree-sitter-typescript
//! 0.23): the TypeScript grammars extend the JavaScript one, so one classifier serves all.

use tree_sitter::Node;

use super::{Found, RawCall, Walker, last_ident};
use crate::summary::{ImportedName, Method, TypeKind};

pub(super) fn classify(w: &Walker, node: Node) -> Found {
    match w.kind(node) {
        "class_declaration" | "abstract_class_declaration" | "class" => class(w, node),
        "interface_declaration" => {
            let name = w.field_text(node, "name").unwrap_or("");
            let mut decl = w.type_decl(node, name, TypeKind::Protocol);
            decl.conformances = w
                .first_child_of_kind(node, &["extends_type_clause"])
                .map(|c| type_names(w, c))
                .unwrap_or_default();
            Found::Type(decl)
        }
        "enum_declaration" => {
            let name = w.field_text(node, "name").unwrap_or("");
            Found::Type(w.type_decl(node, name, TypeKind::Enum))
        }
        "method_definition" | "method_signature" | "abstract_method_signature" => method(w, node),
        "function_declaration" | "generator_function_declaration" => {
            let name = w.field_text(node, "name").unwrap_or("");
            function(w, node, name, node.child_by_field_name("body"))
        }
        "variable_declarator" => declarator(w, node),
        "public_field_definition" | "field_definition" | "property_signature" => field(w, node),
        "required_parameter" | "optional_parameter" => {
            let name = w.field_text(node, "pattern").unwrap_or("");
            match annotated(w, node) {
                Some(t) => Found::Bindings(vec![(name.to_string(), t.to_string())]),
                None => Found::Descend,
            }
        }
        "import_statement" => {
            let source = unquote(w.field_text(node, "source").unwrap_or(""));
            let names = w
                .first_child_of_kind(node, &["import_clause"])
                .map(|c| import_names(w, c, source))
                .unwrap_or_default();
            Found::Imports(vec![w.import_binding(node, source, names)])
        }
        "call_expression" => call(w, node),
        "new_expression" => {
            let ty = w
                .field_text(node, "constructor")
                .map(last_ident)
                .unwrap_or("");
            let mut raw = RawCall::bare("constructor");
            raw.static_type = Some(ty.to_string());
            Found::Call(raw)
        }
        "comment" | "string" | "template_string" => Found::Skip,
        _ => Found::Descend,
    }
}

fn unquote(text: &str) -> &str {
    text.trim_matches(|c| c == '"' || c == '\'' || c == '`')
}

/// Parent types as written (`Base`, `ns.Base`, `Base<T>`); simple names come later.
fn type_names(w: &Walker, clause: Node) -> Vec<String> {
    let mut cursor = clause.walk();
    clause
        .named_children(&mut cursor)
        .map(|t| w.text(t).to_string())
        .filter(|t| !last_ident(t).is_empty())
        .collect()
}

/// What `import Default, * as ns, { A as B, C } from "m"` binds.
fn import_names(w: &Walker, clause: Node, from: &str) -> Vec<ImportedName> {
    let binding = |local: &str, name: Option<&str>| ImportedName::new(local, name, from);
    let mut out = Vec::new();
    let mut cursor = clause.walk();
    for part in clause.named_children(&mut cursor) {
        match part.kind() {
            "identifier" => out.push(binding(w.text(part), None)),
            "namespace_import" => {
                if let Some(id) = w.first_child_of_kind(part, &["identifier"]) {
                    out.push(binding(w.text(id), None));
                }
            }
            "named_imports" => {
                for spec in w.children_of_kind(part, &["import_specifier"]) {
                    let name = unquote(w.field_text(spec, "name").unwrap_or(""));
                    let local = w.field_text(spec, "alias").unwrap_or(name);
                    let name = (name != "default").then_some(name);
                    out.push(binding(local, name));
                }
            }
            _ => {}
        }
    }
    out
}

/// `const ns = require("m")` or `const { A: B, C } = require("m")`: the import with what
/// it binds.
fn required(w: &Walker, declarator: Node, value: Node) -> Option<Found> {
    let function = value.child_by_field_name("function")?;
    if value.kind() != "call_expression" || w.text(function) != "require" {
        return None;
    }
    let from = value
        .child_by_field_name("arguments")
        .and_then(|a| a.named_child(0))
        .map_or("", |a| unquote(w.text(a)));
    let pattern = declarator.child_by_field_name("name")?;
    let binding = |local: &str, name: Option<&str>| ImportedName::new(local, name, from);
    let names = match pattern.kind() {
        "identifier" => vec![binding(w.text(pattern), None)],
        "object_pattern" => {
            let mut cursor = pattern.walk();
            pattern
                .named_children(&mut cursor)
                .filter_map(|p| match p.kind() {
                    "shorthand_property_identifier_pattern" => {
                        Some(binding(w.text(p), Some(w.text(p))))
                    }
                    "pair_pattern" => {
                        let key = w.field_text(p, "key")?;
                        let value = w.field_text(p, "value")?;
                        Some(binding(value, Some(key)))
                    }
                    _ => None,
                })
                .collect()
        }
        _ => Vec::new(),
    };
    Some(Found::Imports(vec![w.import_binding(value, from, names)]))
}

fn class(w: &Walker, node: Node) -> Found {
    let name = w.field_text(node, "name").unwrap_or("");
    if name.is_empty() {
        return Found::Descend;
    }
    let mut decl = w.type_decl(node, name, TypeKind::Class);
    if let Some(heritage) = w.first_child_of_kind(node, &["class_heritage"]) {
        let mut cursor = heritage.walk();
        for part in heritage.named_children(&mut cursor) {
            match part.kind() {
                "extends_clause" => {
                    decl.superclass = w.field_text(part, "value").map(str::to_string);
                }
                "implements_clause" => decl.conformances = type_names(w, part),
                // JavaScript: `class Dog extends Animal` has the expression directly.
                _ => decl.superclass = Some(w.text(part).to_string()),
            }
        }
    }
    Found::Type(decl)
}

fn method(w: &Walker, node: Node) -> Found {
    let name = w.field_text(node, "name").unwrap_or("");
    let body = node.child_by_field_name("body");
    let is_static = w.has_child_text(node, "static");
    Found::Function {
        method: w.method(node, name, body, is_static),
        owner: None,
        self_name: None,
    }
}

fn function(w: &Walker, node: Node, name: &str, body: Option<Node>) -> Found {
    let method: Method = w.method(node, name, body, false);
    Found::Function {
        method,
        owner: None,
        self_name: None,
    }
}

/// `const helper = (x) => …` is a function; `const c = new Circle()` / `const b: Base`
/// are typed locals.
fn declarator(w: &Walker, node: Node) -> Found {
    let name = w.field_text(node, "name").unwrap_or("");
    let value = node.child_by_field_name("value");
    if let Some(found) = value.and_then(|v| required(w, node, v)) {
        return found;
    }
    if let Some(v) = value
        && matches!(
            v.kind(),
            "arrow_function" | "function_expression" | "function"
        )
        && !w.in_function()
        && !w.in_type()
    {
        return function(w, node, name, v.child_by_field_name("body"));
    }
    let constructed = value
        .filter(|v| v.kind() == "new_expression")
        .and_then(|v| w.field_text(v, "constructor"))
        .map(last_ident);
    match annotated(w, node).or(constructed) {
        Some(t) => Found::Bindings(vec![(name.to_string(), t.to_string())]),
        None => Found::Descend,
    }
}

/// The type of a `: Type` annotation.
fn annotated<'s>(w: &Walker<'s>, node: Node) -> Option<&'s str> {
    let ann = node.child_by_field_name("type")?;
    let ty = ann.named_child(0).unwrap_or(ann);
    (ty.kind() == "type_identifier" || ty.kind() == "generic_type").then(|| last_ident(w.text(ty)))
}

fn field(w: &Walker, node: Node) -> Found {
    if !w.in_type() || w.in_function() {
        return Found::Descend;
    }
    let name = node
        .child_by_field_name("name")
        .or_else(|| node.child_by_field_name("property"))
        .map_or("", |n| w.text(n));
    let ty = node
        .child_by_field_name("type")
        .map(|t| w.text(t).trim_start_matches(':').trim());
    let is_static = w.has_child_text(node, "static");
    Found::Properties(vec![w.property(node, name, ty, is_static)])
}

fn call(w: &Walker, node: Node) -> Found {
    let Some(function) = node.child_by_field_name("function") else {
        return Found::Descend;
    };
    match function.kind() {
        "identifier" if w.text(function) == "require" => {
            let arg = node
                .child_by_field_name("arguments")
                .and_then(|a| a.named_child(0))
                .map_or("", |a| unquote(w.text(a)));
            Found::Imports(vec![w.import(node, arg)])
        }
        "identifier" => Found::Call(RawCall::bare(w.text(function))),
        "member_expression" => {
            let Some(object) = function.child_by_field_name("object") else {
                return Found::Descend;
            };
            let name = w.field_text(function, "property").unwrap_or("");
            let mut raw = RawCall::on(w.text(object), name);
            raw.is_super = object.kind() == "super";
            Found::Call(raw)
        }
        _ => Found::Descend,
    }
}
