//! Objective-C (tree-sitter-objc 3.0): interfaces, implementations, categories,
//! protocols, selectors and message sends. Plain C inside ObjC files goes to `c_family`.

use tree_sitter::Node;

use super::{Found, RawCall, Walker, c_family, is_type_like, last_ident};
use crate::summary::TypeKind;

pub(super) fn classify(w: &Walker, node: Node) -> Found {
    match w.kind(node) {
        "class_interface" | "class_implementation" => class(w, node),
        "protocol_declaration" => protocol(w, node),
        "method_declaration" | "method_definition" => method(w, node),
        "property_declaration" => property(w, node),
        "method_parameter" => parameter(w, node),
        "module_import" => {
            let module = w.field_text(node, "path").unwrap_or("");
            Found::Imports(vec![w.import(node, module)])
        }
        "message_expression" => message(w, node),
        // Forward declarations (`@class Foo;`, `@protocol P;`) carry no structure.
        "class_forward_declaration" | "protocol_forward_declaration" => Found::Skip,
        _ => c_family::classify_c(w, node),
    }
}

fn class(w: &Walker, node: Node) -> Found {
    let name = w
        .first_child_of_kind(node, &["identifier"])
        .map_or("", |n| w.text(n));
    let category = node
        .child_by_field_name("category")
        .map(|c| w.text(c).to_string());
    let kind = if category.is_some() || has_empty_category(w, node) {
        TypeKind::Extension
    } else {
        TypeKind::Class
    };
    let mut decl = w.type_decl(node, name, kind);
    decl.category = category;
    decl.superclass = w.field_text(node, "superclass").map(str::to_string);
    decl.conformances = protocols(w, node);
    Found::Type(decl)
}

/// A class extension (`@interface Foo ()`) has parentheses but no category name.
fn has_empty_category(w: &Walker, node: Node) -> bool {
    let mut cursor = node.walk();
    let mut tokens = node.children(&mut cursor).map(|c| w.text(c));
    tokens.any(|t| t == "(") && node.child_by_field_name("superclass").is_none()
}

/// Protocols listed in `<…>` after a class, category or protocol name.
fn protocols(w: &Walker, node: Node) -> Vec<String> {
    let mut names = Vec::new();
    for list in w.children_of_kind(
        node,
        &["parameterized_arguments", "protocol_reference_list"],
    ) {
        let mut cursor = list.walk();
        for item in list.named_children(&mut cursor) {
            names.push(last_ident(w.text(item)).to_string());
        }
    }
    names
}

fn protocol(w: &Walker, node: Node) -> Found {
    let name = w
        .first_child_of_kind(node, &["identifier"])
        .map_or("", |n| w.text(n));
    let mut decl = w.type_decl(node, name, TypeKind::Protocol);
    decl.conformances = protocols(w, node);
    Found::Type(decl)
}

/// The selector of a method declaration: `foo:bar:` from `- (void)foo:(int)a bar:(int)b`.
fn selector(w: &Walker, node: Node) -> String {
    let mut selector = String::new();
    let mut cursor = node.walk();
    let children: Vec<Node> = node.children(&mut cursor).collect();
    for (i, child) in children.iter().enumerate() {
        if child.kind() != "identifier" {
            continue;
        }
        selector.push_str(w.text(*child));
        let next = children.get(i + 1).map(|n| n.kind());
        if matches!(next, Some(":" | "method_parameter")) {
            selector.push(':');
        }
    }
    selector
}

fn method(w: &Walker, node: Node) -> Found {
    let body = w.first_child_of_kind(node, &["compound_statement"]);
    let is_static = node.child(0).is_some_and(|c| w.text(c) == "+");
    let mut method = w.method(node, &selector(w, node), body, is_static);
    method.is_optional = node.parent().is_some_and(|p| {
        p.kind() == "qualified_protocol_interface_declaration"
            && w.text(p).trim_start().starts_with("@optional")
    });
    Found::Function {
        method,
        owner: None,
        self_name: None,
    }
}

fn property(w: &Walker, node: Node) -> Found {
    let attributes: Vec<String> = w
        .first_child_of_kind(node, &["property_attributes_declaration"])
        .map(|decl| {
            w.children_of_kind(decl, &["property_attribute"])
                .into_iter()
                .map(|a| w.text(a).to_string())
                .collect()
        })
        .unwrap_or_default();
    let Some(field) = w.first_child_of_kind(node, &["struct_declaration"]) else {
        return Found::Descend;
    };
    let ty = field.named_child(0).map(|t| w.text(t));
    let mut cursor = field.walk();
    let props = field
        .named_children(&mut cursor)
        .filter(|c| c.kind() == "struct_declarator")
        .filter_map(|d| d.named_child(0))
        .filter_map(c_family::declarator_name)
        .map(|n| {
            let mut p = w.property(node, w.text(n), ty, false);
            p.attributes = attributes.clone();
            p
        })
        .collect();
    Found::Properties(props)
}

fn parameter(w: &Walker, node: Node) -> Found {
    let ty = w.first_child_of_kind(node, &["method_type"]).map(|t| {
        last_ident(
            w.text(t)
                .trim_matches(|c| c == '(' || c == ')' || c == ' ' || c == '*'),
        )
    });
    let name = w
        .first_child_of_kind(node, &["identifier"])
        .map(|n| w.text(n));
    match (name, ty) {
        (Some(n), Some(t)) if !t.is_empty() => {
            Found::Bindings(vec![(n.to_string(), t.to_string())])
        }
        _ => Found::Descend,
    }
}

/// `[receiver foo:1 bar:2]` calls `foo:bar:`; `[[Circle alloc] init]` is on `Circle`.
fn message(w: &Walker, node: Node) -> Found {
    let Some(receiver) = node.child_by_field_name("receiver") else {
        return Found::Descend;
    };
    let mut name = String::new();
    let mut cursor = node.walk();
    let children: Vec<(Option<&str>, Node)> = node
        .children(&mut cursor)
        .enumerate()
        .map(|(i, c)| (node.field_name_for_child(i as u32), c))
        .collect();
    for (i, (field, child)) in children.iter().enumerate() {
        if *field == Some("method") {
            name.push_str(w.text(*child));
            if children.get(i + 1).is_some_and(|(_, n)| n.kind() == ":") {
                name.push(':');
            }
        }
    }
    let receiver_text = w.text(receiver);
    let mut raw = RawCall::on(receiver_text, name);
    raw.is_super = receiver_text == "super";
    raw.static_type = allocated_type(w, receiver);
    Found::Call(raw)
}

/// The class of `[Circle alloc]` / `[Circle new]` used as a receiver.
fn allocated_type(w: &Walker, receiver: Node) -> Option<String> {
    if receiver.kind() != "message_expression" {
        return None;
    }
    let inner = receiver.child_by_field_name("receiver")?;
    let method = w.field_text(receiver, "method")?;
    let class = w.text(inner);
    (matches!(method, "alloc" | "new") && is_type_like(class)).then(|| class.to_string())
}
