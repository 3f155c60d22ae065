//! Go (tree-sitter-go 0.25): struct and interface types, receiver methods, embedding.

use tree_sitter::Node;

use super::{Found, RawCall, Walker, last_ident};
use crate::summary::TypeKind;

pub(super) fn classify(w: &Walker, node: Node) -> Found {
    match w.kind(node) {
        "type_spec" => type_spec(w, node),
        "method_declaration" => method(w, node),
        "function_declaration" => {
            let name = w.field_text(node, "name").unwrap_or("");
            let body = node.child_by_field_name("body");
            Found::Function {
                method: w.method(node, name, body, false),
                owner: None,
                self_name: None,
            }
        }
        "method_elem" | "method_spec" => {
            let name = w.field_text(node, "name").unwrap_or("");
            Found::Function {
                method: w.method(node, name, None, false),
                owner: None,
                self_name: None,
            }
        }
        "field_declaration" if w.in_type() && !w.in_function() => field(w, node),
        "import_spec" => {
            let path = w.field_text(node, "path").unwrap_or("");
            Found::Imports(vec![
                w.import(node, path.trim_matches(|c| c == '"' || c == '`')),
            ])
        }
        "parameter_declaration" | "var_spec" => typed_names(w, node),
        "short_var_declaration" => short_var(w, node),
        "call_expression" => call(w, node),
        "comment" | "interpreted_string_literal" | "raw_string_literal" => Found::Skip,
        _ => Found::Descend,
    }
}

fn type_spec(w: &Walker, node: Node) -> Found {
    let name = w.field_text(node, "name").unwrap_or("");
    let Some(ty) = node.child_by_field_name("type") else {
        return Found::Descend;
    };
    let kind = match ty.kind() {
        "struct_type" => TypeKind::Struct,
        "interface_type" => TypeKind::Protocol,
        _ => return Found::Descend,
    };
    let mut decl = w.type_decl(node, name, kind);
    decl.conformances = embedded(w, ty);
    Found::Type(decl)
}

/// Embedded structs and interfaces (fields without a name, `type_elem`s).
fn embedded(w: &Walker, ty: Node) -> Vec<String> {
    let mut names = Vec::new();
    if ty.kind() == "interface_type" {
        for elem in w.children_of_kind(ty, &["type_elem", "constraint_elem"]) {
            names.push(last_ident(w.text(elem)).to_string());
        }
        return names;
    }
    if let Some(list) = w.first_child_of_kind(ty, &["field_declaration_list"]) {
        for field in w.children_of_kind(list, &["field_declaration"]) {
            if field.child_by_field_name("name").is_none()
                && let Some(t) = field.child_by_field_name("type")
            {
                names.push(last_ident(w.text(t)).to_string());
            }
        }
    }
    names
}

fn method(w: &Walker, node: Node) -> Found {
    let name = w.field_text(node, "name").unwrap_or("");
    let body = node.child_by_field_name("body");
    let receiver = node
        .child_by_field_name("receiver")
        .and_then(|r| w.first_child_of_kind(r, &["parameter_declaration"]));
    let owner = receiver
        .and_then(|r| w.field_text(r, "type"))
        .map(|t| last_ident(t).to_string());
    let self_name = receiver
        .and_then(|r| w.field_text(r, "name"))
        .map(str::to_string);
    Found::Function {
        method: w.method(node, name, body, false),
        owner: owner.map(|o| (o, TypeKind::Members)),
        self_name,
    }
}

fn field(w: &Walker, node: Node) -> Found {
    let ty = w.field_text(node, "type");
    let mut cursor = node.walk();
    let props: Vec<_> = node
        .children_by_field_name("name", &mut cursor)
        .map(|n| w.property(node, w.text(n), ty, false))
        .collect();
    if props.is_empty() {
        return Found::Descend;
    }
    Found::Properties(props)
}

fn typed_names(w: &Walker, node: Node) -> Found {
    let Some(ty) = w.field_text(node, "type").map(last_ident) else {
        return Found::Descend;
    };
    let mut cursor = node.walk();
    let names: Vec<(String, String)> = node
        .children_by_field_name("name", &mut cursor)
        .map(|n| (w.text(n).to_string(), ty.to_string()))
        .collect();
    Found::Bindings(names)
}

/// `c := Circle{}` / `c := &Circle{}` / `c := NewCircle()` (Go's constructor convention).
fn short_var(w: &Walker, node: Node) -> Found {
    let (Some(left), Some(right)) = (
        node.child_by_field_name("left"),
        node.child_by_field_name("right"),
    ) else {
        return Found::Descend;
    };
    let (Some(name), Some(value)) = (left.named_child(0), right.named_child(0)) else {
        return Found::Descend;
    };
    let value = if value.kind() == "unary_expression" {
        value.child_by_field_name("operand").unwrap_or(value)
    } else {
        value
    };
    let ty = match value.kind() {
        "composite_literal" => w.field_text(value, "type").map(last_ident),
        "call_expression" => w
            .field_text(value, "function")
            .map(last_ident)
            .and_then(|f| f.strip_prefix("New"))
            .filter(|t| t.chars().next().is_some_and(char::is_uppercase)),
        _ => None,
    };
    match ty {
        Some(t) => Found::Bindings(vec![(w.text(name).to_string(), t.to_string())]),
        None => Found::Descend,
    }
}

fn call(w: &Walker, node: Node) -> Found {
    let Some(function) = node.child_by_field_name("function") else {
        return Found::Descend;
    };
    match function.kind() {
        "identifier" => Found::Call(RawCall::bare(w.text(function))),
        "selector_expression" => {
            let operand = w.field_text(function, "operand").unwrap_or("");
            let name = w.field_text(function, "field").unwrap_or("");
            Found::Call(RawCall::on(operand, name))
        }
        _ => Found::Descend,
    }
}
