//! What a shell script is made of, from its tree-sitter-bash parse tree.
//!
//! Two views come out of one walk. For the allow decision: the list of
//! *obstacles*, every construct that makes the script more than plain word
//! lists joined by `&&`, `||`, `;` and `|` (each obstacle alone means "not
//! provably safe"). For the deny decision: every command anywhere in the
//! tree, nested ones included, with a best-effort literal reading of its
//! words (quotes removed, escapes decoded) so `r''m` and `\rm` read as `rm`.

use alembic_base::lock;
use std::sync::Mutex;

use tree_sitter::{Node, Parser, Tree};

/// One word of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The word's value when it is fully literal (no expansion or substitution).
    pub(crate) literal: Option<String>,
    /// Unquoted, unescaped plain word (what a command name must be to be trusted).
    pub(crate) plain: bool,
    /// Contains unquoted glob characters (`*`, `?`, `[`).
    pub(crate) glob: bool,
    /// Starts with an unquoted `~` (tilde expansion).
    pub(crate) tilde: bool,
}

/// A redirect attached to a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    /// Operator text (`>`, `>>`, `2>`, `>&`, `<`...).
    pub(crate) operator: String,
    /// Literal destination, when literal.
    pub(crate) target: Option<String>,
}

/// One simple command anywhere in the script.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Command {
    /// Name then arguments.
    pub(crate) words: Vec<Word>,
    /// Redirects written on this command.
    pub(crate) redirects: Vec<Redirect>,
    /// Commands found inside this command's words (substitutions), by index.
    pub(crate) substituted_programs: Vec<String>,
}

impl Command {
    /// Literal argv, `None` entries for non-literal words.
    pub(crate) fn argv(&self) -> Vec<Option<&str>> {
        self.words.iter().map(|w| w.literal.as_deref()).collect()
    }

    /// Literal name, if any.
    pub(crate) fn name(&self) -> Option<&str> {
        self.words.first().and_then(|w| w.literal.as_deref())
    }
}

/// Result of analysing one script.
#[derive(Debug, Default)]
pub(crate) struct Analysis {
    /// Every command in the tree, depth-first.
    pub(crate) commands: Vec<Command>,
    /// Pipelines as lists of indices into `commands`.
    pub(crate) pipelines: Vec<Vec<usize>>,
    /// Functions defined: name and the names of the commands in their bodies.
    pub(crate) functions: Vec<(String, Vec<String>)>,
    /// Why the script is not a plain word list (empty when it is).
    pub(crate) obstacles: Vec<String>,
}

/// The parser is not `Sync`; one shared instance behind a lock is enough for a policy check.
static PARSER: Mutex<Option<Parser>> = Mutex::new(None);

/// Parses `script`; `None` if the grammar could not be loaded (treated as unparseable).
fn parse(script: &str) -> Option<Tree> {
    let mut guard = lock(&PARSER);
    if guard.is_none() {
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .ok()?;
        *guard = Some(parser);
    }
    guard.as_mut()?.parse(script, None)
}

/// Analyses a script.
pub(crate) fn analyse(script: &str) -> Analysis {
    let mut analysis = Analysis::default();
    let Some(tree) = parse(script) else {
        analysis
            .obstacles
            .push("the shell parser is unavailable".into());
        return analysis;
    };
    let root = tree.root_node();
    if root.has_error() {
        analysis
            .obstacles
            .push("text the bash parser cannot read".into());
    }
    let mut walker = Walker {
        src: script,
        out: &mut analysis,
    };
    walker.visit(root);
    analysis
}

struct Walker<'a> {
    src: &'a str,
    out: &'a mut Analysis,
}

