//! Whole-file checks: each rule reads the view of the file its [`Scope`] names.

use serde::{Deserialize, Serialize};

use super::{GuardRules, Violation};

/// The text of a file a rule matches: a rule about code never counts a match inside a
/// comment or a string literal; a rule about literal values (a hard-coded secret) or about
/// comments (TODO notes) says so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Code only: comments and literals blanked.
    #[default]
    Code,
    /// Code and literal values: only comments blanked.
    Literals,
    /// The text as written, comments included.
    Raw,
}

/// One file's text in the three views of [`Scope`], line for line the same file.
#[derive(Debug, Clone, Copy)]
pub struct FileViews<'a> {
    pub raw: &'a str,
    pub no_comments: &'a str,
    pub code: &'a str,
}

impl GuardRules {
    /// Checks a whole file written in `language` whose comments and literals were found in
    /// its syntax tree: each rule matches the view its [`Scope`] names, and a violation
    /// quotes the line as written.
    pub fn check_views(&self, file: FileViews<'_>, language: &str) -> Vec<Violation> {
        let rules = self.for_language(Some(language));
        let raw: Vec<&str> = file.raw.lines().collect();
        let no_comments: Vec<&str> = file.no_comments.lines().collect();
        let code: Vec<&str> = file.code.lines().collect();
        let mut out = Vec::new();
        for (i, line) in raw.iter().enumerate() {
            for rule in &rules {
                let hit = match rule.spec.scope {
                    Scope::Code => code.get(i).is_some_and(|l| rule.matcher.is_match(l)),
                    Scope::Literals => match (no_comments.get(i), code.get(i)) {
                        (Some(text), Some(code)) => starts_in_code(rule, text, code),
                        _ => false,
                    },
                    Scope::Raw => rule.matcher.is_match(line),
                };
                if hit {
                    out.push(Violation {
                        rule_id: rule.spec.id.clone(),
                        message: rule.spec.description.clone(),
                        severity: rule.spec.severity,
                        line: (i + 1) as u32,
                        snippet: line.trim().chars().take(160).collect(),
                        fix_suggestion: rule.spec.fix.clone(),
                    });
                }
            }
        }
        out
    }
}

/// Whether `rule` matches `text` (a line with comments blanked) at a place that is code in
/// `code` (the same line with literals blanked too): `password = "…"` written as code, not
/// the same text inside a string (a test's sample, a message).
fn starts_in_code(rule: &super::Rule, text: &str, code: &str) -> bool {
    rule.matcher.find_iter(text).any(|m| {
        let at = m.start();
        match (text.as_bytes().get(at), code.as_bytes().get(at)) {
            (Some(t), Some(c)) => t == c && !t.is_ascii_whitespace(),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Views as the syntax-tree mask gives them for `raw`: comments and strings blanked
    /// by hand here (alembic-knowledge does not parse code).
    fn lines(rules: &GuardRules, raw: &str, no_comments: &str, code: &str) -> Vec<(String, u32)> {
        let views = FileViews {
            raw,
            no_comments,
            code,
        };
        rules
            .check_views(views, "rust")
            .into_iter()
            .map(|v| (v.rule_id, v.line))
            .collect()
    }

    #[test]
    fn each_rule_reads_the_view_its_scope_names() {
        let project = "[[rule]]\nid = \"note\"\ndescription = \"a FIXME note\"\nlanguages = [\"rust\"]\npattern = \"FIXME\"\nscope = \"raw\"\nseverity = \"info\"\n";
        let rules = GuardRules::load(Some(project)).unwrap();
        let raw = "// FIXME x.unwrap()\nlet s = \"password = 'abcdefghij' .unwrap()\";\nlet password = \"abcdefghij\";\nx.unwrap();\n";
        let no_comments = "                  \nlet s = \"password = 'abcdefghij' .unwrap()\";\nlet password = \"abcdefghij\";\nx.unwrap();\n";
        let code = "                  \nlet s =                                   ;\nlet password =             ;\nx.unwrap();\n";
        let found = lines(&rules, raw, no_comments, code);
        let of = |id: &str| {
            found
                .iter()
                .filter(|(r, _)| r == id)
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            of("rust-unwrap"),
            [4],
            "code only: not in the comment or the string"
        );
        assert_eq!(
            of("hardcoded-secret"),
            [3],
            "a literal value written as code only"
        );
        assert_eq!(of("note"), [1], "a rule about comments reads the raw text");
    }

    #[test]
    fn scope_is_checked_when_a_rules_file_is_read() {
        let bad = "[[rule]]\nid = \"x\"\ndescription = \"d\"\nlanguages = [\"*\"]\npattern = \"p\"\nscope = \"comments\"\nseverity = \"info\"\n";
        let err = GuardRules::check_file(bad, "rules.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("comments") && err.contains("scope (code, literals or raw)"),
            "{err}"
        );
    }
}
