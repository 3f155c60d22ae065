//! Turning a syntax tree into a [`FileSummary`].
//!
//! One generic walk ([`Walker`]) keeps the nesting (which type and which function we are
//! in, and the typed locals of that function); a per-language `classify` function says
//! what each node is. Language modules only know their grammar's node kinds.

mod aliases;
mod c_family;
mod go;
mod java;
mod js;
mod kotlin;
mod nodes;
mod objc;
mod python;
mod rust;
mod swift;

use std::cell::RefCell;
use std::collections::HashMap;

use tree_sitter::{Node, Parser, TreeCursor};

pub(crate) use nodes::{is_type_like, last_ident, qualified_import};

use crate::language::Lang;
use crate::summary::{
    CallSite, FileSummary, Import, Method, Property, ReceiverKind, TypeDecl, TypeKind,
};

/// Deeper nodes are not visited, so pathological (generated) files cannot exhaust the
/// stack of a worker thread. Real code rarely nests beyond ~100.
const MAX_DEPTH: usize = 512;

/// Why a file could not be summarised.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("tree-sitter grammar for {lang} is incompatible with the linked runtime: {message}")]
    Grammar { lang: &'static str, message: String },
    #[error("tree-sitter gave up parsing {path}")]
    NoTree { path: String },
}

thread_local! {
    /// Parsers are not `Sync`; each worker thread keeps one per language.
    static PARSERS: RefCell<HashMap<Lang, Parser>> = RefCell::new(HashMap::new());
}

/// Parses `source` as `lang` and extracts its summary. `path` is stored as given.
pub fn summarize(path: &str, lang: Lang, source: &str) -> Result<FileSummary, ParseError> {
    let tree = parse(path, lang, source)?;
    let mut walker = Walker::new(path, lang, source);
    walker.visit(&mut tree.walk(), 0);
    Ok(walker.finish())
}

/// The syntax tree of `source` as `lang`, with this thread's cached parser; `path` names
/// the file in the error.
pub(crate) fn parse(path: &str, lang: Lang, source: &str) -> Result<tree_sitter::Tree, ParseError> {
    PARSERS.with(|cell| {
        let mut parsers = cell.borrow_mut();
        let parser = match parsers.entry(lang) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let mut parser = Parser::new();
                parser
                    .set_language(&lang.grammar())
                    .map_err(|e| ParseError::Grammar {
                        lang: lang.name(),
                        message: e.to_string(),
                    })?;
                v.insert(parser)
            }
        };
        parser
            .parse(source, None)
            .ok_or_else(|| ParseError::NoTree {
                path: path.to_string(),
            })
    })
}

/// What a language's classifier says a node is.
pub(crate) enum Found {
    /// A type declaration; its children are visited inside it.
    Type(TypeDecl),
    /// A method or function. `owner` overrides the enclosing type (Go receivers, C++
    /// `Foo::bar`, Kotlin extension functions) and says which kind of decl to add to.
    Function {
        method: Method,
        owner: Option<(String, TypeKind)>,
        /// Name the body uses for the instance (Go receiver, Python `self`).
        self_name: Option<String>,
    },
    /// Properties of the enclosing type; children are still visited.
    Properties(Vec<Property>),
    /// Imports; children are not visited.
    Imports(Vec<Import>),
    /// A call; children (arguments, chained receivers) are visited too.
    Call(RawCall),
    /// Several calls found in one node (Rust macro token trees).
    Calls(Vec<RawCall>),
    /// Typed names in the current function (locals, parameters); children visited.
    Bindings(Vec<(String, String)>),
    /// The file is a program entry point; children visited.
    EntryPoint,
    /// Nothing to record; visit children.
    Descend,
    /// Nothing to record below this node (comments, string literals).
    Skip,
}

/// A call as the classifier sees it, before receiver types are resolved.
pub(crate) struct RawCall {
    pub callee: String,
    pub receiver: Option<String>,
    /// Type the call syntax itself names (`Circle::new`, `new Circle()`, `[Circle alloc]`).
    pub static_type: Option<String>,
    pub is_super: bool,
}

impl RawCall {
    pub(crate) fn bare(callee: impl Into<String>) -> RawCall {
        RawCall {
            callee: callee.into(),
            receiver: None,
            static_type: None,
            is_super: false,
        }
    }

    pub(crate) fn on(receiver: impl Into<String>, callee: impl Into<String>) -> RawCall {
        RawCall {
            callee: callee.into(),
            receiver: Some(receiver.into()),
            static_type: None,
            is_super: false,
        }
    }
}

