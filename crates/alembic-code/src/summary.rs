//! What the indexer extracts from one file: the [`FileSummary`] and its parts.

use serde::{Deserialize, Serialize};

use crate::language::Lang;

/// Everything the index knows about one source file, built from its syntax tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileSummary {
    /// Path relative to the project root, with `/` separators.
    pub path: String,
    pub language: Lang,
    pub line_count: usize,
    pub imports: Vec<Import>,
    pub types: Vec<TypeDecl>,
    /// Functions that belong to no type (free functions, top-level `def`s).
    pub functions: Vec<Method>,
    pub calls: Vec<CallSite>,
    /// True when the file is a program entry point by its own content
    /// (`fn main`, `if __name__ == "__main__"`, `@main`, `static void main`).
    pub has_entry_point: bool,
}

/// The kind of a type declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TypeKind {
    Class,
    Struct,
    Enum,
    Union,
    /// Protocol, interface or trait.
    Protocol,
    /// Swift/Kotlin extension, Objective-C category or Rust `impl` block.
    Extension,
    /// Members of a type written outside its declaration (C++ `Foo::bar` definitions, Go
    /// methods in another file). Merged into the owner; not an extension.
    Members,
}

impl TypeKind {
    pub fn name(self) -> &'static str {
        match self {
            TypeKind::Class => "class",
            TypeKind::Struct => "struct",
            TypeKind::Enum => "enum",
            TypeKind::Union => "union",
            TypeKind::Protocol => "protocol",
            TypeKind::Extension => "extension",
            TypeKind::Members => "members",
        }
    }

    /// Whether this declaration introduces the type (rather than adding to one).
    pub fn is_primary(self) -> bool {
        !matches!(self, TypeKind::Extension | TypeKind::Members)
    }
}

/// A class, struct, enum, protocol or an extension of one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeDecl {
    pub name: String,
    pub kind: TypeKind,
    /// Superclass as written, when the language says which parent is the class.
    pub superclass: Option<String>,
    /// Adopted protocols, implemented interfaces, implemented traits, inherited protocols.
    pub conformances: Vec<String>,
    /// Objective-C category name, or the trait of a Rust `impl Trait for Type`.
    pub category: Option<String>,
    pub line: usize,
    pub end_line: usize,
    pub methods: Vec<Method>,
    pub properties: Vec<Property>,
    /// What the file says about parents beyond their simple names: the alias or qualified
    /// name written, and the module they come from. `superclass` and `conformances` hold
    /// the de-aliased simple names ([`crate::extract`] resolves them when the file is read).
    /// A Rust `impl` of an imported type also has one for its own name (the type extended).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<ParentOrigin>,
}

/// Where a parent named in a type declaration comes from, when the file tells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParentOrigin {
    /// The parent's simple name, as in `superclass` / `conformances` (`Blueprint`).
    pub name: String,
    /// The parent as written, when that differs (`SansioBlueprint`, `ns.Base`,
    /// `com.acme.Base`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
    /// The module it comes from as `/`-separated path segments, relative imports already
    /// joined to the file's directory (`src/flask/sansio/blueprints`, `com/acme`, `UIKit`);
    /// it picks among same-named project types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
}

/// A method or function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Method {
    /// Name, or the full selector for Objective-C (`scaledBy:`).
    pub name: String,
    pub is_static: bool,
    /// Declaration text up to the body, on one line.
    pub signature: String,
    pub line: usize,
    pub end_line: usize,
    /// True for a declaration without a body (protocol requirement, header prototype).
    pub is_declaration: bool,
    /// True for an optional protocol requirement (`@optional`, `optional func`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_optional: bool,
    /// Number of branch points plus one (cyclomatic complexity, approximated from the tree).
    pub complexity: u32,
}

/// A property or field of a type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Property {
    pub name: String,
    pub type_name: Option<String>,
    pub is_static: bool,
    pub line: usize,
    /// Attributes as written (`nonatomic, copy`), when the language has them.
    pub attributes: Vec<String>,
}

/// One import, include or use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Import {
    pub module: String,
    pub line: usize,
    /// The names the import binds in the file, when the language's import says them
    /// (`from m import A as B`, `import { A as B }`, `use a::A as B`, `import a.A`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<ImportedName>,
}

/// One name an import binds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedName {
    /// The name the file uses (`SansioBlueprint`, `ns`).
    pub local: String,
    /// The name in the module it comes from (`Blueprint`); `None` when the binding is the
    /// module itself or its default export (`import * as ns`, `import Base from`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The module as written, without the name (`.sansio.blueprints`, `./base`,
    /// `crate::a::b`, `com.acme`).
    pub from: String,
}

impl ImportedName {
    /// `local` bound to `name` of the module `from` (`None`: the module itself).
    pub fn new(local: &str, name: Option<&str>, from: &str) -> ImportedName {
        ImportedName {
            local: local.to_string(),
            name: name.map(str::to_string),
            from: from.to_string(),
        }
    }
}

/// One call site.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallSite {
    /// Method or function called (ObjC: selector).
    pub callee: String,
    /// Receiver expression as written (`self`, `c`, `Base`), if any.
    pub receiver: Option<String>,
    /// Receiver type when the file alone tells it (self/this, a typed local, a type name).
    pub receiver_type: Option<String>,
    /// How `receiver_type` was learnt.
    pub receiver_kind: ReceiverKind,
    /// Calling type (when inside a method).
    pub caller_type: Option<String>,
    /// Calling method or function; `None` at top level.
    pub caller: Option<String>,
    pub line: usize,
}

/// How the receiver type of a call was determined in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceiverKind {
    /// No receiver: `foo()`.
    None,
    /// `self.foo()` / `this.foo()` / `[self foo]`.
    SelfRef,
    /// `super.foo()`.
    Super,
    /// A local or parameter whose type is written or constructed in the function.
    Typed,
    /// A type name: `Base.make()`, `Circle::new()`.
    TypeName,
    /// Some other expression whose type the file does not tell.
    Unknown,
}

impl FileSummary {
    /// All methods of the file, with their owner (`None` for free functions).
    pub fn all_methods(&self) -> impl Iterator<Item = (Option<&TypeDecl>, &Method)> {
        let free = self.functions.iter().map(|m| (None, m));
        let owned = self
            .types
            .iter()
            .flat_map(|t| t.methods.iter().map(move |m| (Some(t), m)));
        owned.chain(free)
    }
}
