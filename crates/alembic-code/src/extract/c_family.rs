//! C and C++ (tree-sitter-c 0.24, tree-sitter-cpp 0.23). The C parts are shared with
//! Objective-C, whose grammar embeds C.

use tree_sitter::Node;

use super::{Found, RawCall, Walker, is_type_like, last_ident};
use crate::language::Lang;
use crate::summary::{Property, TypeKind};

pub(super) fn classify(w: &Walker, node: Node) -> Found {
    match w.kind(node) {
        "class_specifier" => record(w, node, TypeKind::Class),
        "struct_specifier" => record(w, node, TypeKind::Struct),
        "union_specifier" => record(w, node, TypeKind::Union),
        "enum_specifier" => record(w, node, TypeKind::Enum),
        "new_expression" => {
            let ty = w.field_text(node, "type").map(last_ident).unwrap_or("");
            let mut raw = RawCall::bare(ty);
            raw.static_type = Some(ty.to_string());
            Found::Call(raw)
        }
        _ => classify_c(w, node),
    }
}

/// The C subset, also used for Objective-C files.
pub(super) fn classify_c(w: &Walker, node: Node) -> Found {
    match w.kind(node) {
        "struct_specifier" => record(w, node, TypeKind::Struct),
        "union_specifier" => record(w, node, TypeKind::Union),
        "enum_specifier" => record(w, node, TypeKind::Enum),
        "function_definition" => function_definition(w, node),
        "field_declaration" => field_declaration(w, node),
        "declaration" if w.in_function() => declaration_bindings(w, node),
        "declaration" if w.in_type() && is_method_prototype(node) => method_prototype(w, node),
        "parameter_declaration" => declaration_bindings(w, node),
        "preproc_include" => {
            let path = w.field_text(node, "path").unwrap_or("");
            let module = path.trim_matches(|c| c == '"' || c == '<' || c == '>');
            Found::Imports(vec![w.import(node, module)])
        }
        "call_expression" => call(w, node),
        "comment" | "string_literal" | "raw_string_literal" | "char_literal" => Found::Skip,
        _ => Found::Descend,
    }
}

/// A struct/class/union/enum with a body; bare references (`struct List *l`) are skipped.
fn record(w: &Walker, node: Node, kind: TypeKind) -> Found {
    if node.child_by_field_name("body").is_none() {
        return Found::Descend;
    }
    let name = match node.child_by_field_name("name") {
        Some(n) => last_ident(w.text(n)).to_string(),
        None => typedef_name(w, node).unwrap_or_default(),
    };
    if name.is_empty() {
        return Found::Descend;
    }
    let mut decl = w.type_decl(node, &name, kind);
    if let Some(bases) = w.first_child_of_kind(node, &["base_class_clause"]) {
        let mut names: Vec<String> = w
            .children_of_kind(
                bases,
                &["type_identifier", "qualified_identifier", "template_type"],
            )
            .into_iter()
            .map(|b| last_ident(w.text(b)).to_string())
            .collect();
        if !names.is_empty() {
            decl.superclass = Some(names.remove(0));
        }
        decl.conformances = names;
    }
    Found::Type(decl)
}

/// `typedef struct { … } Name;` names the anonymous struct `Name`.
fn typedef_name(w: &Walker, node: Node) -> Option<String> {
    let parent = node.parent()?;
    if parent.kind() != "type_definition" {
        return None;
    }
    parent
        .child_by_field_name("declarator")
        .map(|d| last_ident(w.text(d)).to_string())
}

/// Innermost identifier of a declarator chain (`*name`, `name[3]`, `name(args)`, `A::b`).
pub(super) fn declarator_name<'t>(node: Node<'t>) -> Option<Node<'t>> {
    let mut current = node;
    loop {
        match current.kind() {
            "identifier"
            | "field_identifier"
            | "qualified_identifier"
            | "destructor_name"
            | "operator_name"
            | "type_identifier" => return Some(current),
            _ => current = current.child_by_field_name("declarator")?,
        }
    }
}

