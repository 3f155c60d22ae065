//! Swift (tree-sitter-swift 0.7): classes, structs, enums, actors and extensions share
//! `class_declaration` with a `declaration_kind` token.

use tree_sitter::Node;

use super::{Found, RawCall, Walker, last_ident};
use crate::summary::{ImportedName, TypeKind};

/// Standard-library protocols often listed first in a class's inheritance clause, which
/// would otherwise be mistaken for its superclass.
const WELL_KNOWN_PROTOCOLS: &[&str] = &[
    "Codable",
    "Decodable",
    "Encodable",
    "Equatable",
    "Hashable",
    "Identifiable",
    "Comparable",
    "CustomStringConvertible",
    "CustomDebugStringConvertible",
    "Sendable",
    "Error",
    "ObservableObject",
    "View",
    "CaseIterable",
    "RawRepresentable",
];

pub(super) fn classify(w: &Walker, node: Node) -> Found {
    match w.kind(node) {
        "class_declaration" => type_declaration(w, node),
        "protocol_declaration" => {
            let name = w.field_text(node, "name").unwrap_or("");
            let mut decl = w.type_decl(node, name, TypeKind::Protocol);
            decl.conformances = inherited(w, node);
            Found::Type(decl)
        }
        "function_declaration"
        | "protocol_function_declaration"
        | "init_declaration"
        | "deinit_declaration" => function(w, node),
        "property_declaration" | "protocol_property_declaration" => property(w, node),
        "parameter" => parameter(w, node),
        "import_declaration" => {
            let module = w
                .first_child_of_kind(node, &["identifier"])
                .map_or("", |n| w.text(n));
            Found::Imports(vec![w.import_binding(
                node,
                module,
                declaration_import(w, node, module),
            )])
        }
        "call_expression" => call(w, node),
        "attribute" if w.text(node).starts_with("@main") => Found::EntryPoint,
        "comment" | "multiline_comment" | "line_string_literal" | "multi_line_string_literal" => {
            Found::Skip
        }
        _ => Found::Descend,
    }
}

fn type_declaration(w: &Walker, node: Node) -> Found {
    let keyword = w.field_text(node, "declaration_kind").unwrap_or("class");
    let name = last_ident(w.field_text(node, "name").unwrap_or(""));
    let mut parents = inherited(w, node);
    let kind = match keyword {
        "struct" => TypeKind::Struct,
        "enum" => TypeKind::Enum,
        "extension" => TypeKind::Extension,
        _ => TypeKind::Class,
    };
    let mut decl = w.type_decl(node, name, kind);
    // Swift does not say which parent of a class is the superclass; the first one is,
    // unless it is a protocol (the project graph corrects this for project protocols).
    if kind == TypeKind::Class
        && parents
            .first()
            .is_some_and(|p| !WELL_KNOWN_PROTOCOLS.contains(&last_ident(p)))
    {
        decl.superclass = Some(parents.remove(0));
    }
    decl.conformances = parents;
    Found::Type(decl)
}

/// Parents as written (`UIView`, `UIKit.UIView`); simple names come later.
fn inherited(w: &Walker, node: Node) -> Vec<String> {
    w.children_of_kind(node, &["inheritance_specifier"])
        .into_iter()
        .filter_map(|spec| spec.child_by_field_name("inherits_from"))
        .map(|t| w.text(t).to_string())
        .collect()
}

/// `import class UIKit.UIView` binds `UIView` of the module `UIKit`; a plain
/// `import UIKit` binds no single name.
fn declaration_import(w: &Walker, node: Node, path: &str) -> Vec<ImportedName> {
    let kinds = [
        "class",
        "struct",
        "enum",
        "protocol",
        "typealias",
        "func",
        "let",
        "var",
    ];
    let by_kind = kinds.iter().any(|k| w.has_child_text(node, k));
    match path.rsplit_once('.') {
        Some((from, name)) if by_kind => vec![ImportedName::new(name, Some(name), from)],
        _ => Vec::new(),
    }
}

fn function(w: &Walker, node: Node) -> Found {
    let name = match node.kind() {
        "init_declaration" => "init",
        "deinit_declaration" => "deinit",
        _ => w.field_text(node, "name").unwrap_or(""),
    };
    let body = node.child_by_field_name("body");
    let is_static = w.has_modifier(node, &["modifiers"], "static")
        || w.has_modifier(node, &["modifiers"], "class")
        || w.has_child_text(node, "class")
        || w.has_child_text(node, "static");
    let mut method = w.method(node, name, body, is_static);
    method.is_optional = w.has_modifier(node, &["modifiers"], "optional");
    Found::Function {
        method,
        owner: None,
        self_name: None,
    }
}

fn bound_name<'s>(w: &Walker<'s>, node: Node) -> Option<&'s str> {
    let pattern = node.child_by_field_name("name")?;
    let ident = pattern
        .child_by_field_name("bound_identifier")
        .unwrap_or(pattern);
    Some(w.text(ident))
}

fn annotation_type<'s>(w: &Walker<'s>, node: Node) -> Option<&'s str> {
    let ann = w.first_child_of_kind(node, &["type_annotation"])?;
    ann.child_by_field_name("name").map(|t| w.text(t))
}

fn property(w: &Walker, node: Node) -> Found {
    let Some(name) = bound_name(w, node) else {
        return Found::Descend;
    };
    let declared = annotation_type(w, node);
    if w.in_function() {
        let constructed = node
            .child_by_field_name("value")
            .and_then(|v| constructor_type(w, v));
        return match declared.map(last_ident).or(constructed) {
            Some(t) => Found::Bindings(vec![(name.to_string(), t.to_string())]),
            None => Found::Descend,
        };
    }
    if !w.in_type() {
        return Found::Descend;
    }
    let is_static = w.has_modifier(node, &["modifiers"], "static")
        || w.has_modifier(node, &["modifiers"], "class");
    Found::Properties(vec![w.property(node, name, declared, is_static)])
}

/// `Circle(radius: 2)` constructs a `Circle`.
fn constructor_type<'s>(w: &Walker<'s>, value: Node) -> Option<&'s str> {
    if value.kind() != "call_expression" {
        return None;
    }
    let callee = value.named_child(0)?;
    let text = w.text(callee);
    (callee.kind() == "simple_identifier" && super::is_type_like(text)).then_some(text)
}

fn parameter(w: &Walker, node: Node) -> Found {
    let mut cursor = node.walk();
    let names: Vec<Node> = node.children_by_field_name("name", &mut cursor).collect();
    let ident = names.iter().rev().find(|n| n.kind() == "simple_identifier");
    let ty = names.iter().find(|n| n.kind() != "simple_identifier");
    match (ident, ty) {
        (Some(i), Some(t)) => Found::Bindings(vec![(
            w.text(*i).to_string(),
            last_ident(w.text(*t)).to_string(),
        )]),
        _ => Found::Descend,
    }
}

fn call(w: &Walker, node: Node) -> Found {
    let Some(callee) = node.named_child(0) else {
        return Found::Descend;
    };
    match callee.kind() {
        "simple_identifier" => Found::Call(RawCall::bare(w.text(callee))),
        "navigation_expression" => {
            let Some(target) = callee.child_by_field_name("target") else {
                return Found::Descend;
            };
            let name = callee
                .child_by_field_name("suffix")
                .and_then(|s| s.child_by_field_name("suffix"))
                .map_or("", |s| w.text(s));
            let mut raw = RawCall::on(w.text(target), name);
            raw.is_super = target.kind() == "super_expression";
            Found::Call(raw)
        }
        _ => Found::Descend,
    }
}
