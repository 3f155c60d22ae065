//! Java (tree-sitter-java 0.23): classes, interfaces, enums, records.

use tree_sitter::Node;

use super::{Found, RawCall, Walker, last_ident, qualified_import};
use crate::summary::TypeKind;

pub(super) fn classify(w: &Walker, node: Node) -> Found {
    match w.kind(node) {
        "class_declaration" => class(w, node, TypeKind::Class),
        "record_declaration" => class(w, node, TypeKind::Struct),
        "enum_declaration" => class(w, node, TypeKind::Enum),
        "interface_declaration" => {
            let name = w.field_text(node, "name").unwrap_or("");
            let mut decl = w.type_decl(node, name, TypeKind::Protocol);
            decl.conformances = w
                .first_child_of_kind(node, &["extends_interfaces"])
                .map(|e| type_list(w, e))
                .unwrap_or_default();
            Found::Type(decl)
        }
        "method_declaration" | "constructor_declaration" | "compact_constructor_declaration" => {
            let name = w.field_text(node, "name").unwrap_or("");
            let body = node.child_by_field_name("body");
            let is_static = w.has_modifier(node, &["modifiers"], "static");
            Found::Function {
                method: w.method(node, name, body, is_static),
                owner: None,
                self_name: None,
            }
        }
        "field_declaration" | "constant_declaration" if w.in_type() && !w.in_function() => {
            field(w, node)
        }
        "local_variable_declaration" | "formal_parameter" => bindings(w, node),
        "import_declaration" => {
            let text = w
                .text(node)
                .trim_start_matches("import")
                .trim_end_matches(';');
            let module = text.trim().trim_start_matches("static ").trim();
            let mut import = w.import(node, module);
            // `import a.b.C` binds `C`; static and wildcard imports bind no type.
            if !text.trim().starts_with("static ") && !module.ends_with('*') {
                import.names = qualified_import(module, None);
            }
            Found::Imports(vec![import])
        }
        "method_invocation" => call(w, node),
        "object_creation_expression" => {
            let ty = w.field_text(node, "type").map(last_ident).unwrap_or("");
            let mut raw = RawCall::bare(ty);
            raw.static_type = Some(ty.to_string());
            Found::Call(raw)
        }
        "line_comment" | "block_comment" | "string_literal" => Found::Skip,
        _ => Found::Descend,
    }
}

/// Type names as written in a `type_list` under `node` (`implements A, B`, `extends A, B`).
fn type_list(w: &Walker, node: Node) -> Vec<String> {
    let Some(list) = w.first_child_of_kind(node, &["type_list"]) else {
        return Vec::new();
    };
    let mut cursor = list.walk();
    list.named_children(&mut cursor)
        .map(|t| w.text(t).to_string())
        .collect()
}

fn class(w: &Walker, node: Node, kind: TypeKind) -> Found {
    let name = w.field_text(node, "name").unwrap_or("");
    let mut decl = w.type_decl(node, name, kind);
    decl.superclass = node
        .child_by_field_name("superclass")
        .and_then(|s| s.named_child(0))
        .map(|t| w.text(t).to_string());
    decl.conformances = node
        .child_by_field_name("interfaces")
        .map(|i| type_list(w, i))
        .unwrap_or_default();
    Found::Type(decl)
}

fn field(w: &Walker, node: Node) -> Found {
    let ty = w.field_text(node, "type");
    let is_static = w.has_modifier(node, &["modifiers"], "static");
    let mut cursor = node.walk();
    let props = node
        .children_by_field_name("declarator", &mut cursor)
        .filter_map(|d| d.child_by_field_name("name"))
        .map(|n| w.property(node, w.text(n), ty, is_static))
        .collect();
    Found::Properties(props)
}

fn bindings(w: &Walker, node: Node) -> Found {
    let Some(ty) = w.field_text(node, "type").map(last_ident) else {
        return Found::Descend;
    };
    if node.kind() == "formal_parameter" {
        let name = w.field_text(node, "name").unwrap_or("");
        return Found::Bindings(vec![(name.to_string(), ty.to_string())]);
    }
    let mut cursor = node.walk();
    let names = node
        .children_by_field_name("declarator", &mut cursor)
        .filter_map(|d| d.child_by_field_name("name"))
        .map(|n| (w.text(n).to_string(), ty.to_string()))
        .collect();
    Found::Bindings(names)
}

fn call(w: &Walker, node: Node) -> Found {
    let name = w.field_text(node, "name").unwrap_or("");
    match node.child_by_field_name("object") {
        None => Found::Call(RawCall::bare(name)),
        Some(object) => {
            let mut raw = RawCall::on(w.text(object), name);
            raw.is_super = object.kind() == "super";
            Found::Call(raw)
        }
    }
}