fn function_declarator(node: Node) -> Option<Node> {
    let mut current = node.child_by_field_name("declarator")?;
    loop {
        if current.kind() == "function_declarator" {
            return Some(current);
        }
        current = current.child_by_field_name("declarator")?;
    }
}

fn function_definition(w: &Walker, node: Node) -> Found {
    let Some(name_node) = function_declarator(node).and_then(declarator_name) else {
        return Found::Descend;
    };
    let body = node.child_by_field_name("body");
    let is_static = w.has_modifier(node, &["storage_class_specifier"], "static");
    let text = w.text(name_node);
    let (owner, name) = match (name_node.kind(), text.rsplit_once("::")) {
        ("qualified_identifier", Some((scope, name))) if !w.in_type() => (
            Some((last_ident(scope).to_string(), TypeKind::Members)),
            name,
        ),
        ("destructor_name", _) => (None, text),
        _ => (None, last_ident(text)),
    };
    Found::Function {
        method: w.method(node, name, body, is_static),
        owner,
        self_name: None,
    }
}

fn is_method_prototype(node: Node) -> bool {
    function_declarator(node).is_some()
}

/// A prototype inside a class body (`double area() const;` parses as a declaration in
/// some contexts) or a `field_declaration` with a function declarator.
fn method_prototype(w: &Walker, node: Node) -> Found {
    let Some(name_node) = function_declarator(node).and_then(declarator_name) else {
        return Found::Descend;
    };
    let is_static = w.has_modifier(node, &["storage_class_specifier"], "static");
    let text = w.text(name_node);
    let name = if name_node.kind() == "destructor_name" {
        text
    } else {
        last_ident(text)
    };
    Found::Function {
        method: w.method(node, name, None, is_static),
        owner: None,
        self_name: None,
    }
}

fn field_declaration(w: &Walker, node: Node) -> Found {
    if !w.in_type() {
        return Found::Descend;
    }
    if is_method_prototype(node) {
        return method_prototype(w, node);
    }
    let ty = w.field_text(node, "type");
    let is_static = w.has_modifier(node, &["storage_class_specifier"], "static");
    let mut cursor = node.walk();
    let props: Vec<Property> = node
        .children_by_field_name("declarator", &mut cursor)
        .filter_map(declarator_name)
        .map(|n| w.property(node, w.text(n), ty, is_static))
        .collect();
    if props.is_empty() {
        return Found::Descend;
    }
    Found::Properties(props)
}

/// `Circle *c = …;` / `geo::Circle c;` / parameters: the name gets the declared type.
pub(super) fn declaration_bindings(w: &Walker, node: Node) -> Found {
    let Some(ty) = node.child_by_field_name("type") else {
        return Found::Descend;
    };
    let ty = last_ident(w.text(ty));
    if ty.is_empty() {
        return Found::Descend;
    }
    let mut cursor = node.walk();
    let bindings: Vec<(String, String)> = node
        .children_by_field_name("declarator", &mut cursor)
        .filter_map(declarator_name)
        .map(|n| (w.text(n).to_string(), ty.to_string()))
        .collect();
    Found::Bindings(bindings)
}

pub(super) fn call(w: &Walker, node: Node) -> Found {
    let Some(function) = node.child_by_field_name("function") else {
        return Found::Descend;
    };
    match function.kind() {
        "identifier" => Found::Call(RawCall::bare(w.text(function))),
        "field_expression" => {
            let receiver = function
                .child_by_field_name("argument")
                .map_or("", |a| w.text(a));
            let name = w.field_text(function, "field").unwrap_or("");
            Found::Call(RawCall::on(receiver, name))
        }
        "qualified_identifier" => {
            let text = w.text(function);
            let (scope, name) = text.rsplit_once("::").unwrap_or(("", text));
            let mut raw = RawCall::bare(last_ident(name));
            if is_type_like(last_ident(scope)) && w.lang == Lang::Cpp {
                raw.static_type = Some(last_ident(scope).to_string());
            }
            Found::Call(raw)
        }
        _ => Found::Descend,
    }
}