/// Where the method being walked lives, so its complexity can be filled in on exit.
#[derive(Clone, Copy)]
enum MethodSlot {
    Owned(usize, usize),
    Free(usize),
}

struct FunctionScope {
    owner: Option<String>,
    name: String,
    self_name: Option<String>,
    bindings: HashMap<String, String>,
    slot: MethodSlot,
    complexity: u32,
}

/// The generic tree walk. Language classifiers read the source through it.
pub(crate) struct Walker<'s> {
    pub src: &'s str,
    pub lang: Lang,
    /// [`Lang::kind_names`] of `lang`.
    kinds: &'static [&'static str],
    out: FileSummary,
    type_stack: Vec<usize>,
    function: Option<FunctionScope>,
    /// Typed names outside any function (Swift/Kotlin top-level `let`, scripts).
    file_bindings: HashMap<String, String>,
}

impl<'s> Walker<'s> {
    fn new(path: &str, lang: Lang, src: &'s str) -> Walker<'s> {
        let line_count = src.lines().count();
        Walker {
            src,
            lang,
            kinds: lang.kind_names(),
            out: FileSummary {
                path: path.to_string(),
                language: lang,
                line_count,
                imports: Vec::new(),
                types: Vec::new(),
                functions: Vec::new(),
                calls: Vec::new(),
                has_entry_point: false,
            },
            type_stack: Vec::new(),
            function: None,
            file_bindings: HashMap::new(),
        }
    }

    fn finish(mut self) -> FileSummary {
        // A Swift program's top-level code lives in `main.swift`.
        if self.lang == Lang::Swift
            && (self.out.path == "main.swift" || self.out.path.ends_with("/main.swift"))
        {
            self.out.has_entry_point = true;
        }
        aliases::resolve(&mut self.out);
        self.out
    }

    fn classify(&self, node: Node) -> Found {
        match self.lang {
            Lang::Swift => swift::classify(self, node),
            Lang::ObjC => objc::classify(self, node),
            Lang::Rust => rust::classify(self, node),
            Lang::Python => python::classify(self, node),
            Lang::TypeScript | Lang::Tsx | Lang::JavaScript => js::classify(self, node),
            Lang::Go => go::classify(self, node),
            Lang::Java => java::classify(self, node),
            Lang::Kotlin => kotlin::classify(self, node),
            Lang::C | Lang::Cpp => c_family::classify(self, node),
        }
    }

    /// Visits the node `cursor` is at; leaves the cursor there. One cursor serves the
    /// whole walk (a cursor per node cost a few percent of a full index).
    fn visit(&mut self, cursor: &mut TreeCursor<'_>, depth: usize) {
        let node = cursor.node();
        if depth > MAX_DEPTH {
            return;
        }
        let kind = self.kind(node);
        if let Some(f) = self.function.as_mut()
            && is_branch(node, kind, self.src)
        {
            f.complexity += 1;
        }
        match self.classify(node) {
            Found::Type(decl) => self.enter_type(cursor, decl, depth),
            Found::Function {
                method,
                owner,
                self_name,
            } => self.enter_function(cursor, method, owner, self_name, depth),
            Found::Properties(props) => {
                if let Some(&idx) = self.type_stack.last() {
                    self.out.types[idx].properties.extend(props);
                }
                self.visit_children(cursor, depth);
            }
            Found::Imports(imports) => self.out.imports.extend(imports),
            Found::Call(call) => {
                self.record_call(node, call);
                self.visit_children(cursor, depth);
            }
            Found::Calls(calls) => {
                for call in calls {
                    self.record_call(node, call);
                }
                self.visit_children(cursor, depth);
            }
            Found::Bindings(bindings) => {
                let target = match self.function.as_mut() {
                    Some(f) => &mut f.bindings,
                    None => &mut self.file_bindings,
                };
                target.extend(bindings);
                self.visit_children(cursor, depth);
            }
            Found::EntryPoint => {
                self.out.has_entry_point = true;
                self.visit_children(cursor, depth);
            }
            Found::Descend => self.visit_children(cursor, depth),
            Found::Skip => {}
        }
    }

    /// Visits the named children of the node `cursor` is at, and returns the cursor there.
    fn visit_children(&mut self, cursor: &mut TreeCursor<'_>, depth: usize) {
        if !cursor.goto_first_child() {
            return;
        }
        loop {
            if cursor.node().is_named() {
                self.visit(cursor, depth + 1);
            }
            if !cursor.goto_next_sibling() {
                break;
            }
        }
        cursor.goto_parent();
    }

    fn enter_type(&mut self, cursor: &mut TreeCursor<'_>, decl: TypeDecl, depth: usize) {
        self.out.types.push(decl);
        self.type_stack.push(self.out.types.len() - 1);
        // A type nested in a function body still starts a fresh method context.
        let saved = self.function.take();
        self.visit_children(cursor, depth);
        self.function = saved;
        self.type_stack.pop();
    }

    fn enter_function(
        &mut self,
        cursor: &mut TreeCursor<'_>,
        method: Method,
        owner: Option<(String, TypeKind)>,
        self_name: Option<String>,
        depth: usize,
    ) {
        let name = method.name.clone();
        self.out.has_entry_point |= self.is_main(&method, owner.is_some());
        let (slot, owner_name) = self.place_method(method, owner, cursor.node());
        let saved = self.function.replace(FunctionScope {
            owner: owner_name,
            name,
            self_name,
            bindings: HashMap::new(),
            slot,
            complexity: 1,
        });
        self.visit_children(cursor, depth);
        if let Some(done) = std::mem::replace(&mut self.function, saved) {
            let method = match done.slot {
                MethodSlot::Owned(t, m) => &mut self.out.types[t].methods[m],
                MethodSlot::Free(i) => &mut self.out.functions[i],
            };
            method.complexity = done.complexity;
        }
    }

    /// `main` as a free function (or Java's `static main`) starts a program.
    fn is_main(&self, method: &Method, has_owner: bool) -> bool {
        if method.name != "main" || method.is_declaration {
            return false;
        }
        match self.lang {
            Lang::Java => method.is_static,
            Lang::Python | Lang::JavaScript | Lang::TypeScript | Lang::Tsx => false,
            _ => !has_owner && self.type_stack.is_empty(),
        }
    }

    /// Files the method under its owner and returns where it went.
    fn place_method(
        &mut self,
        method: Method,
        owner: Option<(String, TypeKind)>,
        node: Node,
    ) -> (MethodSlot, Option<String>) {
        let type_idx = match owner {
            Some((name, kind)) => Some(self.owner_decl(&name, kind, node)),
            None => self.type_stack.last().copied(),
        };
        match type_idx {
            Some(t) => {
                let decl = &mut self.out.types[t];
                decl.methods.push(method);
                (
                    MethodSlot::Owned(t, decl.methods.len() - 1),
                    Some(decl.name.clone()),
                )
            }
            None => {
                self.out.functions.push(method);
                (MethodSlot::Free(self.out.functions.len() - 1), None)
            }
        }
    }

    /// Index of the decl that receives out-of-line members of `name`: the primary decl of
    /// that name in this file when there is one, else a (new or existing) `kind` decl.
    fn owner_decl(&mut self, name: &str, kind: TypeKind, node: Node) -> usize {
        let primary = |t: &TypeDecl| t.name == name && (t.kind.is_primary() || t.kind == kind);
        if kind == TypeKind::Members
            && let Some(i) = self.out.types.iter().position(primary)
        {
            return i;
        }
        if kind == TypeKind::Members
            && let Some(i) = self
                .out
                .types
                .iter()
                .position(|t| t.name == name && t.kind == kind)
        {
            return i;
        }
        let decl = self.type_decl(node, name, kind);
        self.out.types.push(decl);
        self.out.types.len() - 1
    }

    fn record_call(&mut self, node: Node, call: RawCall) {
        let (receiver_kind, receiver_type) = self.receiver_type(&call);
        let caller_type = self.current_type_name();
        let caller = self.function.as_ref().map(|f| f.name.clone());
        self.out.calls.push(CallSite {
            callee: call.callee,
            receiver: call.receiver,
            receiver_type,
            receiver_kind,
            caller_type,
            caller,
            line: self.line(node),
        });
    }

    fn receiver_type(&self, call: &RawCall) -> (ReceiverKind, Option<String>) {
        if call.is_super {
            return (ReceiverKind::Super, None);
        }
        if let Some(t) = &call.static_type {
            return (ReceiverKind::TypeName, Some(t.clone()));
        }
        let Some(receiver) = call.receiver.as_deref() else {
            return (ReceiverKind::None, None);
        };
        let is_self = self.lang.self_names().contains(&receiver)
            || self.function.as_ref().and_then(|f| f.self_name.as_deref()) == Some(receiver);
        if is_self {
            return (ReceiverKind::SelfRef, self.current_type_name());
        }
        let bound = self
            .function
            .as_ref()
            .and_then(|f| f.bindings.get(receiver))
            .or_else(|| self.file_bindings.get(receiver));
        if let Some(t) = bound {
            return (ReceiverKind::Typed, Some(t.clone()));
        }
        if let Some(t) = self.property_type(receiver) {
            return (ReceiverKind::Typed, Some(t));
        }
        if is_type_like(receiver) {
            return (
                ReceiverKind::TypeName,
                Some(last_ident(receiver).to_string()),
            );
        }
        (ReceiverKind::Unknown, None)
    }

    /// Declared type of a property of the enclosing type used as a receiver (`radius`,
    /// `self.radius`, `this.radius`).
    fn property_type(&self, receiver: &str) -> Option<String> {
        let name = self
            .lang
            .self_names()
            .iter()
            .find_map(|s| {
                receiver
                    .strip_prefix(s)
                    .and_then(|r| r.strip_prefix('.').or_else(|| r.strip_prefix("->")))
            })
            .unwrap_or(receiver);
        let owner = self.current_type_name()?;
        let decl = self.out.types.iter().rev().find(|t| t.name == owner)?;
        let prop = decl.properties.iter().find(|p| p.name == name)?;
        let ty = last_ident(prop.type_name.as_deref()?);
        (!ty.is_empty()).then(|| ty.to_string())
    }

    /// Name of the type whose method (or body) we are in.
    pub(crate) fn current_type_name(&self) -> Option<String> {
        if let Some(f) = &self.function
            && f.owner.is_some()
        {
            return f.owner.clone();
        }
        self.type_stack
            .last()
            .map(|&i| self.out.types[i].name.clone())
    }

    pub(crate) fn in_type(&self) -> bool {
        !self.type_stack.is_empty()
    }

    pub(crate) fn in_function(&self) -> bool {
        self.function.is_some()
    }
}

/// Node kinds that add a path through a function (for the complexity estimate).
fn is_branch(node: Node, kind: &str, src: &str) -> bool {
    match kind {
        "if_statement"
        | "if_expression"
        | "if_let_expression"
        | "elif_clause"
        | "else_if_clause"
        | "for_statement"
        | "for_expression"
        | "for_in_statement"
        | "enhanced_for_statement"
        | "while_statement"
        | "while_expression"
        | "do_statement"
        | "do_while_statement"
        | "repeat_while_statement"
        | "guard_statement"
        | "catch_clause"
        | "except_clause"
        | "catch_block"
        | "case_clause"
        | "switch_case"
        | "switch_entry"
        | "switch_block_statement_group"
        | "match_arm"
        | "when_entry"
        | "expression_case"
        | "type_case"
        | "communication_case"
        | "conditional_expression"
        | "ternary_expression"
        | "case_statement"
        | "switch_label" => true,
        "binary_expression"
        | "boolean_operator"
        | "conjunction_expression"
        | "disjunction_expression" => {
            let op = node
                .child_by_field_name("operator")
                .and_then(|o| src.get(o.byte_range()));
            matches!(op, Some("&&" | "||" | "and" | "or")) || kind.ends_with("junction_expression")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Every source file under `dir`, recursively.
    fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if Lang::from_path(&path).is_some() {
                out.push(path);
            }
        }
    }

    #[test]
    fn kinds_looked_up_by_id_equal_the_node_kinds_in_every_fixture() {
        let mut files = Vec::new();
        sources(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"),
            &mut files,
        );
        let mut langs = std::collections::BTreeSet::new();
        let mut nodes = 0;
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            let lang = Lang::detect(&path, &text).unwrap();
            langs.insert(lang);
            let mut parser = Parser::new();
            parser.set_language(&lang.grammar()).unwrap();
            let tree = parser.parse(&text, None).unwrap();
            let walker = Walker::new("x", lang, &text);
            let mut cursor = tree.walk();
            loop {
                let node = cursor.node();
                assert_eq!(walker.kind(node), node.kind(), "{}", path.display());
                nodes += 1;
                if cursor.goto_first_child() || cursor.goto_next_sibling() {
                    continue;
                }
                while cursor.goto_parent() && !cursor.goto_next_sibling() {}
                if cursor.node() == tree.root_node() {
                    break;
                }
            }
        }
        assert!(langs.len() >= 10, "{langs:?}");
        assert!(nodes > 3_000, "{nodes}");
    }
}