impl Walker<'_> {
    fn text(&self, node: Node<'_>) -> &str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    fn obstacle(&mut self, what: impl Into<String>) {
        let what = what.into();
        if !self.out.obstacles.contains(&what) {
            self.out.obstacles.push(what);
        }
    }

    fn visit_children(&mut self, node: Node<'_>) {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            self.visit(child);
        }
    }

    fn visit(&mut self, node: Node<'_>) {
        match node.kind() {
            "program" | "list" => self.visit_sequence(node),
            "pipeline" => self.visit_pipeline(node),
            "command" => {
                self.visit_command(node, Vec::new());
            }
            "redirected_statement" => self.visit_redirected(node),
            "comment" => {}
            "ERROR" => {
                self.obstacle("text the bash parser cannot read");
                self.visit_children(node);
            }
            "function_definition" => self.visit_function(node),
            kind => {
                if node.is_named() {
                    self.obstacle(describe(kind));
                } else if !matches!(kind, "&&" | "||" | ";" | "|") {
                    self.obstacle(format!("the operator {:?}", self.text(node)));
                }
                self.visit_children(node);
            }
        }
    }

    fn visit_sequence(&mut self, node: Node<'_>) {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            if child.is_named() {
                self.visit(child);
            } else if !matches!(child.kind(), "&&" | "||" | ";" | "\n") {
                let op = self.text(child).to_owned();
                self.obstacle(if op == "&" {
                    "a background job (&)".to_owned()
                } else {
                    format!("the operator {op:?}")
                });
            }
        }
    }

    fn visit_pipeline(&mut self, node: Node<'_>) {
        let mut stages = Vec::new();
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                "command" => stages.push(self.visit_command(child, Vec::new())),
                "|" => {}
                "|&" => self.obstacle("the operator \"|&\""),
                _ => {
                    let before = self.out.commands.len();
                    self.visit(child);
                    stages.extend(before..self.out.commands.len());
                }
            }
        }
        self.out.pipelines.push(stages);
    }

    fn visit_redirected(&mut self, node: Node<'_>) {
        let mut redirects = Vec::new();
        let mut body = None;
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                "file_redirect" => redirects.push(self.redirect(child)),
                "heredoc_redirect" | "herestring_redirect" => {
                    self.obstacle(describe(child.kind()));
                    self.visit_children(child);
                }
                _ if body.is_none() => body = Some(child),
                _ => self.visit(child),
            }
        }
        match body {
            Some(body) if body.kind() == "command" => {
                self.visit_command(body, redirects);
            }
            Some(body) => {
                self.obstacle("a redirect on a compound command");
                let start = self.out.commands.len();
                self.visit(body);
                if let Some(first) = self.out.commands.get_mut(start) {
                    first.redirects.extend(redirects);
                }
            }
            None => {}
        }
    }

    fn visit_function(&mut self, node: Node<'_>) {
        self.obstacle(describe("function_definition"));
        let name = node
            .child_by_field_name("name")
            .map(|n| self.text(n).to_owned())
            .unwrap_or_default();
        let start = self.out.commands.len();
        self.visit_children(node);
        let called = self.out.commands[start..]
            .iter()
            .filter_map(|c| c.name().map(str::to_owned))
            .collect();
        self.out.functions.push((name, called));
    }

    /// Records a command and returns its index.
    fn visit_command(&mut self, node: Node<'_>, redirects: Vec<Redirect>) -> usize {
        let mut command = Command {
            redirects,
            ..Command::default()
        };
        let index = self.out.commands.len();
        self.out.commands.push(Command::default());
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                "variable_assignment" => {
                    self.obstacle("a variable assignment");
                    self.visit_children(child);
                }
                "file_redirect" => command.redirects.push(self.redirect(child)),
                "heredoc_redirect" | "herestring_redirect" => {
                    self.obstacle(describe(child.kind()));
                    self.visit_children(child);
                }
                "command_name" => {
                    let inner = child.named_child(0).unwrap_or(child);
                    command
                        .words
                        .push(self.word(inner, &mut command.substituted_programs));
                }
                _ if child.is_named() => {
                    command
                        .words
                        .push(self.word(child, &mut command.substituted_programs));
                }
                _ => {}
            }
        }
        self.out.commands[index] = command;
        index
    }

    fn redirect(&mut self, node: Node<'_>) -> Redirect {
        let mut operator = String::new();
        let mut target = None;
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            if child.kind() == "file_descriptor" || !child.is_named() {
                operator.push_str(self.text(child));
            } else if target.is_none() {
                let mut ignored = Vec::new();
                target = Some(self.word(child, &mut ignored).literal);
            }
        }
        let target = target.flatten();
        if target.as_deref() != Some("/dev/null") {
            let shown = target.clone().unwrap_or_else(|| self.text(node).to_owned());
            self.obstacle(format!(
                "a redirect to {shown:?} (only /dev/null is allowed)"
            ));
        }
        Redirect { operator, target }
    }

    /// Reads one word; records obstacles and nested commands for non-literal parts.
    fn word(&mut self, node: Node<'_>, substituted: &mut Vec<String>) -> Word {
        let text = self.text(node).to_owned();
        match node.kind() {
            "word" | "number" => Word {
                plain: !text.contains('\\'),
                glob: has_unescaped_glob(&text),
                tilde: text.starts_with('~'),
                literal: Some(unescape_word(&text)),
            },
            "raw_string" => quoted(text.get(1..text.len().saturating_sub(1)).map(str::to_owned)),
            "ansi_c_string" => quoted(text.get(2..text.len().saturating_sub(1)).map(decode_ansi_c)),
            "string" => {
                let literal = self.double_quoted(node);
                quoted(literal)
            }
            "concatenation" => self.concatenation(node, substituted),
            kind => {
                if kind == "process_substitution" {
                    let start = self.out.commands.len();
                    self.obstacle(describe(kind));
                    self.visit_children(node);
                    substituted.extend(
                        self.out.commands[start..]
                            .iter()
                            .filter_map(|c| c.name().map(str::to_owned)),
                    );
                } else {
                    self.obstacle(describe(kind));
                    self.visit_children(node);
                }
                Word {
                    literal: None,
                    plain: false,
                    glob: false,
                    tilde: false,
                }
            }
        }
    }

    fn double_quoted(&mut self, node: Node<'_>) -> Option<String> {
        let mut value = String::new();
        let mut literal = true;
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                "string_content" => value.push_str(&unescape_double_quoted(self.text(child))),
                "\"" => {}
                kind => {
                    literal = false;
                    self.obstacle(describe(kind));
                    self.visit_children(child);
                }
            }
        }
        literal.then_some(value)
    }

    fn concatenation(&mut self, node: Node<'_>, substituted: &mut Vec<String>) -> Word {
        let mut value = Some(String::new());
        let mut glob = false;
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        let tilde = self.text(node).starts_with('~');
        for child in children {
            let part = self.word(child, substituted);
            glob |= part.glob;
            value = match (value, part.literal) {
                (Some(mut v), Some(p)) => {
                    v.push_str(&p);
                    Some(v)
                }
                _ => None,
            };
        }
        Word {
            literal: value,
            plain: false,
            glob,
            tilde,
        }
    }
}

