//! The languages the indexer understands and how files map to them.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// A source language with a tree-sitter grammar in this crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    Swift,
    ObjC,
    Rust,
    Python,
    TypeScript,
    Tsx,
    JavaScript,
    Go,
    Java,
    Kotlin,
    C,
    Cpp,
}

impl Lang {
    /// Every supported language, in a stable order.
    pub const ALL: [Lang; 12] = [
        Lang::Swift,
        Lang::ObjC,
        Lang::Rust,
        Lang::Python,
        Lang::TypeScript,
        Lang::Tsx,
        Lang::JavaScript,
        Lang::Go,
        Lang::Java,
        Lang::Kotlin,
        Lang::C,
        Lang::Cpp,
    ];

    /// Language of a file by its extension (case-insensitive), `None` when not source code.
    ///
    /// `.h` is read as Objective-C: the ObjC grammar is a superset of C, so plain C headers
    /// parse too, and Apple projects (the main audience) put `@interface`s in `.h` files.
    pub fn from_extension(ext: &str) -> Option<Lang> {
        let lang = match ext.to_ascii_lowercase().as_str() {
            "swift" => Lang::Swift,
            "m" | "mm" | "h" => Lang::ObjC,
            "rs" => Lang::Rust,
            "py" | "pyi" => Lang::Python,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "js" | "jsx" | "mjs" | "cjs" => Lang::JavaScript,
            "go" => Lang::Go,
            "java" => Lang::Java,
            "kt" | "kts" => Lang::Kotlin,
            "c" => Lang::C,
            "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => Lang::Cpp,
            _ => return None,
        };
        Some(lang)
    }

    /// Language of a path by its extension.
    pub fn from_path(path: &std::path::Path) -> Option<Lang> {
        path.extension()
            .and_then(|e| e.to_str())
            .and_then(Lang::from_extension)
    }

    /// Language of a file from its path and content: a `.h` header is Objective-C when it
    /// uses ObjC syntax, C++ when it uses C++ syntax, else C.
    pub fn detect(path: &std::path::Path, content: &str) -> Option<Lang> {
        let lang = Lang::from_path(path)?;
        let is_header = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("h"));
        if !is_header {
            return Some(lang);
        }
        let objc = [
            "@interface",
            "@protocol",
            "@implementation",
            "#import",
            "@class",
        ];
        let cpp = [
            "class ",
            "namespace ",
            "template<",
            "template <",
            "public:",
            "std::",
        ];
        if objc.iter().any(|m| content.contains(m)) {
            Some(Lang::ObjC)
        } else if cpp.iter().any(|m| content.contains(m)) {
            Some(Lang::Cpp)
        } else {
            Some(Lang::C)
        }
    }

    /// Short lower-case name used in JSON and renderings.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Swift => "swift",
            Lang::ObjC => "objc",
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::TypeScript => "typescript",
            Lang::Tsx => "tsx",
            Lang::JavaScript => "javascript",
            Lang::Go => "go",
            Lang::Java => "java",
            Lang::Kotlin => "kotlin",
            Lang::C => "c",
            Lang::Cpp => "cpp",
        }
    }

    /// Parses a name produced by [`Lang::name`].
    pub fn from_name(name: &str) -> Option<Lang> {
        Lang::ALL.into_iter().find(|l| l.name() == name)
    }

    /// The tree-sitter grammar of this language.
    pub fn grammar(self) -> tree_sitter::Language {
        match self {
            Lang::Swift => tree_sitter_swift::LANGUAGE.into(),
            Lang::ObjC => tree_sitter_objc::LANGUAGE.into(),
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::Java => tree_sitter_java::LANGUAGE.into(),
            Lang::Kotlin => tree_sitter_kotlin_ng::LANGUAGE.into(),
            Lang::C => tree_sitter_c::LANGUAGE.into(),
            Lang::Cpp => tree_sitter_cpp::LANGUAGE.into(),
        }
    }

    /// The grammar's node kind names by kind id, as [`tree_sitter::Node::kind`] gives
    /// them: that call measures and validates a C string each time, and a full index asks
    /// for the kinds of millions of nodes.
    pub(crate) fn kind_names(self) -> &'static [&'static str] {
        static GRAMMARS: OnceLock<Vec<tree_sitter::Language>> = OnceLock::new();
        static NAMES: OnceLock<Vec<Vec<&'static str>>> = OnceLock::new();
        let names = NAMES.get_or_init(|| {
            let grammars = GRAMMARS.get_or_init(|| Lang::ALL.map(Lang::grammar).to_vec());
            grammars
                .iter()
                .map(|g| {
                    (0..g.node_kind_count())
                        .map(|id| {
                            let id = u16::try_from(id).ok();
                            id.and_then(|id| g.node_kind_for_id(id)).unwrap_or("")
                        })
                        .collect()
                })
                .collect()
        });
        let at = Lang::ALL.iter().position(|l| *l == self).unwrap_or(0);
        names.get(at).map_or(&[], Vec::as_slice)
    }

    /// Names a method uses to refer to its own instance (`self`, `this`).
    pub(crate) fn self_names(self) -> &'static [&'static str] {
        match self {
            Lang::Swift | Lang::ObjC | Lang::Rust | Lang::Python => &["self"],
            Lang::Go => &[],
            _ => &["this"],
        }
    }
}
