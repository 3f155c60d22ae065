//! Kotlin (tree-sitter-kotlin-ng 1.1): classes, interfaces, objects, enum classes,
//! companion objects, extension functions.

use tree_sitter::Node;

use super::{Found, RawCall, Walker, is_type_like, last_ident, qualified_import};
use crate::summary::TypeKind;

pub(super) fn classify(w: &Walker, node: Node) -> Found {
    match w.kind(node) {
        "class_declaration" => class(w, node),
        "object_declaration" => {
            let name = w.field_text(node, "name").unwrap_or("");
            let mut decl = w.type_decl(node, name, TypeKind::Class);
            delegation(w, node, &mut decl);
            Found::Type(decl)
        }
        "function_declaration" => function(w, node),
        "class_parameter" if is_property_parameter(w, node) => {
            let name = w
                .first_child_of_kind(node, &["identifier"])
                .map_or("", |n| w.text(n));
            let ty = w
                .first_child_of_kind(node, &["user_type", "nullable_type"])
                .map(|t| w.text(t));
            Found::Properties(vec![w.property(node, name, ty, false)])
        }
        "property_declaration" => property(w, node),
        "parameter" => {
            let name = w
                .first_child_of_kind(node, &["identifier"])
                .map(|n| w.text(n));
            let ty = w
                .first_child_of_kind(node, &["user_type", "nullable_type"])
                .map(|t| w.text(t));
            match (name, ty) {
                (Some(n), Some(t)) => {
                    Found::Bindings(vec![(n.to_string(), last_ident(t).to_string())])
                }
                _ => Found::Descend,
            }
        }
        "import" => {
            let path = w.first_child_of_kind(node, &["qualified_identifier", "identifier"]);
            let module = path.map_or("", |n| w.text(n));
            let mut import = w.import(node, module);
            // `import a.b.C as D`: the alias is the identifier after the path.
            let alias = w
                .children_of_kind(node, &["identifier"])
                .into_iter()
                .find(|n| Some(*n) != path)
                .map(|n| w.text(n));
            if !w.text(node).trim_end().ends_with('*') {
                import.names = qualified_import(module, alias);
            }
            Found::Imports(vec![import])
        }
        "call_expression" => call(w, node),
        "line_comment" | "block_comment" | "multiline_comment" | "string_literal" => Found::Skip,
        _ => Found::Descend,
    }
}

fn class(w: &Walker, node: Node) -> Found {
    let name = w.field_text(node, "name").unwrap_or("");
    let kind = if w.has_child_text(node, "interface") {
        TypeKind::Protocol
    } else if w.has_modifier(node, &["modifiers"], "enum")
        || w.first_child_of_kind(node, &["enum_class_body"]).is_some()
    {
        TypeKind::Enum
    } else {
        TypeKind::Class
    };
    let mut decl = w.type_decl(node, name, kind);
    delegation(w, node, &mut decl);
    Found::Type(decl)
}

/// `: Base("x"), Named` — a constructor call names the superclass, a bare type an
/// interface.
fn delegation(w: &Walker, node: Node, decl: &mut crate::summary::TypeDecl) {
    let Some(specs) = w.first_child_of_kind(node, &["delegation_specifiers"]) else {
        return;
    };
    for spec in w.children_of_kind(specs, &["delegation_specifier"]) {
        let Some(inner) = spec.named_child(0) else {
            continue;
        };
        let name = w.text(inner).to_string();
        if inner.kind() == "constructor_invocation" && decl.kind != TypeKind::Protocol {
            decl.superclass = Some(name);
        } else {
            decl.conformances.push(name);
        }
    }
}

fn function(w: &Walker, node: Node) -> Found {
    let Some(name_node) = node.child_by_field_name("name") else {
        return Found::Descend;
    };
    let body = w.first_child_of_kind(node, &["function_body"]);
    let in_companion = node
        .parent()
        .and_then(|p| p.parent())
        .is_some_and(|g| g.kind() == "companion_object");
    // A type written before the name is the receiver of an extension function.
    let receiver = w
        .first_child_of_kind(node, &["user_type", "nullable_type"])
        .filter(|t| t.end_byte() <= name_node.start_byte())
        .map(|t| last_ident(w.text(t)).to_string());
    let mut method = w.method(node, w.text(name_node), body, in_companion);
    method.is_declaration = body.is_none();
    Found::Function {
        method,
        owner: receiver.map(|r| (r, TypeKind::Extension)),
        self_name: None,
    }
}

fn is_property_parameter(w: &Walker, node: Node) -> bool {
    w.has_child_text(node, "val") || w.has_child_text(node, "var")
}

fn property(w: &Walker, node: Node) -> Found {
    let Some(var) = w.first_child_of_kind(node, &["variable_declaration"]) else {
        return Found::Descend;
    };
    let name = w
        .first_child_of_kind(var, &["identifier"])
        .map_or("", |n| w.text(n));
    let declared = w
        .first_child_of_kind(var, &["user_type", "nullable_type"])
        .map(|t| w.text(t));
    if w.in_function() {
        let constructed = w
            .first_child_of_kind(node, &["call_expression"])
            .and_then(|c| c.named_child(0))
            .filter(|c| c.kind() == "identifier" && is_type_like(w.text(*c)))
            .map(|c| w.text(c));
        return match declared.map(last_ident).or(constructed) {
            Some(t) => Found::Bindings(vec![(name.to_string(), t.to_string())]),
            None => Found::Descend,
        };
    }
    if !w.in_type() {
        return Found::Descend;
    }
    let in_companion = node
        .parent()
        .and_then(|p| p.parent())
        .is_some_and(|g| g.kind() == "companion_object");
    Found::Properties(vec![w.property(node, name, declared, in_companion)])
}

fn call(w: &Walker, node: Node) -> Found {
    let Some(callee) = node.named_child(0) else {
        return Found::Descend;
    };
    match callee.kind() {
        "identifier" => Found::Call(RawCall::bare(w.text(callee))),
        "navigation_expression" => {
            let last = u32::try_from(callee.named_child_count().saturating_sub(1)).unwrap_or(0);
            let (Some(target), Some(name)) = (callee.named_child(0), callee.named_child(last))
            else {
                return Found::Descend;
            };
            let mut raw = RawCall::on(w.text(target), w.text(name));
            raw.is_super = target.kind() == "super_expression";
            Found::Call(raw)
        }
        _ => Found::Descend,
    }
}
