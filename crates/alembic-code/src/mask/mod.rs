//! Which bytes of a source file are code: comments, doc comments, docstrings and string
//! literals (template, raw and multi-line strings, regex literals) are found in the syntax
//! tree and blanked with spaces. Newlines and byte offsets are kept, so a line number or a
//! byte offset in the masked text is the same place in the original.
//!
//! Pattern tables, messages and commented-out examples name things the code does not use;
//! a line matcher that reads [`code_only`] sees only what the code does. Interpolated parts
//! of strings (`${x}`, `{x}` in f-strings, `\(x)`) are code and stay.

use tree_sitter::Node;

use crate::extract::parse;
use crate::language::Lang;

#[cfg(test)]
mod tests;

/// What a blanked range held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonCode {
    /// Line, block and doc comments, and Python docstrings.
    Comment,
    /// String, character, template and regex literals.
    Literal,
}

/// Kinds of comment nodes across the grammars.
const COMMENTS: &[&str] = &[
    "comment",
    "line_comment",
    "block_comment",
    "multiline_comment",
    "html_comment",
];

/// Parts of a literal that are code again.
const ISLANDS: &[&str] = &[
    "template_substitution",
    "interpolation",
    "interpolated_expression",
    "raw_str_interpolation",
    "string_interpolation",
];

/// Literal node kinds of `lang`'s grammar.
fn literals(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Rust => &["string_literal", "raw_string_literal", "char_literal"],
        Lang::Python => &["string"],
        Lang::TypeScript => &["string", "template_string", "regex"],
        Lang::Tsx | Lang::JavaScript => &["string", "template_string", "regex", "jsx_text"],
        Lang::Go => &[
            "interpreted_string_literal",
            "raw_string_literal",
            "rune_literal",
        ],
        Lang::Java => &["string_literal", "character_literal"],
        Lang::Kotlin => &[
            "string_literal",
            "multiline_string_literal",
            "character_literal",
        ],
        Lang::Swift => &[
            "line_string_literal",
            "multi_line_string_literal",
            "raw_string_literal",
            "regex_literal",
        ],
        Lang::C | Lang::ObjC => &["string_literal", "char_literal"],
        Lang::Cpp => &["string_literal", "raw_string_literal", "char_literal"],
    }
}

/// One edit of the masking pass, applied in order: an island restored inside a blanked
/// literal may itself hold a literal that is blanked again.
enum Op {
    Blank(usize, usize, NonCode),
    Restore(usize, usize),
}

/// `text` with every comment and literal blanked (see the module doc). `lang` `None` (a
/// language without a grammar here) or a file the parser gives up on get [`lexical`].
pub fn code_only(lang: Option<Lang>, text: &str) -> String {
    mask(lang, text, &[NonCode::Comment, NonCode::Literal])
}

/// `text` with only comments (and docstrings) blanked: for rules about literal values, such
/// as a hard-coded secret.
pub fn without_comments(lang: Option<Lang>, text: &str) -> String {
    mask(lang, text, &[NonCode::Comment])
}

/// [`code_only`] for a file named `path` (the language from its extension and content).
pub fn code_only_at(path: &str, text: &str) -> String {
    code_only(Lang::detect(std::path::Path::new(path), text), text)
}

/// `text` with the ranges of the `blank` kinds blanked.
pub fn mask(lang: Option<Lang>, text: &str, blank: &[NonCode]) -> String {
    let ops = match lang.map(|l| tree_ops(l, text)) {
        Some(Some(ops)) => ops,
        _ => lexical(text),
    };
    apply(text, &ops, blank)
}

/// The masking edits from `lang`'s syntax tree; `None` when the file does not parse.
fn tree_ops(lang: Lang, text: &str) -> Option<Vec<Op>> {
    let tree = parse("", lang, text).ok()?;
    let literal_kinds = literals(lang);
    let mut ops = Vec::new();
    // Pre-order walk with an explicit stack (generated files nest deeply): (node, whether
    // it lies inside a blanked range).
    let mut stack: Vec<(Node, bool)> = vec![(tree.root_node(), false)];
    while let Some((node, inside)) = stack.pop() {
        // Anonymous tokens share names with nodes (TypeScript's `string` type keyword).
        let kind = if node.is_named() { node.kind() } else { "" };
        let mut inside_now = inside;
        if ISLANDS.contains(&kind) && inside {
            ops.push(Op::Restore(node.start_byte(), node.end_byte()));
            inside_now = false;
        } else if !inside {
            let what = if COMMENTS.contains(&kind) || is_docstring(lang, node) {
                Some(NonCode::Comment)
            } else if literal_kinds.contains(&kind) {
                Some(NonCode::Literal)
            } else {
                None
            };
            if let Some(what) = what {
                ops.push(Op::Blank(node.start_byte(), node.end_byte(), what));
                inside_now = true;
            }
        }
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev().map(|c| (c, inside_now)));
    }
    Some(ops)
}

/// A Python string standing alone as a statement: a docstring (or a string used as a
/// comment), documentation rather than a value.
fn is_docstring(lang: Lang, node: Node) -> bool {
    lang == Lang::Python
        && node.kind() == "string"
        && node
            .parent()
            .is_some_and(|p| p.kind() == "expression_statement" && p.named_child_count() == 1)
}

/// The conservative fallback for text without a grammar: C-style `//` and `/* */` comments
/// and double-quoted strings (ending at an unescaped quote or the line's end). Anything
/// else stays, so an unknown syntax keeps its code.
fn lexical(text: &str) -> Vec<Op> {
    let b = text.as_bytes();
    let mut ops = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let next = b.get(i + 1).copied();
        let (end, what) = match (b[i], next) {
            (b'/', Some(b'/')) => (find_from(b, i, b"\n").unwrap_or(b.len()), NonCode::Comment),
            (b'/', Some(b'*')) => (
                find_from(b, i + 2, b"*/").map_or(b.len(), |e| e + 2),
                NonCode::Comment,
            ),
            (b'"', _) => (string_end(b, i + 1), NonCode::Literal),
            _ => {
                i += 1;
                continue;
            }
        };
        ops.push(Op::Blank(i, end, what));
        i = end.max(i + 1);
    }
    ops
}

fn find_from(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// End (exclusive) of a double-quoted string whose body starts at `i`.
fn string_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            b'\n' => return i,
            _ => i += 1,
        }
    }
    b.len()
}

fn apply(text: &str, ops: &[Op], blank: &[NonCode]) -> String {
    let src = text.as_bytes();
    let mut out = src.to_vec();
    for op in ops {
        match *op {
            Op::Blank(s, e, what) if blank.contains(&what) => {
                let (s, e) = snap(text, s, e);
                for byte in &mut out[s..e] {
                    if *byte != b'\n' && *byte != b'\r' {
                        *byte = b' ';
                    }
                }
            }
            Op::Blank(..) => {}
            Op::Restore(s, e) => {
                let (s, e) = snap(text, s, e);
                out[s..e].copy_from_slice(&src[s..e]);
            }
        }
    }
    // Whole characters are blanked or restored (ranges are snapped), so this holds; the
    // original text is the safe answer if it ever did not.
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

/// `s..e` widened to character boundaries of `text` and clamped to its length.
fn snap(text: &str, s: usize, e: usize) -> (usize, usize) {
    let mut s = s.min(text.len());
    let mut e = e.min(text.len()).max(s);
    while !text.is_char_boundary(s) {
        s -= 1;
    }
    while !text.is_char_boundary(e) {
        e += 1;
    }
    (s, e)
}