fn quoted(literal: Option<String>) -> Word {
    Word {
        literal,
        plain: false,
        glob: false,
        tilde: false,
    }
}

/// Human wording for a construct that blocks the allow decision.
fn describe(kind: &str) -> String {
    match kind {
        "command_substitution" => "a command substitution".into(),
        "process_substitution" => "a process substitution".into(),
        "simple_expansion" | "expansion" => "a variable expansion".into(),
        "arithmetic_expansion" => "an arithmetic expansion".into(),
        "brace_expression" => "a brace expansion".into(),
        "subshell" => "a subshell".into(),
        "compound_statement" => "a command group { … }".into(),
        "function_definition" => "a function definition".into(),
        "heredoc_redirect" => "a heredoc".into(),
        "herestring_redirect" => "a here-string".into(),
        "variable_assignment" | "variable_assignments" => "a variable assignment".into(),
        "negated_command" => "a negated command (!)".into(),
        "translated_string" => "a translated string $\"…\"".into(),
        other => format!("shell syntax {other:?}"),
    }
}

fn has_unescaped_glob(text: &str) -> bool {
    let mut escaped = false;
    for c in text.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if matches!(c, '*' | '?' | '[') {
            return true;
        }
    }
    false
}

fn unescape_word(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next()
                && next != '\n'
            {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn unescape_double_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(&next)) if matches!(next, '"' | '\\' | '$' | '`') => {
                out.push(next);
                chars.next();
            }
            ('\\', Some('\n')) => {
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// Decodes the body of `$'…'` (common escapes; enough to see what it spells).
fn decode_ansi_c(body: &str) -> String {
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('x') => {
                let hex: String = std::iter::from_fn(|| chars.next_if(char::is_ascii_hexdigit))
                    .take(2)
                    .collect();
                if let Some(ch) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    out.push(ch);
                }
            }
            Some(d @ '0'..='7') => {
                let mut oct = d.to_string();
                oct.extend(
                    std::iter::from_fn(|| chars.next_if(|c| matches!(c, '0'..='7'))).take(2),
                );
                if let Some(ch) = u32::from_str_radix(&oct, 8).ok().and_then(char::from_u32) {
                    out.push(ch);
                }
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn names(script: &str) -> Vec<Option<String>> {
        analyse(script)
            .commands
            .iter()
            .map(|c| c.name().map(str::to_owned))
            .collect()
    }

    #[test]
    fn plain_lists_have_no_obstacles() {
        for script in [
            "ls -la && pwd",
            "ls; pwd || echo x",
            "ls 2>/dev/null | wc -l",
            "ls\npwd",
        ] {
            assert_eq!(analyse(script).obstacles, Vec::<String>::new(), "{script}");
        }
    }

    #[test]
    fn obfuscated_names_read_as_what_they_run() {
        assert_eq!(names("r''m -rf ~"), vec![Some("rm".into())]);
        assert_eq!(names("\\rm -rf ~"), vec![Some("rm".into())]);
        assert_eq!(names("\"rm\" -rf ~"), vec![Some("rm".into())]);
        assert_eq!(names("$'\\x72\\x6d' -rf ~"), vec![Some("rm".into())]);
        assert_eq!(
            names("echo $(rm -rf ~)"),
            vec![Some("echo".into()), Some("rm".into())]
        );
    }

    #[test]
    fn unsafe_constructs_are_obstacles() {
        for script in [
            "echo $(id)",
            "echo `id`",
            "cat <(curl x)",
            "ls > f",
            "ls & pwd",
            "{rm,-rf,~}",
            "a=rm; $a",
            "PATH=/x ls",
            "(ls)",
            "cat <<EOF\nx\nEOF",
            ":(){ :|:& };:",
            "echo \"$HOME\"",
        ] {
            assert!(!analyse(script).obstacles.is_empty(), "{script}");
        }
    }
}
