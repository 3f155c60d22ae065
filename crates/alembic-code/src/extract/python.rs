//! Python (tree-sitter-python 0.25): classes, methods (static via decorators), class
//! attributes and `self.x` assignments, imports, calls.

use tree_sitter::Node;

use super::{Found, RawCall, Walker, is_type_like, last_ident};
use crate::summary::{ImportedName, TypeKind};

/// Bases that mark a class as a protocol rather than a parent class.
const PROTOCOL_BASES: &[&str] = &["Protocol"];
/// Bases that say nothing about the design (skipped as superclass).
const NEUTRAL_BASES: &[&str] = &["object", "ABC", "Generic", "Protocol", "metaclass"];

pub(super) fn classify(w: &Walker, node: Node) -> Found {
    match w.kind(node) {
        "class_definition" => class(w, node),
        "function_definition" => function(w, node),
        "assignment" => assignment(w, node),
        "import_statement" => {
            let mut cursor = node.walk();
            let imports = node
                .children_by_field_name("name", &mut cursor)
                .map(|n| {
                    let module = n.child_by_field_name("name").unwrap_or(n);
                    let mut import = w.import(node, w.text(module));
                    // `import a.b as c` binds `c` to the module `a.b`.
                    if let Some(alias) = n.child_by_field_name("alias") {
                        let (from, name) = w
                            .text(module)
                            .rsplit_once('.')
                            .unwrap_or(("", w.text(module)));
                        import.names = vec![ImportedName::new(w.text(alias), Some(name), from)];
                    }
                    import
                })
                .collect();
            Found::Imports(imports)
        }
        "import_from_statement" => {
            let module = w.field_text(node, "module_name").unwrap_or("");
            let mut cursor = node.walk();
            let names = node
                .children_by_field_name("name", &mut cursor)
                .map(|n| match n.child_by_field_name("alias") {
                    Some(alias) => {
                        let name = w.field_text(n, "name").unwrap_or("");
                        ImportedName::new(w.text(alias), Some(name), module)
                    }
                    None => ImportedName::new(w.text(n), Some(w.text(n)), module),
                })
                .collect();
            Found::Imports(vec![w.import_binding(node, module, names)])
        }
        "if_statement" if is_main_guard(w, node) => Found::EntryPoint,
        "call" => call(w, node),
        "comment" | "string" => Found::Skip,
        _ => Found::Descend,
    }
}

fn class(w: &Walker, node: Node) -> Found {
    let name = w.field_text(node, "name").unwrap_or("");
    let bases: Vec<String> = node
        .child_by_field_name("superclasses")
        .map(|list| {
            let mut cursor = list.walk();
            list.named_children(&mut cursor)
                .filter(|b| matches!(b.kind(), "identifier" | "attribute" | "subscript"))
                .map(|b| w.text(b).to_string())
                .collect()
        })
        .unwrap_or_default();
    let is_protocol = bases
        .iter()
        .any(|b| PROTOCOL_BASES.contains(&last_ident(b)));
    let kind = if is_protocol {
        TypeKind::Protocol
    } else {
        TypeKind::Class
    };
    let mut decl = w.type_decl(node, name, kind);
    let mut parents: Vec<String> = bases
        .into_iter()
        .filter(|b| !NEUTRAL_BASES.contains(&last_ident(b)))
        .collect();
    if kind == TypeKind::Class && !parents.is_empty() {
        decl.superclass = Some(parents.remove(0));
    }
    decl.conformances = parents;
    Found::Type(decl)
}

fn function(w: &Walker, node: Node) -> Found {
    let name = w.field_text(node, "name").unwrap_or("");
    let body = node.child_by_field_name("body");
    let decorators: Vec<&str> = node
        .parent()
        .filter(|p| p.kind() == "decorated_definition")
        .map(|p| {
            w.children_of_kind(p, &["decorator"])
                .into_iter()
                .map(|d| w.text(d).trim_start_matches('@'))
                .collect()
        })
        .unwrap_or_default();
    let is_method = w.in_type() && !w.in_function();
    let is_static = is_method
        && decorators
            .iter()
            .any(|d| matches!(*d, "staticmethod" | "classmethod"));
    let self_name = if is_method && !is_static {
        node.child_by_field_name("parameters")
            .and_then(|p| p.named_child(0))
            .filter(|p| p.kind() == "identifier")
            .map(|p| w.text(p).to_string())
    } else {
        None
    };
    let mut method = w.method(node, name, body, is_static);
    method.is_declaration = body.is_some_and(|b| w.text(b).trim() == "...");
    Found::Function {
        method,
        owner: None,
        self_name,
    }
}

/// Class-level `x: int = 4`, `self.x = …` in methods, and `d = Dog(…)` locals.
fn assignment(w: &Walker, node: Node) -> Found {
    let Some(left) = node.child_by_field_name("left") else {
        return Found::Descend;
    };
    let declared = w.field_text(node, "type");
    if !w.in_function() && w.in_type() && left.kind() == "identifier" {
        return Found::Properties(vec![w.property(node, w.text(left), declared, true)]);
    }
    if !w.in_function() {
        return Found::Descend;
    }
    if left.kind() == "attribute"
        && w.in_type()
        && left
            .child_by_field_name("object")
            .is_some_and(|o| w.text(o) == "self")
    {
        let name = w.field_text(left, "attribute").unwrap_or("");
        return Found::Properties(vec![w.property(node, name, declared, false)]);
    }
    let constructed = node.child_by_field_name("right").and_then(|r| {
        let f = (r.kind() == "call").then(|| r.child_by_field_name("function"))??;
        let text = w.text(f);
        is_type_like(text).then(|| last_ident(text))
    });
    match (left.kind(), declared.map(last_ident).or(constructed)) {
        ("identifier", Some(t)) => Found::Bindings(vec![(w.text(left).to_string(), t.to_string())]),
        _ => Found::Descend,
    }
}

fn is_main_guard(w: &Walker, node: Node) -> bool {
    let cond = w.field_text(node, "condition").unwrap_or("");
    cond.contains("__name__") && cond.contains("__main__")
}

fn call(w: &Walker, node: Node) -> Found {
    let Some(function) = node.child_by_field_name("function") else {
        return Found::Descend;
    };
    match function.kind() {
        "identifier" => Found::Call(RawCall::bare(w.text(function))),
        "attribute" => {
            let Some(object) = function.child_by_field_name("object") else {
                return Found::Descend;
            };
            let name = w.field_text(function, "attribute").unwrap_or("");
            let mut raw = RawCall::on(w.text(object), name);
            raw.is_super = object.kind() == "call"
                && object
                    .child_by_field_name("function")
                    .is_some_and(|f| w.text(f) == "super");
            Found::Call(raw)
        }
        _ => Found::Descend,
    }
}
