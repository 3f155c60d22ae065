//! Helpers every language extractor shares: reading node text and positions, building
//! summary records from nodes, finding children, and the name heuristics.

use tree_sitter::Node;

use super::Walker;
use crate::summary::{Import, ImportedName, Method, Property, TypeDecl, TypeKind};

/// Signatures longer than this are cut (with `…`).
const MAX_SIGNATURE: usize = 240;

impl<'s> Walker<'s> {
    pub(crate) fn text(&self, node: Node) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    pub(crate) fn field_text(&self, node: Node, field: &str) -> Option<&'s str> {
        node.child_by_field_name(field).map(|n| self.text(n))
    }

    pub(crate) fn line(&self, node: Node) -> usize {
        node.start_position().row + 1
    }

    pub(crate) fn end_line(&self, node: Node) -> usize {
        node.end_position().row + 1
    }

    /// Declaration text from the node's start to its body (or the whole node), on one line.
    pub(crate) fn signature(&self, node: Node, body: Option<Node>) -> String {
        let end = body.map_or(node.end_byte(), |b| b.start_byte());
        let raw = self.src.get(node.start_byte()..end).unwrap_or("");
        let mut sig = raw.split_whitespace().collect::<Vec<_>>().join(" ");
        while sig.ends_with('{') || sig.ends_with(':') || sig.ends_with('=') || sig.ends_with(';') {
            sig.pop();
            sig = sig.trim_end().to_string();
        }
        if sig.chars().count() > MAX_SIGNATURE {
            sig = sig.chars().take(MAX_SIGNATURE).collect::<String>() + "…";
        }
        sig
    }

    /// A method record with the common fields filled in from `node` and its `body`.
    pub(crate) fn method(
        &self,
        node: Node,
        name: &str,
        body: Option<Node>,
        is_static: bool,
    ) -> Method {
        Method {
            name: name.to_string(),
            is_static,
            signature: self.signature(node, body),
            line: self.line(node),
            end_line: self.end_line(node),
            is_declaration: body.is_none(),
            is_optional: false,
            complexity: 1,
        }
    }

    /// A type record with no members yet.
    pub(crate) fn type_decl(&self, node: Node, name: &str, kind: TypeKind) -> TypeDecl {
        TypeDecl {
            name: name.to_string(),
            kind,
            superclass: None,
            conformances: Vec::new(),
            category: None,
            line: self.line(node),
            end_line: self.end_line(node),
            methods: Vec::new(),
            properties: Vec::new(),
            origins: Vec::new(),
        }
    }

    pub(crate) fn property(
        &self,
        node: Node,
        name: &str,
        type_name: Option<&str>,
        is_static: bool,
    ) -> Property {
        Property {
            name: name.to_string(),
            type_name: type_name.map(|t| t.split_whitespace().collect::<Vec<_>>().join(" ")),
            is_static,
            line: self.line(node),
            attributes: Vec::new(),
        }
    }

    pub(crate) fn import(&self, node: Node, module: &str) -> Import {
        Import {
            module: module.trim().to_string(),
            line: self.line(node),
            names: Vec::new(),
        }
    }

    /// An import of `module` that binds `names` in the file.
    pub(crate) fn import_binding(
        &self,
        node: Node,
        module: &str,
        names: Vec<ImportedName>,
    ) -> Import {
        let mut import = self.import(node, module);
        import.names = names;
        import
    }

    /// `node.kind()`, looked up by kind id.
    pub(crate) fn kind<'t>(&self, node: Node<'t>) -> &'t str {
        match self.kinds.get(usize::from(node.kind_id())) {
            Some(name) if !name.is_empty() => name,
            _ => node.kind(),
        }
    }

    /// True when `node` has a direct child (token or node) whose text is `word`.
    pub(crate) fn has_child_text(&self, node: Node, word: &str) -> bool {
        let mut cursor = node.walk();
        node.children(&mut cursor).any(|c| self.text(c) == word)
    }

    /// True when a `modifiers`-like child contains `word` as a whole word.
    pub(crate) fn has_modifier(&self, node: Node, kinds: &[&str], word: &str) -> bool {
        let mut cursor = node.walk();
        node.children(&mut cursor)
            .filter(|c| kinds.contains(&self.kind(*c)))
            .any(|c| {
                self.text(c)
                    .split(|ch: char| !ch.is_alphanumeric() && ch != '_')
                    .any(|w| w == word)
            })
    }

    pub(crate) fn first_child_of_kind<'t>(
        &self,
        node: Node<'t>,
        kinds: &[&str],
    ) -> Option<Node<'t>> {
        let mut cursor = node.walk();
        node.named_children(&mut cursor)
            .find(|c| kinds.contains(&self.kind(*c)))
    }

    pub(crate) fn children_of_kind<'t>(&self, node: Node<'t>, kinds: &[&str]) -> Vec<Node<'t>> {
        let mut cursor = node.walk();
        node.named_children(&mut cursor)
            .filter(|c| kinds.contains(&self.kind(*c)))
            .collect()
    }
}

/// Last identifier of a type or path expression: `geo::Circle` → `Circle`,
/// `Comparable<Shape>` → `Comparable`, `*Circle` → `Circle`, `&mut Foo` → `Foo`.
pub(crate) fn last_ident(text: &str) -> &str {
    let head = text.split(['<', '(', '[', '{']).next().unwrap_or(text);
    let tail = head
        .rsplit(['.', ':', ' ', '*', '&', '\\'])
        .find(|s| !s.is_empty());
    tail.unwrap_or(head)
        .trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '$')
}

/// What `import a.b.C` (Java, Kotlin) binds: `C`, or `alias`, to `C` of `a.b`.
pub(crate) fn qualified_import(path: &str, alias: Option<&str>) -> Vec<ImportedName> {
    let Some((from, name)) = path.rsplit_once('.') else {
        return Vec::new();
    };
    vec![ImportedName::new(alias.unwrap_or(name), Some(name), from)]
}

/// Heuristic: an identifier (or path) whose last part starts with an upper-case letter
/// names a type. Holds for the naming conventions of every supported language but C.
pub(crate) fn is_type_like(text: &str) -> bool {
    let is_path = text
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == ':');
    is_path
        && last_ident(text)
            .chars()
            .next()
            .is_some_and(|c| c.is_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_ident_strips_paths_generics_and_pointers() {
        let cases = [
            ("geo::Circle", "Circle"),
            ("Comparable<Shape>", "Comparable"),
            ("*Circle", "Circle"),
            ("&mut Foo", "Foo"),
            ("fmt::Display", "Display"),
            ("Circle?", "Circle"),
            ("kotlin.math.PI", "PI"),
        ];
        let got: Vec<(&str, &str)> = cases.iter().map(|(i, _)| (*i, last_ident(i))).collect();
        pretty_assertions::assert_eq!(got, cases.to_vec());
    }

    #[test]
    fn type_like_names_start_upper_case() {
        assert!(is_type_like("Base"));
        assert!(is_type_like("geo::Circle"));
        assert!(!is_type_like("shapes"));
        assert!(!is_type_like("foo().Bar"));
    }
}
